"""The message a trigger posts in a bound channel: the root of an alert thread."""

from __future__ import annotations

from .clients import connection_workspace, web_client

ALERT_METADATA_EVENT = "kourier_alert"


def post_alert_message(
    bot_token: str, connection_id: int, channel_id: str, text: str, *, binding: str
) -> str:
    """Posts the alert as the bot at the top level of the channel; the message's ts."""
    client = web_client(bot_token, workspace=connection_workspace(connection_id))
    response = client.chat_postMessage(
        channel=channel_id,
        text=text,
        metadata={"event_type": ALERT_METADATA_EVENT, "event_payload": {"binding": binding}},
    )
    return str(response["ts"])
