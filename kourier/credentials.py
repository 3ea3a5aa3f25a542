"""Credentials written into a URL (``https://user:password@host``), kept out of what people see: the
logs and the admin. Pure: no I/O.

A Binding's agent URL or kagent controller may carry them (HTTP Basic, or a token as the user), and
httpx logs each request's URL as it is. ``without_credentials`` shows every URL of a text with its
user and password as ``***``: the host and path still say where, nothing says how to get in.
"""

from __future__ import annotations

import re

MASK = "***"
# A scheme, then the userinfo before the host: whatever comes before an @ and the first / ? or #.
_USERINFO = re.compile(r"(?P<scheme>\b[a-z][a-z0-9+.\-]*://)[^\s/?#@]+@", re.IGNORECASE)


def without_credentials(text: str) -> str:
    """``text`` with the user and password of every URL in it shown as ``***``."""
    return _USERINFO.sub(rf"\g<scheme>{MASK}@", text)


def kept_credentials(submitted: str, stored: str) -> str:
    """The URL a form meant: the stored one when it was submitted as the form showed it (its
    credentials masked), else what was submitted."""
    if stored and submitted == without_credentials(stored):
        return stored
    return submitted
