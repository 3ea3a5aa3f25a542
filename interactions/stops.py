"""A press of Stop on a running turn's Working… card, or of the stop control of Slack's agent session,
as the listener hands it over: who may stop it, and what the presser is told (the stop itself is
settled in sessions/stops.py).

Who may stop: any non-bot member of the channel (read from Slack as for a prompt's press:
interactions/presses.py ``standing_of``). A refused press, a forged one and a press after the turn
ended are each told why in a line only the presser sees, and change nothing. A press that stops the
turn is told nothing privately: the thread is told who stopped it.
"""

from __future__ import annotations

import enum
import logging

from kourier.db import in_database_thread
from kourier.slack.agent_sessions import AgentSession
from kourier.slack.clients import SlackError, async_web_client, connection_workspace, error_name
from kourier.slack.ephemeral import tell_privately
from kourier.slack.incoming import SessionStop, SubmitPress
from sessions import stops

from .presses import Standing, standing_of

logger = logging.getLogger(__name__)


class StopOutcome(enum.Enum):
    STOPPING = "stopping"
    REFUSED = "refused"


async def receive_stop_press(press: SubmitPress, *, connection_id: int, bot_token: str) -> StopOutcome:
    """The listener's entry for the Stop button."""
    turn_id = stops.turn_id_of(press.value)
    slack = async_web_client(bot_token, workspace=connection_workspace(connection_id))
    refusal = stops.NOT_A_STOP if turn_id == 0 else None
    if refusal is None:
        refusal = await _stop(
            slack, turn_id, connection_id, press.channel_id, press.user_id, control=stops.STOP_BUTTON
        )
    if refusal is None:
        return StopOutcome.STOPPING
    logger.info("turn.stop_refused", extra={"turn": press.value[:20], "connection_id": connection_id})
    try:
        await tell_privately(press.response_url, refusal)
    except SlackError as exc:
        logger.warning("turn.stop_not_told", extra={"error": error_name(exc)})
    return StopOutcome.REFUSED


async def receive_session_stop(stop: SessionStop, *, connection_id: int, bot_token: str) -> StopOutcome:
    """The listener's entry for the stop control of Slack's agent session (agent_session_stopped),
    which names the thread, not the turn. Slack leaves the session processing; the turn's end moves it.

    When no turn runs in the thread (it ended as the person pressed, the event is a redelivery of a
    stop already made, or a runner died with the session processing), nothing is stopped and nobody
    is told: the session is moved off processing, so that the control goes away."""
    slack = async_web_client(bot_token, workspace=connection_workspace(connection_id))
    turn_id = await in_database_thread(stops.running_turn_in)(connection_id, stop.channel_id, stop.thread_ts)
    if turn_id is None:
        session = AgentSession(slack, stop.channel_id, stop.thread_ts, connection_key=str(connection_id))
        await session.settle()
        logger.info("turn.stop_found_nothing_running", extra={"connection_id": connection_id})
        return StopOutcome.REFUSED
    refusal = await _stop(
        slack, turn_id, connection_id, stop.channel_id, stop.user_id, control=stops.SLACK_SESSION_STOP
    )
    if refusal is None:
        return StopOutcome.STOPPING
    logger.info("turn.stop_refused", extra={"turn": turn_id, "connection_id": connection_id})
    try:
        await _tell_in_thread(slack, stop, refusal)
    except SlackError as exc:
        logger.warning("turn.stop_not_told", extra={"error": error_name(exc)})
    return StopOutcome.REFUSED


async def _tell_in_thread(slack, stop: SessionStop, text: str) -> None:
    """The event has no response_url: the person is told in the thread, alone; someone who sees the
    thread without being in its channel cannot be shown a private line there, so is told in their
    direct messages with the app."""
    try:
        await slack.chat_postEphemeral(
            channel=stop.channel_id, user=stop.user_id, thread_ts=stop.thread_ts, text=text
        )
    except SlackError as exc:
        if error_name(exc) != "user_not_in_channel":
            raise
        await slack.chat_postMessage(channel=stop.user_id, text=text)


async def _stop(
    slack, turn_id: int, connection_id: int, channel_id: str, user_id: str, *, control: str
) -> str | None:
    """Stops the turn for a member of its channel; what the person is told when it does not."""
    standing = await standing_of(slack, channel_id, user_id)
    if standing is Standing.NOT_A_MEMBER:
        return stops.ONLY_MEMBERS_STOP
    if standing is Standing.UNKNOWN:
        return stops.MEMBERSHIP_UNKNOWN
    result = await in_database_thread(stops.request_stop)(
        turn_id, connection_id=connection_id, channel_id=channel_id, user_id=user_id, control=control
    )
    return None if result is stops.StopResult.STOPPING else stops.REFUSALS[result]
