import base64
import json
import os
import subprocess
import sys
import uuid

import pytest
import redis
from celery import Celery

from kourier import queue
from kourier.queue import publish
from sessions.task_names import DRIVE_SESSION
from sessions.tasks import drive_session, tell_expired


@pytest.fixture(autouse=True)
def _routes_found_again():
    queue.forget_routes()
    yield
    queue.forget_routes()


@pytest.fixture
def private_queue(redis_url, monkeypatch):
    """A queue of this test's own on the test Redis, where publish and Celery both send."""
    name = f"test-queue-{uuid.uuid4().hex[:8]}"
    client = redis.Redis.from_url(redis_url)
    original = queue._route_of
    monkeypatch.setattr(queue, "_route_of", lambda task: original(task) and queue._Route(name, 2, client))
    yield name, client
    client.delete(name)


def comparable(raw: bytes) -> dict:
    """A message as it waits in Redis, its body decoded and the ids every message has anew left out."""
    message = json.loads(raw)
    message["body"] = json.loads(base64.b64decode(message["body"]))
    for key in ("id", "root_id"):
        message["headers"].pop(key)
    for key in ("correlation_id", "delivery_tag"):
        message["properties"].pop(key)
    return message


@pytest.mark.parametrize("task", [drive_session, tell_expired], ids=lambda task: task.name)
def test_publish_sends_the_message_celery_sends(task, private_queue):
    name, client = private_queue
    publish(task.name, 42)
    task.apply_async((42,), queue=name)
    ours, celerys = (client.rpop(name) for _ in range(2))  # pushed on the left: the oldest is on the right
    assert comparable(ours) == comparable(celerys)
    assert json.loads(ours)["headers"]["id"] != json.loads(celerys)["headers"]["id"]


def test_the_products_tasks_go_to_the_default_queue_as_persistent_messages(settings):
    route = queue._route_of(drive_session)
    assert route is not None
    assert (route.queue, route.delivery_mode) == (settings.CELERY_TASK_DEFAULT_QUEUE, 2)


def test_what_publish_does_not_cover_goes_through_celery(monkeypatch):
    app = Celery("eager", set_as_current=False)
    app.conf.task_always_eager = True
    ran = []

    @app.task
    def work(value: int) -> None:
        ran.append(value)

    monkeypatch.setattr(queue, "current_app", app)
    publish(work.name, 7)
    assert ran == [7]


def test_a_task_this_process_does_not_know_is_sent_by_name(monkeypatch):
    sent = []
    app = Celery("elsewhere", set_as_current=False)
    monkeypatch.setattr(app, "send_task", lambda name, args: sent.append((name, args)))
    monkeypatch.setattr(queue, "current_app", app)
    publish("somewhere.tasks.unknown", 1, 2)
    assert sent == [("somewhere.tasks.unknown", (1, 2))]


def test_a_process_that_enqueues_by_name_only_publishes_directly(redis_url, tmp_path):
    """The web process never imports a tasks module: publish finds the task anyway, and pushes the
    message itself instead of taking Celery's general path."""
    queue_name = f"test-queue-{uuid.uuid4().hex[:8]}"
    script = (
        "import sys, django\n"
        "django.setup()\n"
        "from kourier import queue\n"
        "assert 'sessions.tasks' not in sys.modules\n"
        f"queue.publish({DRIVE_SESSION!r}, 42)\n"
        "print(sorted(name for name, route in queue._routes.items() if route is not None))\n"
    )
    environment = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "kourier.settings",
        "REDIS_URL": redis_url,
        "CELERY_QUEUE": queue_name,
        "DATABASE_URL": f"sqlite:///{tmp_path / 'unused.sqlite3'}",
        "SECRET_KEY": "test-secret-key",
    }
    client = redis.Redis.from_url(redis_url)
    try:
        done = subprocess.run(
            [sys.executable, "-c", script], env=environment, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == repr([DRIVE_SESSION])
        message = json.loads(client.rpop(queue_name))
        assert message["headers"]["task"] == DRIVE_SESSION
        assert json.loads(base64.b64decode(message["body"]))[0] == [42]
    finally:
        client.delete(queue_name)
