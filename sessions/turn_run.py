"""One turn from its start to its end: the work read, the display begun, the conversation with the
agent, the notice the thread is told, and the turn ended with its reaction taken off."""

import logging

from kourier import metrics, tracing
from kourier.db import in_database_thread
from kourier.progress import Ending
from kourier.slack import call_log
from kourier.slack.clients import SlackError, async_web_client, connection_workspace
from kourier.slack.outbox import notice_key, post_notice

from . import acknowledgments, agent_log, notices, pauses, turns
from .conversation import TurnEnd, converse
from .display import display_for
from .models import Turn
from .outbox import TurnOutbox

logger = logging.getLogger(__name__)


async def run_turn(turn_id: int) -> None:
    work = await in_database_thread(turns.start_turn)(turn_id)
    if work is None:
        return
    if work.resumed:
        metrics.recovered(metrics.Recovery.TURN)
    else:
        metrics.turn_started(work.binding_name)
    tracing.annotate(binding=work.binding_name, resumed=work.resumed)
    slack = async_web_client(work.bot_token, workspace=connection_workspace(work.connection_id))
    display = display_for(work, slack, turn_id)
    logger.info(
        "turn.started", extra={"turn_id": turn_id, "binding": work.binding_name, "resumed": work.resumed}
    )
    try:
        spent = work.budget_spent
        if spent is not None:
            # Not sent; the thread is told once a day, whatever else its people send meanwhile.
            outcome = TurnEnd(Turn.Outcome.BUDGET_SPENT, None if spent.told else notices.BUDGET_SPENT)
        else:
            await display.begin()
            outcome = await converse(work, display, slack)
    except Exception:
        logger.exception("turn.crashed", extra={"turn_id": turn_id})
        outcome = TurnEnd(Turn.Outcome.CRASHED, notices.TASK_FAILED)
        try:
            await display.end(Ending.FAILED, notice_follows=True)
        except Exception:
            logger.exception("turn.reply_not_ended", extra={"turn_id": turn_id})
    finally:
        display.close()
    if outcome.notice:
        try:
            await post_notice(
                slack,
                work.channel_id,
                work.thread_ts,
                outcome.notice,
                key=notice_key(work.message_id),
                outbox=TurnOutbox(turn_id),
            )
        except SlackError as exc:
            # The notice stays intended in the outbox: beat's sweep posts it once the turn has ended.
            logger.warning(
                "turn.notice_deferred", extra={"turn_id": turn_id, "error": exc.response.get("error")}
            )
    if outcome.kept:  # not ended: the turn is queued again (sessions/pauses.py, ``keep_undelivered``)
        logger.info("turn.kept", extra={"turn_id": turn_id})
        return
    left = await in_database_thread(_end_turn)(
        turn_id,
        outcome.outcome,
        failed=outcome.failed,
        answer=work.kind is not Turn.Kind.MESSAGE,
        forget_context_of=work.session_id if outcome.forget_context else None,
        slack_calls=call_log.recorded(),
        agent_events=agent_log.recorded(),
    )
    metrics.turn_ended(
        work.binding_name, outcome.outcome.value, failed=outcome.failed, started_at=work.started_at
    )
    if left is not None:
        await acknowledgments.take_off(left)
    logger.info("turn.ended", extra={"turn_id": turn_id, "outcome": outcome.outcome})


def _end_turn(
    turn_id: int,
    outcome: Turn.Outcome,
    *,
    failed: bool,
    answer: bool,
    forget_context_of: int | None,
    slack_calls: list[dict] | None = None,
    agent_events: list[dict] | None = None,
) -> acknowledgments.Acknowledgment | None:
    """The database's part of a turn's end, in one hand-over: the kept answer settled, the context
    forgotten, the turn ended, and the reaction it leaves on its message read."""
    if answer:
        pauses.current().settle_answer(turn_id)
    if forget_context_of is not None:
        turns.forget_context(forget_context_of)
    turns.finish_turn(
        turn_id, outcome=outcome, failed=failed, slack_calls=slack_calls, agent_events=agent_events
    )
    return acknowledgments.of_turn(turn_id)
