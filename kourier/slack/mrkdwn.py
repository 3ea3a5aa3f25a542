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
  users``) and it names a user id; a channel's link (``<#C…>``) and a date (``<!date^…>``) are kept:
  they notify no one;
- the same forms written with Slack's escapes (``&lt;!here&gt;``: a Markdown block shows them as the
  brackets), and a Markdown link that opens one (``[the team](!subteam^S1)``), likewise;
- a link whose text names another address than the one it opens shows the address it opens.

Markdown's links are read first, then Slack's forms in what that left, and the whole is repeated
until nothing changes: the result never holds a form it neutralized, and neutralizing it again
changes nothing (a fixpoint), so a stream that shows a growing text shows only neutralized text
(kourier/slack/writer.py). tests/kourier/slack/test_mrkdwn.py holds both with generated texts.

``escape`` is for a name put into Kourier's own mrkdwn (a sub-agent's name, a tool's name):
``&``, ``<`` and ``>`` shown as they are. ``code_span`` is for text put between backticks. ``link`` is
for an address others gave (an alert's source): linked only when it is a web address.
"""

from __future__ import annotations

import re
from urllib.parse import quote, urlsplit

WORD_JOINER = "\u2060"
BROADCASTS = ("channel", "here", "everyone")
# A text built to need more rounds than this (links nested in links) is shown with look-alike brackets.
MAX_ROUNDS = 8
LOOK_ALIKES = {"&lt;": "\uff1c", "&gt;": "\uff1e", "<": "\uff1c", ">": "\uff1e", "[": "\uff3b", "]": "\uff3d"}

# Slack's angle-bracket forms: <!…>, <@…>, <#…>, <url|text>. No bracket inside (an escaped one may be).
_ANGLE = re.compile(r"<([^<>]*)>")
# The same forms with Slack's escapes (&lt;, &gt;) read as the brackets, as a Markdown block shows them.
_ESCAPED_ANGLE = re.compile(r"(<|&lt;)((?:(?!&lt;|&gt;)[^<>])*)(>|&gt;)")
# A bare @here, @channel or @everyone (Slack's clients and link_names read these as broadcasts).
_BARE_BROADCAST = re.compile(r"(?<![\w@])@(?=(?:channel|here|everyone)\b)", re.IGNORECASE)
# Markdown's inline link: [text](address "title"), the address optionally in <>.
_MARKDOWN_LINK = re.compile(r"\[([^\[\]\n]*)\]\(\s*<?([^()\s<>]+)>?(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'))?\s*\)")
# Something in a link's text that names an address: a host with a dot, with or without a scheme.
_NAMED_HOST = re.compile(
    r"(?:[a-z][a-z0-9+.\-]*://)?(?:[^\s/@:]+@)?((?:[a-z0-9](?:[a-z0-9\-]*[a-z0-9])?\.)+[a-z][a-z0-9\-]*[a-z0-9])",
    re.IGNORECASE,
)
_LOOK_ALIKE = re.compile("|".join(re.escape(form) for form in LOOK_ALIKES))
# A person's mention a Binding may allow: a user id, and nothing else after the @.
_USER_ID = re.compile(r"@[UW][A-Z0-9]+")


def neutralize(text: str, *, allow_user_mentions: bool = False) -> str:
    """``text`` with no broadcast, no group mention, no disguised link (the module's docstring).

    A fixpoint: neutralizing the result changes nothing. One round can build a form out of what it
    rewrote (``<[a.example](!here)>``: the link's address between the brackets around it), so rounds
    are repeated until one changes nothing. Each round that changes more than word joiners shortens
    the text, so they end; a text built to nest deeper than ``MAX_ROUNDS`` is shown with look-alike
    brackets instead, in which no form is left to build.
    """
    for _ in range(MAX_ROUNDS):
        shown = _neutralized_once(text, allow_user_mentions)
        if shown == text:
            return text
        text = shown
    return _BARE_BROADCAST.sub("@" + WORD_JOINER, _LOOK_ALIKE.sub(lambda match: LOOK_ALIKES[match[0]], text))


def _neutralized_once(text: str, allow_user_mentions: bool) -> str:
    # Markdown's links first: a link is rewritten to what it opens, and Slack's forms are then read in
    # what the rewriting left, the brackets around a link included.
    text = _MARKDOWN_LINK.sub(lambda match: _markdown_link(match, allow_user_mentions), text)
    text = _ANGLE.sub(lambda match: _angle("<", match[1], ">", allow_user_mentions), text)
    text = _ESCAPED_ANGLE.sub(lambda match: _angle(match[1], match[2], match[3], allow_user_mentions), text)
    return _BARE_BROADCAST.sub("@" + WORD_JOINER, text)


def _inert(name: str) -> str:
    # Joined on both sides: a "<" left before it (``<<!here>>``) never opens a form again.
    return WORD_JOINER + "@" + WORD_JOINER + name.lstrip("@")


def _notified(target: str, allow_user_mentions: bool) -> str | None:
    """Whom a form's target notifies (``here``, ``group``, ``U1``); None when it notifies no one: a
    date, a channel's link, an address, or a person's mention the Binding allows."""
    if target.startswith("!"):
        command = target[1:]
        if command.startswith("date^"):
            return None
        if command.startswith("subteam^"):
            return "group"
        return command.split("^")[0] or "channel"
    if target.startswith("@"):
        if allow_user_mentions and _USER_ID.fullmatch(target):
            return None
        return target[1:]
    return None


def _angle(opening: str, inner: str, closing: str, allow_user_mentions: bool) -> str:
    target, _, label = inner.partition("|")
    notified = _notified(target, allow_user_mentions)
    if notified is not None:
        return _inert(label or notified)
    if not target.startswith("#") and label and _disguises(label, target):
        return f"{opening}{target}{closing}"
    return f"{opening}{inner}{closing}"


def _markdown_link(match: re.Match[str], allow_user_mentions: bool) -> str:
    label, address = match[1], match[2]
    notified = _notified(address, allow_user_mentions)
    if notified is not None:
        # The name of whom it would notify, not the label: a link shows what it opens.
        return _inert(notified)
    return address if _disguises(label, address) else match[0]


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


# What a URL may hold as it is (RFC 3986's reserved and unreserved characters, and % for what is
# already encoded); anything else (spaces, <, >, |, ", `) is percent-encoded.
_URL_CHARACTERS = ":/?#[]@!$&'()*+,;=-._~%"


def link(address: str, label: str) -> str:
    """A mrkdwn link to ``address``, an address others gave (an alert's source), shown as ``label``.
    Empty when ``address`` is not a web address (http or https, with a host): between the brackets
    anything else may be a broadcast or a mention (``<!here|Source>``, ``<@U1|Source>``)."""
    try:
        parts = urlsplit(address)
        is_web = parts.scheme.lower() in ("http", "https") and bool(parts.hostname)
    except ValueError:
        return ""
    if not is_web:
        return ""
    # Percent-encoded, then Slack's escape of &: nothing in it can end the link or open a form.
    url = quote(address, safe=_URL_CHARACTERS).replace("&", "&amp;")
    return f"<{url}|{escape(label)}>"
