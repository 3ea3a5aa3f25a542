"""The one way to enqueue work: after the surrounding transaction commits.

A task enqueued before commit can run before its rows exist, or for rows that are then rolled back.
Tasks are named rather than imported, so that a service need not import the module of its tasks
(which imports the service).
"""

from functools import partial

from celery import current_app
from django.db import transaction


def enqueue_after_commit(task_name: str, *args) -> None:
    transaction.on_commit(partial(current_app.send_task, task_name, args))
