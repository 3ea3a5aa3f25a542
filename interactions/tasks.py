"""Celery tasks of the interactions app: one-line wrappers that take ids and return what was done."""

from asgiref.sync import async_to_sync
from celery import shared_task

from . import kept_presses, presses, registry, sweeps
from .queue import CLOSE_PROMPT, RETRY_PRESS


@shared_task(name=CLOSE_PROMPT, acks_late=True, autoretry_for=(Exception,), retry_backoff=True, max_retries=5)
def close_prompt(interaction_id: int) -> bool:
    return registry.close_prompt(interaction_id)


@shared_task(name=RETRY_PRESS, bind=True, acks_late=True, max_retries=None)
def retry_approval_press(self, kept_press_id: int, attempt: int) -> str:
    """Try ``attempt`` of a kept press (kept_presses.py): the tries are counted in its row, not here."""
    outcome = async_to_sync(presses.retry_kept_press)(kept_press_id, attempt)
    if outcome is presses.Outcome.RETRY:
        raise self.retry(args=(kept_press_id, attempt + 1), countdown=kept_presses.backoff(attempt))
    return outcome.value


@shared_task
def time_out_interactions() -> dict[str, int]:
    return sweeps.time_out_interactions().counts


@shared_task
def retry_kept_presses() -> dict[str, int]:
    return sweeps.retry_kept_presses().counts
