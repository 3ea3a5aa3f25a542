"""Celery tasks of the interactions app: one-line wrappers that take ids and return what was done."""

from asgiref.sync import async_to_sync
from celery import shared_task

from bindings.models import Connection
from kourier.slack.incoming import SubmitPress

from . import approval_presses, services, sweeps
from .queue import CLOSE_PROMPT, RETRY_PRESS

# A kept press is tried again after 1, 2, 4, ... seconds, at most 30 apart, about four minutes in all.
PRESS_RETRIES = 10


@shared_task(name=CLOSE_PROMPT, acks_late=True, autoretry_for=(Exception,), retry_backoff=True, max_retries=5)
def close_prompt(interaction_id: int) -> bool:
    return services.close_prompt(interaction_id)


@shared_task(name=RETRY_PRESS, bind=True, acks_late=True, max_retries=PRESS_RETRIES)
def retry_approval_press(self, press: dict, connection_id: int, attempt: int) -> str:
    """A press whose approver groups Slack could not read for now, kept as a broker message (it
    outlives a restart) and tried again with backoff; the last try tells the person."""
    connection = Connection.objects.get(pk=connection_id)
    outcome = async_to_sync(approval_presses.decide_press)(
        SubmitPress(**press),
        connection_id=connection_id,
        bot_token=connection.bot_token(),
        last_attempt=attempt >= PRESS_RETRIES,
    )
    if outcome is approval_presses.Outcome.RETRY:
        raise self.retry(args=(press, connection_id, attempt + 1), countdown=min(30, 2**attempt))
    return outcome.value


@shared_task
def time_out_interactions() -> dict[str, int]:
    return sweeps.time_out_interactions().counts
