"""One asyncio event loop per worker process, running every session this process drives.

A turn is long and almost all waiting (on the agent's stream, on Slack), so a Celery pool slot per
turn caps a host at a handful of turns, and a thread plus a database connection per turn costs
~600 KiB each (docs/performance.md). Here ``drive_session`` only hands the session to this loop and
returns; a few pool threads feed any number of concurrent turns on one thread.

- Admission: at most ``WORKER_MAX_SESSIONS`` sessions run at once in a process; past that,
  ``drive`` refuses and the task is retried later, so a burst waits in Redis (where another worker
  may take it) instead of in an overloaded loop.
- Database calls from the runner go to a bounded executor (``WORKER_DATABASE_THREADS``): these
  threads are all the database connections the process opens, whatever the number of turns.
- The Celery message is acked when the session is handed over. A worker that dies with turns on its
  loop leaves their leases to expire; beat's ``recover_sessions`` drives them again.
- A session driven while its runner is on the loop is looked at once more before the runner lets it
  go, and its waiting turns get their acknowledgment reaction at once (``acknowledge``), not when
  their turn comes.
- Shutdown: ``hand_over`` cancels every running session (each releases its lease on the way out)
  and waits, bounded, until they have.
- What the sessions share on the loop (``shared``: the runner's connections to Slack and agents) is
  opened before the first session runs and closed after the hand-over.

The loop knows nothing of what a session's run is: the runner hands it ``run_session`` and
``acknowledge`` (sessions/runner.py).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine
from contextlib import AbstractAsyncContextManager

from django.conf import settings

from kourier import metrics

logger = logging.getLogger(__name__)


def _in_a_context_of_its_own(work: Coroutine[object, None, None], loop: asyncio.AbstractEventLoop) -> None:
    """Starts ``work`` on the loop in an empty context. run_coroutine_threadsafe would give it a copy
    of the calling thread's: the Celery task's, whose span (with tracing on) a session's runner would
    then carry long after that task ended, into every turn and log line of the session."""
    contextvars.Context().run(asyncio.run_coroutine_threadsafe, work, loop)


class LoopFull(Exception):
    """This process already runs as many sessions as it may; the session is to be driven later."""


SessionWork = Callable[[int], Awaitable[None]]
Shared = Callable[[], AbstractAsyncContextManager[None]]


class TurnLoop:
    def __init__(
        self,
        run_session: SessionWork,
        *,
        acknowledge: SessionWork,
        max_sessions: int,
        database_threads: int,
        shared: Shared | None = None,
    ) -> None:
        self.run_session = run_session
        self.acknowledge = acknowledge
        self.max_sessions = max_sessions
        self.loop = asyncio.new_event_loop()
        self.loop.set_default_executor(
            concurrent.futures.ThreadPoolExecutor(database_threads, thread_name_prefix="turn-db")
        )
        self._lock = threading.Lock()
        # Every session handed to the loop, until its runner has returned (lease released).
        self._sessions: dict[int, threading.Event] = {}
        self._tasks: dict[int, asyncio.Task[None]] = {}  # touched on the loop's thread only
        self._again: set[int] = set()  # driven again while their runner was finishing
        self._closing = False
        self._thread = threading.Thread(target=self.loop.run_forever, name="turn-loop", daemon=True)
        self._thread.start()
        self._shared = contextlib.AsyncExitStack()
        if shared is not None:
            asyncio.run_coroutine_threadsafe(self._shared.enter_async_context(shared()), self.loop).result()

    @property
    def running(self) -> list[int]:
        with self._lock:
            return list(self._sessions)

    def drive(self, session_id: int) -> bool:
        """Starts the session's runner on the loop and returns at once.

        False when this process already drives the session: that runner then looks at the session
        once more before it lets it go, so a turn queued while it was finishing is not missed, and
        the turns that wait meanwhile get their acknowledgment now.
        Raises ``LoopFull`` past ``max_sessions`` or while closing.
        """
        with self._lock:
            if session_id in self._sessions:
                self._again.add(session_id)
                _in_a_context_of_its_own(self._acknowledge(session_id), self.loop)
                return False
            if self._closing or len(self._sessions) >= self.max_sessions:
                raise LoopFull(session_id)
            self._sessions[session_id] = threading.Event()
            metrics.sessions_running(len(self._sessions))
        _in_a_context_of_its_own(self._run(session_id), self.loop)
        return True

    async def _acknowledge(self, session_id: int) -> None:
        try:
            await self.acknowledge(session_id)
        except Exception:
            # A reaction is a courtesy; the runner claims what is left when it looks again.
            logger.exception("session.acknowledgment_crashed", extra={"session_id": session_id})

    async def _run(self, session_id: int) -> None:
        current = asyncio.current_task()
        assert current is not None
        self._tasks[session_id] = current
        try:
            while not self._closing:  # closing: handed over before it started; recovery drives it
                await self.run_session(session_id)
                with self._lock:
                    if session_id not in self._again:
                        self._let_go(session_id)  # under the same lock: a later drive starts anew
                        return
                    self._again.discard(session_id)
        except asyncio.CancelledError:
            logger.info("session.handed_over", extra={"session_id": session_id})
        except Exception:
            # The lease is released or expires; beat's recovery drives the session again.
            logger.exception("session.runner_crashed", extra={"session_id": session_id})
        finally:
            self._tasks.pop(session_id, None)
            with self._lock:
                self._let_go(session_id)

    def _let_go(self, session_id: int) -> None:
        done = self._sessions.pop(session_id, None)
        metrics.sessions_running(len(self._sessions))
        if done is not None:
            self._again.discard(session_id)
            done.set()

    def hand_over(self, *, timeout: float) -> list[int]:
        """Stops every running session where it is and waits up to ``timeout`` for each to release
        its lease. Returns the sessions that were running."""
        with self._lock:
            self._closing = True
            sessions = dict(self._sessions)

        def cancel_all() -> None:
            for task in self._tasks.values():
                task.cancel()

        self.loop.call_soon_threadsafe(cancel_all)
        deadline = time.monotonic() + timeout
        late = [
            session_id
            for session_id, done in sessions.items()
            if not done.wait(max(0.0, deadline - time.monotonic()))
        ]
        if late:
            logger.warning("worker.hand_over_incomplete", extra={"sessions": len(late)})
        else:
            try:
                asyncio.run_coroutine_threadsafe(self._shared.aclose(), self.loop).result(
                    max(0.1, deadline - time.monotonic())
                )
            except Exception:
                logger.warning("worker.shared_not_closed", exc_info=True)
        return list(sessions)


_turn_loop: TurnLoop | None = None
_turn_loop_lock = threading.Lock()


def turn_loop(
    run_session: SessionWork, *, acknowledge: SessionWork, shared: Shared | None = None
) -> TurnLoop:
    """This process's loop, made on first use (so a forked pool child makes its own)."""
    global _turn_loop
    with _turn_loop_lock:
        if _turn_loop is None:
            _turn_loop = TurnLoop(
                run_session,
                acknowledge=acknowledge,
                max_sessions=settings.WORKER_MAX_SESSIONS,
                database_threads=settings.WORKER_DATABASE_THREADS,
                shared=shared,
            )
        return _turn_loop


def hand_over_running_sessions(*, timeout: float | None = None) -> list[int]:
    """Called on SIGTERM: running turns stop where they are and are left for another worker."""
    with _turn_loop_lock:
        loop = _turn_loop
    if loop is None:
        return []
    return loop.hand_over(timeout=settings.WORKER_SHUTDOWN_SECONDS if timeout is None else timeout)
