"""Publishing a person's Home tab (issue 33, point 4): when they open it, again after they decided an
approval there, and when an approval was put to a thread or ended (home_refresh.py), so that what
they see is what waits for them now.

views.publish is Tier 4, counted per person; a refusal (a rate limit among them) is logged and the
tab keeps what it showed, to be published afresh the next time the person opens it.
"""

from __future__ import annotations

import logging
from typing import Any

from bindings import directory
from bindings.manifest import DEFAULT_SLASH_COMMAND
from kourier.db import in_database_thread
from kourier.slack.clients import SlackError, async_web_client, connection_workspace, error_name
from kourier.slack.people import channel_members

from . import home_refresh
from .home_view import home_view
from .waiting import approvals_waiting_for, open_alert_threads, sessions_of

logger = logging.getLogger(__name__)


async def publish_home(connection_id: int, user_id: str, client: Any, *, opened: bool = True) -> None:
    """Publishes the person's Home tab; ``opened``: they opened it (or decided in it), so it is kept
    current for the next hour (home_refresh.py)."""
    if opened:
        await home_refresh.remember_viewer(connection_id, user_id)
    found = await directory.acurrent()
    bound = sorted({channel for (owner, channel) in found.bindings if owner == connection_id})
    theirs: set[str] = set()
    for channel_id in bound:
        try:
            if user_id in await channel_members(client, channel_id):
                theirs.add(channel_id)
        except SlackError as exc:  # a channel Slack cannot list now is left out of the alerts
            logger.warning("home.channel_unreadable", extra={"channel": channel_id, "error": error_name(exc)})
    sessions = await in_database_thread(sessions_of)(connection_id, user_id)
    waiting = await approvals_waiting_for(client, connection_id, user_id)
    alerts = await in_database_thread(open_alert_threads)(connection_id, theirs)
    connection = found.by_id.get(connection_id)
    command = connection.slash_command if connection is not None else DEFAULT_SLASH_COMMAND
    view = home_view(sessions, waiting, alerts, command=command)
    try:
        await client.views_publish(user_id=user_id, view=view)
    except (SlackError, TimeoutError, OSError) as exc:
        logger.warning("home.not_published", extra={"connection_id": connection_id, "error": error_name(exc)})
        return
    logger.info(
        "home.published",
        extra={
            "connection_id": connection_id,
            "sessions": len(sessions),
            "approvals": len(waiting),
            "alerts": len(alerts),
        },
    )


async def refresh(connection_id: int) -> int:
    """The refresh home_refresh.py queued: the tabs opened lately published again; how many."""
    await home_refresh.refresh_taken(connection_id)
    connection = (await directory.acurrent()).by_id.get(connection_id)
    if connection is None:
        return 0
    client = async_web_client(connection.bot_token(), workspace=connection_workspace(connection_id))
    viewers = await home_refresh.recent_viewers(connection_id)
    for user_id in viewers:
        await publish_home(connection_id, user_id, client, opened=False)
    return len(viewers)
