"""Celery tasks of the interactions app: one-line wrappers that take ids and return what was done."""

from asgiref.sync import async_to_sync
from celery import shared_task

from kourier.a2a.kagent_feedback import FeedbackNotSent

from . import feedback, home, presses, registry
from .task_names import CLOSE_PROMPT, REFRESH_HOME_TABS, RETRY_PRESS, SEND_FEEDBACK


@shared_task(name=CLOSE_PROMPT, acks_late=True)
def close_prompt(interaction_id: int, attempt: int | None = None) -> str:
    """Try ``attempt`` at a prompt's owed rewrite (closings.py): the retry machine (retries.py) counts
    the tries in its row and sends the next one."""
    if attempt is None:  # a message queued before rewrites were kept as rows
        return str(registry.close_prompt(interaction_id))
    return registry.close_owed_prompt(interaction_id, attempt).value


@shared_task(name=RETRY_PRESS, acks_late=True)
def retry_approval_press(kept_press_id: int, attempt: int) -> str:
    """Try ``attempt`` of a kept press (kept_presses.py): the retry machine (retries.py) counts the
    tries in its row and sends the next one."""
    return async_to_sync(presses.retry_kept_press)(kept_press_id, attempt).value


@shared_task(name=SEND_FEEDBACK, bind=True, acks_late=True, max_retries=6)
def send_feedback(self, feedback_id: int, version: int) -> str:
    """Sends a version of a person's feedback to kagent (feedback.py); a version is sent once."""
    try:
        return feedback.send(feedback_id, version)
    except FeedbackNotSent as exc:
        raise self.retry(countdown=min(30 * 2**self.request.retries, 900)) from exc


@shared_task(name=REFRESH_HOME_TABS, acks_late=True)
def refresh_home_tabs(connection_id: int) -> int:
    """Publishes again the Home tabs of the Connection opened lately (home.py); how many it published."""
    return async_to_sync(home.refresh)(connection_id)
