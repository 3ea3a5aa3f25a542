"""A prototype of the design's "asyncio loop per worker process", to measure it before building it.

    celery -A bench.asyncio_loop_worker worker --pool threads --concurrency 4 -Q <queue>

The product's drive_session task runs ``asyncio.run(run_session(id))``: a pool thread, and an event
loop of its own, for the whole turn. Here each worker process keeps one event loop on a thread of
its own, and drive_session only hands the session to that loop and returns, so a few pool threads
feed any number of concurrent turns. The turn itself is the product's code, unchanged
(sessions.runner.run_session); the other tasks run as they do in the product.

What a real implementation needs beyond this prototype (see docs/performance.md):
- the task is acked when the session is handed over, so a worker that dies drops its turns until
  beat's recover_sessions finds their expired leases and drives them again (the lease and the
  recovery sweep already exist; acks_late does not help a task that outlives its message);
- a bound on concurrent turns per process, and a graceful shutdown that waits for them;
- database calls go to a bounded thread pool (DATABASE_THREADS) instead of a pool per event loop.
"""

import asyncio
import logging
import threading
from concurrent.futures import ThreadPoolExecutor

from celery import signals

from kourier.celery import app

logger = logging.getLogger("bench.asyncio_loop_worker")

# sync_to_async(thread_sensitive=False) runs on the loop's default executor: these threads are all
# the database connections a worker process opens, whatever the number of turns.
DATABASE_THREADS = 8

__all__ = ["app"]


class TurnLoop:
    """One event loop on a thread of its own, running every turn this process drives."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.loop.set_default_executor(ThreadPoolExecutor(DATABASE_THREADS, thread_name_prefix="turn-db"))
        self.running: set[int] = set()
        self._thread = threading.Thread(target=self.loop.run_forever, name="turn-loop", daemon=True)
        self._thread.start()

    def drive(self, session_id: int) -> None:
        """Starts the session's runner on the loop and returns at once."""
        from sessions.runner import run_session

        async def run() -> None:
            self.running.add(session_id)
            try:
                await run_session(session_id)
            except Exception:
                logger.exception("turn_loop.session_failed", extra={"session_id": session_id})
            finally:
                self.running.discard(session_id)

        asyncio.run_coroutine_threadsafe(run(), self.loop)


@signals.worker_init.connect
def drive_sessions_on_one_loop(**_) -> None:
    """Makes drive_session a short task that hands the session to the loop (before the worker
    builds its task tracers, so they call the replacement)."""
    from sessions import tasks

    turn_loop = TurnLoop()
    tasks.drive_session.run = turn_loop.drive
    logger.info("turn_loop.ready", extra={"database_threads": DATABASE_THREADS})
