"""A press of Stop on a running turn's Working… card, as the listener hands it over: who may stop it,
and what the presser is told (the stop itself is settled in sessions/stops.py).

Who may stop: any non-bot member of the channel (read from Slack as for a prompt's press:
interactions/presses.py ``standing_of``). A refused press, a forged one and a press after the turn
ended are each told why in a line only the presser sees, and change nothing. A press that stops the
turn is told nothing privately: the thread is told who stopped it.
"""

from __future__ import annotations

import enum
import logging

from kourier.db import in_database_thread
from kourier.slack.clients import SlackError, async_web_client, connection_workspace, error_name
from kourier.slack.ephemeral import tell_privately
from kourier.slack.incoming import SubmitPress
from sessions import stops

from .presses import Standing, standing_of

logger = logging.getLogger(__name__)


class StopOutcome(enum.Enum):
    STOPPING = "stopping"
    REFUSED = "refused"


async def receive_stop_press(press: SubmitPress, *, connection_id: int, bot_token: str) -> StopOutcome:
    """The listener's entry for the Stop button."""
    turn_id = stops.turn_id_of(press.value)
    refusal: str | None = stops.NOT_A_STOP if turn_id == 0 else None
    if refusal is None:
        slack = async_web_client(bot_token, workspace=connection_workspace(connection_id))
        standing = await standing_of(slack, press.channel_id, press.user_id)
        if standing is Standing.NOT_A_MEMBER:
            refusal = stops.ONLY_MEMBERS_STOP
        elif standing is Standing.UNKNOWN:
            refusal = stops.MEMBERSHIP_UNKNOWN
    if refusal is None:
        result = await in_database_thread(stops.request_stop)(
            turn_id, connection_id=connection_id, channel_id=press.channel_id, user_id=press.user_id
        )
        if result is stops.StopResult.STOPPING:
            return StopOutcome.STOPPING
        refusal = stops.REFUSALS[result]
    logger.info("turn.stop_refused", extra={"turn": press.value[:20], "connection_id": connection_id})
    try:
        await tell_privately(press.response_url, refusal)
    except SlackError as exc:
        logger.warning("turn.stop_not_told", extra={"error": error_name(exc)})
    return StopOutcome.REFUSED
