"""Celery tasks of the sessions app: one-line wrappers that take ids and return what was done.

Every task is safe to run twice. Services enqueue them by name (sessions/task_names.py).
"""

from celery import shared_task
from celery.signals import worker_shutting_down

from . import runner, services
from .task_names import DRIVE_SESSION, TELL_EXPIRED
from .turn_loop import LoopFull, hand_over_running_sessions

# How long a full worker waits before it gives a session back to the queue for any worker.
LOOP_FULL_RETRY_SECONDS = 2


@shared_task(name=DRIVE_SESSION, bind=True, acks_late=True, max_retries=None)
def drive_session(self, session_id: int) -> None:
    """Hands the session to this process's turn loop and returns at once (see turn_loop.py)."""
    try:
        runner.drive(session_id)
    except LoopFull:
        raise self.retry(countdown=LOOP_FULL_RETRY_SECONDS) from None


@worker_shutting_down.connect
def _hand_over_sessions(**kwargs) -> None:
    """On SIGTERM, running turns stop where they are, leases released, instead of holding the
    shutdown for minutes; beat's recovery sweep gives them to another worker."""
    hand_over_running_sessions()


@shared_task(name=TELL_EXPIRED, acks_late=True, autoretry_for=(Exception,), retry_backoff=True, max_retries=5)
def tell_expired(turn_id: int) -> None:
    services.tell_expired(turn_id)
