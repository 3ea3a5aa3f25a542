"""Runs the product as real processes for end-to-end tests: Daphne, a Celery worker, Celery beat.

They share the test database (committed rows: use transactional_db) and the test Redis, on a
queue of their own so tests never pick up each other's tasks.
"""

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
import redis
from django.db import connection
from django.utils import timezone

from sessions.models import Session, held_by_a_runner
from tests.support.private_redis import free_port

REPO_ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_SECONDS = 60  # generous: a busy 2-core host can take many seconds to start a process
WORKER_READY = " ready."  # Celery's log line once a worker consumes its queue: "<name>@<host> ready."


def database_url_of_test_database() -> str:
    db = connection.settings_dict
    if db["ENGINE"] == "django.db.backends.sqlite3":
        return f"sqlite:///{db['NAME']}"
    credentials = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    host = db["HOST"] or "localhost"
    port = f":{db['PORT']}" if db["PORT"] else ""
    return f"postgres://{credentials}@{host}{port}/{db['NAME']}"


@dataclass
class Stack:
    env: dict[str, str]
    logs: Path
    base_url: str = ""
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)
    # A process's own /metrics (METRICS_PORT), by process name.
    metrics_urls: dict[str, str] = field(default_factory=dict)
    # Where each log began for the current test: a stack kept for the next test (``StackPool``) shows
    # each test only what its processes wrote during it.
    log_starts: dict[str, int] = field(default_factory=dict)
    # Once started, a stack whose processes a test killed or added is not the one the next test asks for.
    started: bool = False
    changed_by_its_test: bool = False
    quiet: Callable[[], bool] | None = None  # see ``start_stack``

    def start(self, name: str, command: list[str], env: dict[str, str] | None = None) -> subprocess.Popen:
        self.changed_by_its_test |= self.started
        log = open(self.logs / f"{name}.log", "ab")  # noqa: SIM115  (closed with the process)
        process = subprocess.Popen(
            command, env={**self.env, **(env or {})}, cwd=REPO_ROOT, stdout=log, stderr=subprocess.STDOUT
        )
        self.processes[name] = process
        return process

    def start_web(self, port: int | None = None) -> None:
        """Starts the web process, on a free port or on ``port`` (a restart where a client, such as
        Alertmanager, was told the address)."""
        port = port or free_port()
        self.base_url = f"http://127.0.0.1:{port}"
        self.start(
            "web",
            [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "kourier.asgi:application"],
        )
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            if self.processes["web"].poll() is not None:
                raise RuntimeError(f"web exited at start:\n{self.log_tail('web')}")
            try:
                if httpx.get(f"{self.base_url}/healthz", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)  # polling for the server to listen, not timing a race
        raise RuntimeError(f"web did not start:\n{self.log_tail('web')}")

    def start_worker(
        self, name: str = "worker", concurrency: int = 4, own_metrics: bool = False
    ) -> subprocess.Popen:
        """Starts a worker; with ``own_metrics``, as in a pod of its own: its own metrics directory,
        apart from the web's, and its own /metrics on a port (``metrics_urls[name]``)."""
        env = {}
        if own_metrics:
            directory = self.logs / f"metrics-{name}-{uuid.uuid4().hex[:8]}"
            directory.mkdir()
            port = free_port()
            env = {"PROMETHEUS_MULTIPROC_DIR": str(directory), "METRICS_PORT": str(port)}
            self.metrics_urls[name] = f"http://127.0.0.1:{port}/metrics"
        return self.start(
            name,
            [sys.executable, "-m", "celery", "-A", "kourier", "worker", "--pool", "threads",
             "--concurrency", str(concurrency), "-Q", self.env["CELERY_QUEUE"], "-n", f"{name}-{uuid.uuid4().hex[:6]}@%h",
             "--without-gossip", "--without-mingle", "--loglevel", "INFO"],
            env,
        )  # fmt: skip

    def wait_until_ready(self, name: str) -> None:
        """Waits until a worker has said it is ready to take tasks, so that a test's own bounded waits
        measure the product's work, not how long a busy host takes to start a process."""
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            if self.processes[name].poll() is not None:
                raise RuntimeError(f"{name} exited at start:\n{self.log_tail(name)}")
            if WORKER_READY in self.log_tail(name, lines=200):
                return
            time.sleep(0.1)  # polling for the worker to start, not timing a race
        raise RuntimeError(f"{name} did not start within {START_TIMEOUT_SECONDS} s:\n{self.log_tail(name)}")

    def start_socket(
        self, name: str = "socket", args: list[str] | None = None, env: dict[str, str] | None = None
    ) -> subprocess.Popen:
        """Starts `manage.py socket` (Socket Mode for every Connection with an app token)."""
        return self.start(name, [sys.executable, "manage.py", "socket", *(args or [])], env)

    def start_beat(self) -> subprocess.Popen:
        return self.start(
            "beat",
            [sys.executable, "-m", "celery", "-A", "kourier", "beat", "--loglevel", "INFO",
             "--schedule", str(self.logs / "celerybeat-schedule")],
        )  # fmt: skip

    def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        self.changed_by_its_test = True
        process = self.processes[name]
        process.send_signal(sig)
        process.wait(timeout=30)

    def wait_for_log(self, name: str, text: str, *, count: int = 1, timeout: float) -> None:
        """Waits until the process's log holds ``text`` at least ``count`` times (a sign it did
        something, such as beat sending a sweep), or fails naming what was missing."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.log_text(name).count(text) >= count:
                return
            time.sleep(0.1)  # polling a log file for a condition, not timing a race
        raise TimeoutError(f"{name}'s log did not show {text!r} {count} times:\n{self.log_tail(name)}")

    def log_text(self, name: str) -> str:
        """What the process wrote to its log during the current test."""
        path = self.logs / f"{name}.log"
        if not path.exists():
            return ""
        with path.open("rb") as log:
            log.seek(self.log_starts.get(name, 0))
            return log.read().decode(errors="replace")

    def log_tail(self, name: str, lines: int = 60) -> str:
        return "\n".join(self.log_text(name).splitlines()[-lines:])

    def begin_test(self) -> None:
        """The logs from here on are the next test's."""
        self.log_starts = {
            name: (self.logs / f"{name}.log").stat().st_size
            for name in self.processes
            if (self.logs / f"{name}.log").exists()
        }
        self.changed_by_its_test = False

    def alive(self) -> bool:
        return all(process.poll() is None for process in self.processes.values())

    def stop(self) -> None:
        """Ends every process at once: after its test, how a process stops is not under test (the
        tests of a graceful stop send their own signals), and a graceful one cost a second a test."""
        for process in self.processes.values():
            if process.poll() is None:
                process.kill()
        for process in self.processes.values():
            process.wait()


# How long a stack kept for the next test may take to go quiet after its test (its runner letting
# its lease go, its last Slack call answered); past it, the stack is stopped instead of kept.
SETTLE_TIMEOUT_SECONDS = 5.0
QUIET_SECONDS = 0.3  # no Slack call for this long: the processes have nothing left in hand


@dataclass
class StackPool:
    """The stack a test process keeps for its next test, when that test asks for the same one.

    Starting Daphne and a Celery worker costs seconds of CPU each on a 2-core host: it was most of an
    end-to-end test's CPU. A module marked ``shares_stacks`` lets its worlds keep theirs: the next test
    asking for the same processes, environment and Slack address (``slack_port``: each test's Slack
    fake listens there) takes it over instead of starting one. A stack is kept only after a test that
    passed, did not kill or add processes, and left it quiet (no runner holding a lease, no task queued,
    no Slack call in flight); the next test gets it with its Redis keys and queue emptied and its logs
    read from where that test began.
    """

    slack_port: int
    key: tuple | None = None
    stack: Stack | None = None

    def take(self, key: tuple) -> Stack | None:
        stack, self.stack = self.stack, None
        if stack is not None and self.key == key and stack.alive():
            return stack
        if stack is not None:
            stack.stop()
        return None

    def keep(self, key: tuple, stack: Stack) -> None:
        self.discard()
        self.key, self.stack = key, stack

    def discard(self) -> None:
        if self.stack is not None:
            self.stack.stop()
        self.key = self.stack = None


@pytest.fixture(scope="session")
def stack_pool(django_db_setup) -> Iterator[StackPool]:
    """Stopped before the test database is dropped (which waits for no process to use it)."""
    pool = StackPool(slack_port=free_port())
    yield pool
    pool.discard()


@pytest.fixture
def start_stack(
    transactional_db, redis_url: str, tmp_path: Path, request: pytest.FixtureRequest, stack_pool: StackPool
) -> Iterator[Callable[..., Stack]]:
    """Starts the product's processes; call it once the test has written its Connection and Binding.

    ``quiet``: for a stack its test may leave to the next one (``StackPool``), whether the processes
    have gone quiet (the world knows its Slack fake); None: the stack is stopped after its test.
    """
    started: list[tuple[Stack, tuple | None]] = []

    def start(
        *,
        env: dict[str, str] | None = None,
        web: bool = True,
        workers: int = 1,
        beat: bool = False,
        workers_own_metrics: bool = False,
        quiet: Callable[[], bool] | None = None,
    ) -> Stack:
        key = None
        if quiet is not None and not beat and not workers_own_metrics:
            key = (
                tuple(sorted((env or {}).items())),
                web,
                workers,
                database_url_of_test_database(),
                redis_url,
            )
            kept = stack_pool.take(key)
            if kept is not None:
                empty_what_the_last_test_left(kept)
                kept.begin_test()
                kept.quiet = quiet
                started.append((kept, key))
                return kept
        unique = uuid.uuid4().hex[:8]
        # The processes add their metrics up there, as `manage.py serve`'s children do.
        metrics_dir = tmp_path / f"metrics-{unique}"
        metrics_dir.mkdir()
        stack = Stack(
            env={
                **os.environ,
                "DJANGO_SETTINGS_MODULE": "kourier.settings",
                "DATABASE_URL": database_url_of_test_database(),
                "REDIS_URL": redis_url,
                "CELERY_QUEUE": f"test-{unique}",
                "CACHE_KEY_PREFIX": f"test-{unique}",
                "SECRET_KEY": "test-secret-key",
                "ALLOWED_HOSTS": "127.0.0.1,localhost",
                "LOG_LEVEL": "INFO",
                "PYTHONUNBUFFERED": "1",
                "PROMETHEUS_MULTIPROC_DIR": str(metrics_dir),
                **(env or {}),
            },
            logs=tmp_path,
        )
        stack.quiet = quiet
        started.append((stack, key))
        # The workers start first and come up while the web process does: each takes seconds of
        # imports, and a test needs them all.
        names = ["worker" if index == 0 else f"worker{index + 1}" for index in range(workers)]
        for name in names:
            stack.start_worker(name=name, own_metrics=workers_own_metrics)
        if web:
            stack.start_web()
        for name in names:
            stack.wait_until_ready(name)
        if beat:
            stack.start_beat()
        stack.started = True
        return stack

    yield start
    report = getattr(request.node, "rep_call", None)
    failed = report is None or report.failed
    for stack, key in started:
        if failed and report is not None:
            for name in stack.processes:
                print(f"--- {name} log ---\n{stack.log_tail(name)}")
        if key is not None and not failed and not stack.changed_by_its_test and settles(stack):
            stack_pool.keep(key, stack)
        else:
            stack.stop()


def settles(stack: Stack) -> bool:
    """Whether the stack goes quiet within ``SETTLE_TIMEOUT_SECONDS``: alive, no runner holding a
    lease, nothing queued, no Slack call for ``QUIET_SECONDS``."""
    queue = redis.Redis.from_url(stack.env["REDIS_URL"])
    deadline = time.monotonic() + SETTLE_TIMEOUT_SECONDS
    try:
        while time.monotonic() < deadline:
            if not stack.alive():
                return False
            if (
                not Session.objects.filter(held_by_a_runner(timezone.now())).exists()
                and not queue.llen(stack.env["CELERY_QUEUE"])
                and stack.quiet is not None
                and stack.quiet()
            ):
                return True
            time.sleep(0.05)  # polling the processes' state until they are idle, not timing a race
        return False
    finally:
        queue.close()


def empty_what_the_last_test_left(stack: Stack) -> None:
    """The kept stack's Redis keys (its cache's, its queue) deleted: the next test starts from none."""
    client = redis.Redis.from_url(stack.env["REDIS_URL"])
    try:
        for prefix in (stack.env["CACHE_KEY_PREFIX"], stack.env["CELERY_QUEUE"]):
            keys = list(client.scan_iter(match=f"*{prefix}*", count=1000))
            if keys:
                client.delete(*keys)
    finally:
        client.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    # Lets fixtures see whether the test failed, to print the processes' logs only then.
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)
