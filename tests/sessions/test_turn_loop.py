import asyncio
import contextvars
import threading

import pytest

from sessions.turn_loop import LoopFull, TurnLoop

WAIT = 10  # seconds: a bound for a thread handshake that should take microseconds


class ScriptedRunner:
    """Stands in for ``run_session``: each run waits on the loop until the test lets it end."""

    def __init__(self) -> None:
        self.started: list[int] = []
        self.cleaned_up: list[int] = []
        self.acknowledged: list[int] = []
        self._started = threading.Semaphore(0)
        self._acknowledged = threading.Semaphore(0)
        self._release: dict[int, asyncio.Event] = {}
        self.loop: asyncio.AbstractEventLoop | None = None

    async def __call__(self, session_id: int) -> None:
        self.loop = asyncio.get_running_loop()
        release = self._release[session_id] = asyncio.Event()
        self.started.append(session_id)
        self._started.release()
        try:
            await release.wait()
        finally:
            self.cleaned_up.append(session_id)  # where the real runner releases its lease

    async def acknowledge(self, session_id: int) -> None:
        """Stands in for ``acknowledge_waiting_turns``."""
        self.acknowledged.append(session_id)
        self._acknowledged.release()

    def wait_acknowledged(self) -> None:
        assert self._acknowledged.acquire(timeout=WAIT), "the waiting turns were not acknowledged"

    def wait_started(self, count: int = 1) -> None:
        for _ in range(count):
            assert self._started.acquire(timeout=WAIT), "a session did not start"

    def finish(self, session_id: int) -> None:
        assert self.loop is not None
        self.loop.call_soon_threadsafe(self._release[session_id].set)


@pytest.fixture
def scripted() -> ScriptedRunner:
    return ScriptedRunner()


@pytest.fixture
def make_loop(scripted):
    loops: list[TurnLoop] = []

    def make(max_sessions: int = 10, run_session=scripted) -> TurnLoop:
        loop = TurnLoop(
            run_session, acknowledge=scripted.acknowledge, max_sessions=max_sessions, database_threads=2
        )
        loops.append(loop)
        return loop

    yield make
    for loop in loops:
        loop.hand_over(timeout=WAIT)
        loop.loop.call_soon_threadsafe(loop.loop.stop)


def test_drive_returns_while_the_session_runs_on_the_loop(scripted, make_loop):
    loop = make_loop()
    assert loop.drive(7) is True
    scripted.wait_started()
    assert loop.running == [7]
    scripted.finish(7)
    loop.hand_over(timeout=WAIT)
    assert (scripted.cleaned_up, loop.running) == ([7], [])


def test_many_sessions_run_at_once_on_one_loop(scripted, make_loop):
    loop = make_loop(max_sessions=50)
    for session_id in range(50):
        loop.drive(session_id)
    scripted.wait_started(50)
    assert sorted(loop.running) == list(range(50))


def test_a_session_driven_again_while_it_runs_is_looked_at_once_more(scripted, make_loop):
    loop = make_loop()
    loop.drive(7)
    scripted.wait_started()
    assert loop.drive(7) is False  # no second runner in this process
    scripted.finish(7)
    scripted.wait_started()  # the same runner looked at the session once more
    assert scripted.started == [7, 7]
    scripted.finish(7)


def test_turns_queued_while_the_session_runs_are_acknowledged_at_once(scripted, make_loop):
    loop = make_loop()
    loop.drive(7)
    scripted.wait_started()
    loop.drive(7)  # a reply queued while the turn runs
    scripted.wait_acknowledged()  # not when its own turn comes
    assert (scripted.acknowledged, scripted.started) == ([7], [7])
    scripted.finish(7)


def test_past_its_limit_a_loop_refuses_more_sessions(scripted, make_loop):
    loop = make_loop(max_sessions=2)
    loop.drive(1)
    loop.drive(2)
    with pytest.raises(LoopFull):
        loop.drive(3)
    scripted.wait_started(2)
    assert sorted(loop.running) == [1, 2]


def test_hand_over_stops_every_session_and_waits_until_each_let_go(scripted, make_loop):
    loop = make_loop()
    loop.drive(1)
    loop.drive(2)
    scripted.wait_started(2)
    assert sorted(loop.hand_over(timeout=WAIT)) == [1, 2]
    assert sorted(scripted.cleaned_up) == [1, 2]  # before hand_over returned
    assert loop.running == []


def test_after_hand_over_a_loop_takes_no_new_session(scripted, make_loop):
    loop = make_loop()
    loop.hand_over(timeout=WAIT)
    with pytest.raises(LoopFull):
        loop.drive(1)
    assert scripted.started == []


def test_a_crashed_runner_lets_its_session_go(make_loop):
    crashed = threading.Event()

    async def crashing(session_id: int) -> None:
        crashed.set()
        raise RuntimeError("boom")

    loop = make_loop(run_session=crashing)
    loop.drive(5)
    assert crashed.wait(WAIT)
    loop.hand_over(timeout=WAIT)  # waits for the session to be let go
    assert loop.running == []


def test_a_session_runs_in_a_context_of_its_own_not_the_celery_tasks_that_drove_it(make_loop):
    """A task's context (its trace span, with tracing on) ends with the task: the runner, which may run
    long after, does not carry it."""
    where = contextvars.ContextVar("where", default="nowhere")
    seen: list[str] = []
    done = threading.Event()

    async def run_session(session_id: int) -> None:
        seen.append(where.get())
        done.set()

    loop = make_loop(run_session=run_session)
    where.set("in the celery task")
    loop.drive(1)

    assert done.wait(WAIT)
    assert seen == ["nowhere"]
