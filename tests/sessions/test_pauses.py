"""The session core's view of pauses (sessions/pauses.py) before any app hands its own in: no session
waits for people, no reply is an answer, and nothing can be put to a thread."""

import asyncio

import pytest
from django.utils import timezone

from sessions import pauses


def test_no_session_waits_for_people_and_no_reply_is_an_answer():
    assert pauses.NO_PAUSES.holds(1, now=timezone.now()) is None
    assert not pauses.NO_PAUSES.held_sessions().exists()
    reply = {"message_ts": "1700000000.000200", "user_id": "U0ADA", "text": "staging"}
    assert not pauses.NO_PAUSES.awaits_typed_reply(1)
    assert pauses.NO_PAUSES.take_typed_reply(None, **reply, now=None) is None  # type: ignore[arg-type]


def test_nothing_can_be_put_to_a_thread():
    with pytest.raises(LookupError):
        asyncio.run(pauses.NO_PAUSES.put(None, None))  # type: ignore[arg-type]


def test_a_pause_nobody_is_asked_has_its_task_cancelled_once_and_nothing_kept():
    tries: list[int] = []

    async def cancel() -> bool:
        tries.append(1)
        return False  # the agent could not be reached: nobody is there to try again

    turn = pauses.PausedTurn(1, "C1", "1.0", "key", slack=None, cancel=cancel, task_id="task-1")
    asyncio.run(pauses.NO_PAUSES.cancel_unasked(turn, approval=False))
    assert tries == [1]
