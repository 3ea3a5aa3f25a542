"""Text that others wrote, made safe to show in Slack: no broadcast, no group mention, no disguised
link. Pure: no I/O.

An agent's answer, a tool's name or arguments, a question, an alert: none of them is Kourier's, and
any may be steered by what it read (an alert payload is untrusted by design). Slack reads a message's
``text`` and Block Kit ``mrkdwn`` as mrkdwn, where ``<!channel>``, ``<!here>``, ``<!everyone>`` and
``<!subteam^ID>`` notify a whole channel or group and ``<@U…>`` a person, and reads ``markdown``
blocks and ``markdown_text`` as Markdown, where ``[text](url)`` shows one address and opens another.

``neutralize`` keeps every word of the text and takes the power out of those forms:

- a broadcast or group mention (``<!channel>``, ``<!subteam^S1|@oncall>``) becomes ``@`` and its
  name with a WORD JOINER on each side of the ``@``, a bare ``@here`` gets one after it: it reads the
  same and notifies no one;
- a person's mention (``<@U…>``) likewise, unless the Binding allows it (``output.allowMentions:
  users``); a channel's link (``<#C…>``) and a date (``<!date^…>``) are kept: they notify no one;
- a link whose text names another address than the one it opens shows the address it opens.

The result never holds a form it neutralized, and neutralizing it again changes nothing, so a stream
that shows a growing text shows only neutralized text (kourier/slack/writer.py).

``escape`` is for a name put into Kourier's own mrkdwn (a sub-agent's name, a tool's name):
``&``, ``<`` and ``>`` shown as they are. ``code_span`` is for text put between backticks.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

WORD_JOINER = "\u2060"
BROADCASTS = ("channel", "here", "everyone")

# Slack's angle-bracket forms: <!…>, <@…>, <#…>, <url|text>. No line break or nested bracket inside.
_ANGLE = re.compile(r"<([^<>\n]*)>")
# A bare @here, @channel or @everyone (Slack's clients and link_names read these as broadcasts).
_BARE_BROADCAST = re.compile(r"(?<![\w@])@(?=(?:channel|here|everyone)\b)", re.IGNORECASE)
# Markdown's inline link: [text](address "title"), the address optionally in <>.
_MARKDOWN_LINK = re.compile(r"\[([^\[\]\n]*)\]\(\s*<?([^()\s<>]+)>?(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'))?\s*\)")
# Something in a link's text that names an address: a host with a dot, with or without a scheme.
_NAMED_HOST = re.compile(
    r"(?:[a-z][a-z0-9+.\-]*://)?(?:[^\s/@:]+@)?((?:[a-z0-9](?:[a-z0-9\-]*[a-z0-9])?\.)+[a-z][a-z0-9\-]*[a-z0-9])",
    re.IGNORECASE,
)


def neutralize(text: str, *, allow_user_mentions: bool = False) -> str:
    """``text`` with no broadcast, no group mention, no disguised link (the module's docstring)."""
    text = _ANGLE.sub(lambda match: _angle(match.group(1), allow_user_mentions), text)
    text = _BARE_BROADCAST.sub("@" + WORD_JOINER, text)
    return _MARKDOWN_LINK.sub(_markdown_link, text)


def _inert(name: str) -> str:
    # Joined on both sides: a "<" left before it (``<<!here>>``) never opens a form again.
    return WORD_JOINER + "@" + WORD_JOINER + name.lstrip("@")


def _angle(inner: str, allow_user_mentions: bool) -> str:
    target, _, label = inner.partition("|")
    if target.startswith("!"):
        command = target[1:]
        if command.startswith("date^"):
            return f"<{inner}>"
        if command.startswith("subteam^"):
            return _inert(label or "group")
        return _inert(label or command.split("^")[0] or "channel")
    if target.startswith("@"):
        if allow_user_mentions:
            return f"<{inner}>"
        return _inert(label or target[1:])
    if target.startswith("#"):
        return f"<{inner}>"
    if label and _disguises(label, target):
        return f"<{target}>"
    return f"<{inner}>"


def _markdown_link(match: re.Match[str]) -> str:
    label, address = match.group(1), match.group(2)
    return address if _disguises(label, address) else match.group(0)


def _host(address: str) -> str:
    if address.lower().startswith("mailto:"):
        return address.partition("@")[2].split("?")[0].lower()
    try:
        parts = urlsplit(address if "://" in address else "//" + address)
        return (parts.hostname or "").lower()
    except ValueError:
        return ""


def _same_site(one: str, other: str) -> bool:
    return one.removeprefix("www.") == other.removeprefix("www.")


def _disguises(label: str, address: str) -> bool:
    """Whether a link's text names an address other than the one the link opens."""
    opens = _host(address)
    return any(not _same_site(named.group(1).lower(), opens) for named in _NAMED_HOST.finditer(label))


def escape(text: str) -> str:
    """Text shown as it is in mrkdwn: its control characters (&, <, >) escaped, and a bare broadcast
    (``@here``) made inert, so that no name or question put into Kourier's own mrkdwn notifies anyone."""
    escaped = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _BARE_BROADCAST.sub("@" + WORD_JOINER, escaped)


def code_span(text: str) -> str:
    """Text for between backticks in mrkdwn, which has no escape for a backtick: each becomes a
    look-alike (MODIFIER LETTER GRAVE ACCENT), so the span cannot end early."""
    return escape(text).replace("`", "\u02cb")
