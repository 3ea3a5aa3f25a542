"""The messages of an alert thread: its root (the alert message, at the top level of the channel) and
its notes, each posted once through the outbox's ``post_once`` with the caller's ``Outbox``
(outbox.py).

The root carries ``{"event_type": "kourier_alert", "event_payload": {"alert": <key>}}``: a post whose
answer was lost is found in the channel's history by it instead of being posted again; a note, the
outbox's note metadata, in the thread.
"""

from __future__ import annotations

from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from .identity import identity_of
from .outbox import Outbox, PostKind, note_metadata, post_once

ALERT_METADATA_EVENT = "kourier_alert"


def alert_metadata(key: str) -> dict[str, Any]:
    return {"event_type": ALERT_METADATA_EVENT, "event_payload": {"alert": key}}


async def post_alert_once(
    client: AsyncWebClient, outbox: Outbox, channel_id: str, text: str, *, key: str
) -> str:
    """Posts the alert message unless this one (``key``) was posted already; its ts either way."""
    return await post_once(
        client,
        channel_id,
        None,
        key=key,
        kind=PostKind.ALERT,
        metadata=alert_metadata(key),
        outbox=outbox,
        text=text,
    )


async def post_alert_note_once(
    client: AsyncWebClient, outbox: Outbox, channel_id: str, thread_ts: str, text: str, *, key: str
) -> str:
    """Posts a note in the alert's thread (joined, fired again, resolved) once."""
    return await post_once(
        client,
        channel_id,
        thread_ts,
        key=key,
        kind=PostKind.NOTE,
        metadata=note_metadata(key),
        outbox=outbox,
        text=text,
    )


async def workspace_url(client: AsyncWebClient) -> str:
    """The workspace's address (``https://acme.slack.com/``), for links to its messages."""
    return str((await identity_of(client)).get("url") or "")


def message_link(url: str, channel_id: str, ts: str) -> str:
    """A link to a top-level message, as Slack writes permalinks."""
    return f"{url.rstrip('/')}/archives/{channel_id}/p{ts.replace('.', '')}" if url else ""
