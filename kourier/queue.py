"""The one way to enqueue work: after the surrounding transaction commits.

A task enqueued before commit can run before its rows exist, or for rows that are then rolled back.
Tasks are named rather than imported, so that a service need not import the module of its tasks
(which imports the service).

Ingress enqueues a task for every new turn, and ``task.delay`` cost a quarter of a new mention's CPU
in the web process once its database work was one statement (docs/performance.md, section "Point
10"), nearly all of it in Celery's and kombu's general machinery (options, routing, producer pools, a Redis client per message). For the
case the product has (a Redis broker, a task on the default queue with no options of its own)
``publish`` sends the same message for a third of that: Celery makes the task message
(``as_task_v2``: headers and body), and it is pushed onto the queue's Redis list as kombu's Redis
transport frames it, on one client kept for the process. Anything else goes through ``task.delay``.
"""

from __future__ import annotations

import base64
import threading
import uuid
from dataclasses import dataclass
from functools import partial
from typing import Any
from urllib.parse import urlsplit

import redis
from celery import Task, current_app
from django.db import transaction
from kombu.utils.json import dumps

from kourier import tracing

REDIS_SCHEMES = frozenset({"redis", "rediss"})
# Broker transport options that leave a queue's Redis list where it is (a key prefix would move it).
HARMLESS_TRANSPORT_OPTIONS = frozenset({"visibility_timeout"})
# A task's own publishing options (Celery's extract_exec_options, less the serializer): any set, and
# the task goes through task.delay.
TASK_PUBLISH_OPTIONS = (
    "queue", "routing_key", "exchange", "exchange_type", "delivery_mode", "priority", "compression",
    "expires", "soft_time_limit", "time_limit", "immediate", "mandatory",
)  # fmt: skip


def enqueue_after_commit(task_name: str, *args: Any) -> None:
    transaction.on_commit(partial(publish, task_name, *args))


def enqueue_after_commit_in(seconds: float, task_name: str, *args: Any) -> None:
    """As ``enqueue_after_commit``, for the task to run ``seconds`` from now (Celery's countdown):
    work that must wait, such as what Slack's rate limit holds back, without waiting for a sweep."""
    transaction.on_commit(partial(_publish_later, seconds, task_name, args))


def _publish_later(seconds: float, task_name: str, args: tuple[Any, ...]) -> None:
    task = _registered_task(task_name)
    if task is None:
        current_app.send_task(task_name, args, countdown=seconds)
    else:
        task.apply_async(args, countdown=seconds)


def publish(task_name: str, *args: Any) -> None:
    """Sends the task ``task_name(*args)`` to its queue now: the message ``task.delay(*args)`` sends."""
    task = _registered_task(task_name)
    if task is None:  # no app of this process has it: Celery's own way, by name
        current_app.send_task(task_name, args)
        return
    route = _route_of(task)
    if route is None:
        task.delay(*args)
        return
    task_id = str(uuid.uuid4())
    headers, properties, body, _ = task.app.amqp.as_task_v2(
        task_id, task.name, args, {}, reply_to=task.app.thread_oid, ignore_result=task.ignore_result
    )
    tracing.inject(headers)  # the task's span continues the caller's trace, as Celery's publish does
    message = {
        "body": base64.b64encode(dumps(body).encode()).decode(),
        "content-encoding": "utf-8",
        "content-type": "application/json",
        "headers": headers,
        "properties": {
            **properties,
            "delivery_mode": route.delivery_mode,
            "delivery_info": {"exchange": "", "routing_key": route.queue},
            "priority": 0,
            "body_encoding": "base64",
            "delivery_tag": str(uuid.uuid4()),
        },
    }
    try:
        route.client.lpush(route.queue, dumps(message))
    except redis.RedisError:  # Celery's publish retries (task_publish_retry_policy); a task runs twice safely
        task.delay(*args)


def _registered_task(task_name: str) -> Task | None:
    """The task ``task_name`` of this process's Celery app, its apps' task modules imported if need be.

    A worker imports them at start; the web process only enqueues, by name, and would otherwise
    never know a task: every publish then took Celery's general path (``send_task``), a third of a
    new mention's CPU in the web process.
    """
    task = current_app.tasks.get(task_name)
    if task is None and not _tasks_imported.is_set():
        import_task_modules()
        task = current_app.tasks.get(task_name)
    return task


def import_task_modules() -> None:
    """Imports every app's task modules, as a worker does at start (``autodiscover_tasks``).

    The web process calls it at start-up (kourier/asgi.py): done on the first publish instead, it
    held that request's answer for a second.
    """
    with _routes_lock:
        if not _tasks_imported.is_set():
            current_app.loader.import_default_modules()
            _tasks_imported.set()


_tasks_imported = threading.Event()


@dataclass(frozen=True)
class _Route:
    queue: str  # the Redis list the queue is, and the routing key on the default (direct) exchange
    delivery_mode: int
    client: redis.Redis


_routes: dict[str, _Route | None] = {}
_clients: dict[str, redis.Redis] = {}  # by broker URL: one client, its connections pooled, for the process
_routes_lock = threading.Lock()


def _route_of(task: Task) -> _Route | None:
    """Where ``publish`` pushes the task's messages; None when it leaves them to ``task.delay``."""
    try:
        return _routes[task.name]
    except KeyError:
        pass
    with _routes_lock:
        if task.name not in _routes:
            _routes[task.name] = _direct_route(task)
        return _routes[task.name]


def _direct_route(task: Task) -> _Route | None:
    app = task.app
    conf = app.conf
    own_options = {name for name in TASK_PUBLISH_OPTIONS if getattr(task, name, None) is not None}
    if (
        conf.task_always_eager
        or urlsplit(conf.broker_url or "").scheme not in REDIS_SCHEMES
        or (conf.broker_transport_options or {}).keys() - HARMLESS_TRANSPORT_OPTIONS
        or conf.task_serializer != "json"
        or conf.task_compression
        or conf.task_send_sent_event
        or own_options
        or getattr(task, "serializer", None) not in (None, "json")
    ):
        return None
    queue = app.amqp.router.route({}, task.name, (), {})["queue"]
    if queue.exchange.type != "direct" or queue.queue_arguments or queue.max_priority:
        return None
    with app.producer_or_acquire() as producer:  # as Celery's first publish would: the queue exists
        producer.maybe_declare(queue)
    delivery_mode = queue.exchange.delivery_mode or conf.task_default_delivery_mode
    if conf.broker_url not in _clients:
        _clients[conf.broker_url] = tracing.traced_redis(redis.Redis.from_url(conf.broker_url))
    return _Route(
        queue=queue.name,
        delivery_mode={"persistent": 2, "transient": 1}.get(delivery_mode, delivery_mode),
        client=_clients[conf.broker_url],
    )


def forget_routes() -> None:
    """Drops what ``publish`` found out about each task (for tests that change the Celery settings)."""
    with _routes_lock:
        _routes.clear()
        _clients.clear()
        _tasks_imported.clear()
