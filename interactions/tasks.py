"""Celery tasks of the interactions app: one-line wrappers that take ids and return what was done."""

from celery import shared_task

from . import services, sweeps
from .queue import CLOSE_PROMPT


@shared_task(name=CLOSE_PROMPT, acks_late=True, autoretry_for=(Exception,), retry_backoff=True, max_retries=5)
def close_prompt(interaction_id: int) -> bool:
    return services.close_prompt(interaction_id)


@shared_task
def time_out_interactions() -> dict[str, int]:
    return sweeps.time_out_interactions().counts
