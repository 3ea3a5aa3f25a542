"""Celery tasks of the interactions app: one-line wrappers that take ids and return what was done."""

from asgiref.sync import async_to_sync
from celery import shared_task

from kourier.a2a.kagent_feedback import FeedbackNotSent

from . import closings, feedback, kept_presses, presses, registry
from .task_names import CLOSE_PROMPT, RETRY_PRESS, SEND_FEEDBACK


@shared_task(name=CLOSE_PROMPT, bind=True, acks_late=True, max_retries=None)
def close_prompt(self, interaction_id: int, attempt: int | None = None) -> str:
    """Try ``attempt`` at a prompt's owed rewrite (closings.py): the tries are counted in its row."""
    if attempt is None:  # a message queued before rewrites were kept as rows
        return str(registry.close_prompt(interaction_id))
    outcome = registry.close_owed_prompt(interaction_id, attempt)
    if outcome is closings.Outcome.RETRY:
        raise self.retry(args=(interaction_id, attempt + 1), countdown=closings.backoff(attempt))
    return outcome.value


@shared_task(name=RETRY_PRESS, bind=True, acks_late=True, max_retries=None)
def retry_approval_press(self, kept_press_id: int, attempt: int) -> str:
    """Try ``attempt`` of a kept press (kept_presses.py): the tries are counted in its row, not here."""
    outcome = async_to_sync(presses.retry_kept_press)(kept_press_id, attempt)
    if outcome is presses.PressOutcome.RETRY:
        raise self.retry(args=(kept_press_id, attempt + 1), countdown=kept_presses.backoff(attempt))
    return outcome.value


@shared_task(name=SEND_FEEDBACK, bind=True, acks_late=True, max_retries=6)
def send_feedback(self, feedback_id: int, version: int) -> str:
    """Sends a version of a person's feedback to kagent (feedback.py); a version is sent once."""
    try:
        return feedback.send(feedback_id, version)
    except FeedbackNotSent as exc:
        raise self.retry(countdown=min(30 * 2**self.request.retries, 900)) from exc
