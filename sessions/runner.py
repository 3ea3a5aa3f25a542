"""Runs a session's turns, one at a time, on the worker's turn loop (turn_loop.py).

One runner per session at a time, settled by a lease in the database; the runner renews it while
a turn runs, and a runner that dies leaves it to expire so another takes the session over. What one
turn does is ``turn_run.run_turn``.
"""

import asyncio
import contextlib
import logging
import os
import socket
import uuid
from collections.abc import AsyncIterator

from django.conf import settings

from kourier import tracing
from kourier.a2a.factory import shared_connections as a2a_shared_connections
from kourier.db import in_database_thread
from kourier.slack import call_log
from kourier.slack.clients import shared_session as slack_shared_session

from . import acknowledgments, agent_log, turns
from .models import Turn
from .turn_loop import turn_loop
from .turn_run import run_turn

logger = logging.getLogger(__name__)

LEASE_SECONDS = settings.SESSION_LEASE_SECONDS


def runner_identity() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def drive(session_id: int) -> None:
    """Hands the session to this process's turn loop (turn_loop.py); returns at once."""
    turn_loop(
        run_session, acknowledge=acknowledgments.acknowledge_waiting_turns, shared=shared_connections
    ).drive(session_id)


@contextlib.asynccontextmanager
async def shared_connections() -> AsyncIterator[None]:
    """What every turn on the loop shares: one aiohttp session for Slack's calls and one connection
    pool for the agents', instead of one per call and one per turn (docs/performance.md)."""
    async with slack_shared_session(), a2a_shared_connections():
        yield


async def run_session(session_id: int) -> None:
    """Acknowledges the session's waiting turns, then runs them one at a time unless another runner
    holds the session's lease (that runner takes the new turns in order)."""
    await acknowledgments.acknowledge_waiting_turns(session_id)
    await _run_session(session_id)


async def _run_session(session_id: int) -> None:
    owner = runner_identity()
    # Each look takes or renews the lease and lets it go when nothing is left to run, in one hand-over
    # to the database thread (turns.lease_next_turn); a turn queued meanwhile is seen, or finds the
    # lease free.
    turn = await in_database_thread(turns.lease_next_turn)(session_id, owner, seconds=LEASE_SECONDS)
    if turn is None:
        return  # nothing to run, or another runner has the session
    try:
        while turn is not None:
            if not await _run_turn_with_lease(session_id, turn, owner):
                return  # the lease was lost: another runner has the session now
            turn = await in_database_thread(turns.lease_next_turn)(session_id, owner, seconds=LEASE_SECONDS)
    except BaseException:  # a crash, or the hand-over's cancel: the lease is let go at once
        await in_database_thread(turns.release_lease)(session_id, owner)
        raise


async def _run_turn_with_lease(session_id: int, turn: Turn, owner: str) -> bool:
    turn_id = turn.pk
    turn_task = asyncio.create_task(_traced_turn(turn))
    while True:
        try:
            done, _ = await asyncio.wait({turn_task}, timeout=LEASE_SECONDS / 3)
        except asyncio.CancelledError:
            turn_task.cancel()
            await asyncio.gather(turn_task, return_exceptions=True)
            raise
        if done:
            turn_task.result()
            return True
        if not await in_database_thread(turns.renew_lease)(session_id, owner, seconds=LEASE_SECONDS):
            logger.warning("session.lease_lost", extra={"session_id": session_id, "turn_id": turn_id})
            turn_task.cancel()
            return False


async def _traced_turn(turn: Turn) -> None:
    """The turn, in the trace of the event that stored it (its row's traceparent; kourier/tracing.py)."""
    attributes: dict[str, str | int | bool] = {
        "kourier.session_id": turn.session_id,
        "kourier.turn_id": turn.pk,
        "kourier.turn_kind": str(turn.kind),
    }
    # The turn's Slack calls are recorded for its timeline; run_turn stores them as the turn ends.
    with (
        tracing.span("kourier.turn", traceparent=turn.traceparent, attributes=attributes),
        call_log.recording(),
        agent_log.recording(),
    ):
        await run_turn(turn.pk)
