"""The one way to enqueue work: after the surrounding transaction commits.

A task enqueued before commit can run before its rows exist, or for rows that are then rolled back.
"""

from functools import partial

from celery import Task
from django.db import transaction


def enqueue_after_commit(task: Task, *args, **kwargs) -> None:
    transaction.on_commit(partial(task.delay, *args, **kwargs))
