"""The forms in a text Slack would read as a notification: the tests' own reading, kept apart from
``kourier.slack.mrkdwn`` so that a test of the neutralizing does not ask the neutralizing.

Slack reads a message's ``text`` and Block Kit ``mrkdwn`` as mrkdwn: ``<`` and ``>`` are brackets,
its escapes ``&lt;`` and ``&gt;`` are text, and Markdown's links are text. A ``markdown`` block and
``markdown_text`` are Markdown, which reads Markdown's links and shows the escapes as the characters:
such a text is read twice, as written and with the escapes read once. In each reading a live form is:

- a bracketed broadcast or group mention: ``<!`` and anything but a date (``<!channel>``,
  ``<!here|x>``, ``<!subteam^S1>``);
- a bracketed person's mention (``<@U…>``), unless mentions are allowed and it names a user id;
- in Markdown, a link that opens one of those (``[x](!here)``, ``[x](<@U1>)``);
- a bare ``@channel``, ``@here`` or ``@everyone`` (Slack's clients read them as broadcasts).
"""

from __future__ import annotations

import re

_ESCAPES = re.compile(r"&(amp|lt|gt);")
_ESCAPED = {"amp": "&", "lt": "<", "gt": ">"}
_BRACKETED = re.compile(r"<([^<>]*)>")
_MARKDOWN_LINK = re.compile(r"\[[^\[\]\n]*\]\(\s*<?([^()\s<>]+)>?(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'))?\s*\)")
_BARE_BROADCAST = re.compile(r"(?<![\w@])@(?:channel|here|everyone)\b", re.IGNORECASE)
_USER_ID = re.compile(r"@[UW][A-Z0-9]+(?:\|.*)?", re.DOTALL)


def live_specials(text: str, *, allow_user_mentions: bool = False, markdown: bool = True) -> list[str]:
    """Every live form in ``text`` (the module's docstring), shown as Markdown or, with ``markdown``
    False, as mrkdwn; empty when none."""
    found: list[str] = []
    readings = (text, _ESCAPES.sub(lambda m: _ESCAPED[m.group(1)], text)) if markdown else (text,)
    for reading in readings:
        targets = [m.group(1) for m in _BRACKETED.finditer(reading)]
        if markdown:
            targets += [m.group(1) for m in _MARKDOWN_LINK.finditer(reading)]
        found += [t for t in targets if _notifies(t, allow_user_mentions)]
        found += _BARE_BROADCAST.findall(reading)
    return found


def _notifies(target: str, allow_user_mentions: bool) -> bool:
    if target.startswith("!"):
        return not target.startswith("!date^")
    if target.startswith("@"):
        return not (allow_user_mentions and _USER_ID.fullmatch(target))
    return False
