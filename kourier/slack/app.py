"""The Bolt app of each Connection: verifies Slack's requests and hands messages to the sessions app.

Listeners only read the event and call a service; the service commits the rows and enqueues the
work, and Bolt acks once the listener returns (process_before_response), so an acked event is
always stored.
"""

import logging
import re

from asgiref.sync import sync_to_async
from slack_bolt.async_app import AsyncApp

from bindings.models import Connection
from bindings.services import note_slack_identity
from sessions.routing import ChatMessage
from sessions.services import route_message

from .clients import async_web_client, connection_workspace
from .incoming import IgnoredEvent, read_message_event

logger = logging.getLogger(__name__)

_apps: dict[tuple[int, str], AsyncApp] = {}


def bolt_app_for(connection: Connection) -> AsyncApp:
    """One Bolt app per Connection and secrets, made on first use and kept for the process."""
    key = (connection.pk, f"{connection.bot_token()}|{connection.signing_secret()}")
    app = _apps.get(key)
    if app is None:
        app = _build_app(connection)
        _apps[key] = app
    return app


def _build_app(connection: Connection) -> AsyncApp:
    app = AsyncApp(
        name=f"kourier-{connection.name}",
        client=async_web_client(connection.bot_token(), workspace=connection_workspace(connection.pk)),
        signing_secret=connection.signing_secret(),
        process_before_response=True,
        logger=logging.getLogger("kourier.slack.bolt"),
    )
    connection_id = connection.pk

    async def take_message(event: dict, context, body: dict) -> None:
        read = read_message_event(
            event, team_id=body.get("team_id", ""), bot_user_id=context.bot_user_id or ""
        )
        if isinstance(read, IgnoredEvent):
            logger.debug("slack.event_ignored", extra={"reason": read.reason, "connection_id": connection_id})
            return
        await sync_to_async(_route, thread_sensitive=False)(
            connection_id, read, team_id=context.team_id or "", bot_user_id=context.bot_user_id or ""
        )

    app.event("app_mention")(take_message)
    app.event("message")(take_message)

    async def ignore_other_events(ack) -> None:
        # Slack retries events that are not answered 2xx; the ones we don't use are acked and dropped.
        await ack()

    app.event(re.compile(".*"))(ignore_other_events)
    return app


def _route(connection_id: int, message: ChatMessage, *, team_id: str, bot_user_id: str) -> None:
    note_slack_identity(connection_id, team_id=team_id, bot_user_id=bot_user_id)
    route_message(Connection.objects.get(pk=connection_id), message)
