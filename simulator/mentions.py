"""A typed ``@Name`` becomes the mention Slack's client sends, as picking the name from its list does. Pure.

In Slack's client a person types ``@Agent Kourier`` and picks the bot from the list that opens: the
message then carries ``<@U…>``, never the typed name. The simulator has no list, so a typed name
that matches someone in the directory, whole and case-insensitively, is taken as picked: a person
or bot by real or display name becomes ``<@U…>``, a user group by handle ``<!subteam^S…>``. Longer
names win (``@Agent Kourier`` before a person named ``Agent``); anything else stays text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping


def typed_mentions_to_ids(text: str, people: Mapping[str, str], groups: Mapping[str, str]) -> str:
    """``text`` with each ``@name`` of ``people`` (name → user id) or ``groups`` (handle → group id)
    replaced by its mention."""
    targets: dict[str, str] = {}
    for name, group_id in groups.items():
        targets[name.lower()] = f"<!subteam^{group_id}>"
    for name, user_id in people.items():
        targets[name.lower()] = f"<@{user_id}>"
    if not targets:
        return text
    names = sorted(targets, key=len, reverse=True)
    # A name starts and ends where a word does: "@ada, look" mentions Ada; "@adamant" and "mail@ada" do not.
    pattern = re.compile(
        r"(?<![\w@.])@(" + "|".join(re.escape(name) for name in names) + r")(?![\w-])", flags=re.IGNORECASE
    )
    return pattern.sub(lambda match: targets[match.group(1).lower()], text)
