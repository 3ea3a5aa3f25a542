"""Celery tasks of the alerts app: one-line wrappers that take ids. Safe to run twice."""

from celery import shared_task

from . import delivery
from .task_names import DELIVER_ALERT


@shared_task(
    name=DELIVER_ALERT, acks_late=True, autoretry_for=(Exception,), retry_backoff=True, max_retries=8
)
def deliver_alert(alert_id: int) -> bool:
    return delivery.deliver(alert_id)
