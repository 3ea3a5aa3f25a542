"""Text others wrote (an agent's tool names, a person's words), made safe to print on an operator's
terminal. Pure: no I/O.

A terminal acts on what it is sent: ESC starts a sequence that can move the cursor, rewrite what is
already shown, set the window's title or, on some terminals, answer back as if typed; a carriage
return or a bidirectional override makes a line read as something else than it is.
"""

from __future__ import annotations

import re

# C0 and C1 controls (ESC, BEL, CR, LF, tab, ...), DEL, and the marks and overrides that reorder text.
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """``text`` with each of those characters shown as its escape (``\\x1b``, ``\\n``, ``\\u202e``):
    every character is still there to read, none acts."""
    return _UNPRINTABLE.sub(lambda match: match[0].encode("unicode_escape").decode("ascii"), text)
