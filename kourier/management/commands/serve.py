"""Runs the whole service on one machine: Daphne (one process per core), a Celery worker and Celery beat,
and `manage.py socket` when a Connection has an app token (Socket Mode).

With no Slack app configured (SIMULATOR=auto, the default) it also runs the workspace simulator: the
Slack fake in this process, on 127.0.0.1, with the product's processes pointed at it (SLACK_API_URL),
the demo agent as one more child, and #demo bound to it (simulator/demo.py's manifest,
applied like any other). The page is the web processes' /simulator/. Anyone who reaches the page acts
as anyone, so the simulator is served on a loopback address only; and the demo's Binding is written
only if the simulator created it (the audit says who created a Binding of its name).

With no REDIS_URL it first starts the private Redis-compatible server of the embedded default.
Each process is a child; a signal to this command stops them all, gracefully. The children write
their metrics into one directory (PROMETHEUS_MULTIPROC_DIR, else var/metrics), emptied at start, so
that /metrics, whichever web process answers it, adds up every process of the host.
"""

import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from audit.models import AuditEvent
from bindings import manifest, services
from bindings.models import Binding, Connection
from kourier.embedded_redis import start_private_redis
from kourier.metrics import MULTIPROC_DIR_VARIABLE, mark_process_dead
from kourier.web_processes import daphne_commands, default_web_processes, listen
from simulator import control, demo
from simulator.fake import SlackFake

GRACEFUL_STOP_SECONDS = 30
# Who the audit names for the demo's Connection and Binding: no login name has a space in it.
SIMULATOR_ACTOR = "apply:workspace simulator (manage.py serve)"
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


def fresh_metrics_dir(directory: str | Path) -> Path:
    """The children's metrics directory, made if missing and emptied of an earlier run's files
    (prometheus_client's multiprocess mode needs it empty at start)."""
    path = Path(directory)
    path.mkdir(parents=True, exist_ok=True)
    for stale in path.glob("*.db"):
        stale.unlink()
    return path


def uses_socket_mode() -> bool:
    """Whether a Connection has an app token: then `make serve` holds its websockets too."""
    return Connection.objects.exclude(app_token_env="").exists()


def slack_app_configured() -> bool:
    """A Slack app of the operator's own: SLACK_BOT_TOKEN set, or a Connection (other than the
    simulator's) whose bot token variable is set."""
    if os.environ.get("SLACK_BOT_TOKEN"):
        return True
    connections = Connection.objects.exclude(name=demo.CONNECTION_NAME)
    return any(os.environ.get(name) for name in connections.values_list("bot_token_env", flat=True))


def simulator_wanted() -> bool:
    """SIMULATOR=on: always; off: never; auto: when no Slack app is configured."""
    if settings.SIMULATOR == "auto":
        return not slack_app_configured()
    return settings.SIMULATOR == "on"


def is_loopback(host: str) -> bool:
    return host in LOOPBACK_HOSTS or host.startswith("127.")


def created_by_the_simulator(binding_name: str) -> bool | None:
    """Whether the Binding of this name was created by the workspace simulator (its last creation's
    audit row names SIMULATOR_ACTOR); None when there is no such Binding."""
    if not Binding.objects.filter(name=binding_name).exists():
        return None
    creator = (
        AuditEvent.objects.filter(
            action="binding.agent_changed", binding_name=binding_name, details__previous_url=None
        )
        .order_by("-id")
        .values_list("actor_id", flat=True)
        .first()
    )
    return creator == SIMULATOR_ACTOR


def free_local_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Simulator:
    """The simulated workspace of a `serve` run: the fake, the demo agent's address, the variables
    the product's processes need to use them."""

    def __init__(self, web_host: str, web_port: int) -> None:
        self.secrets = demo.DemoSecrets.new()
        self.token = secrets.token_urlsafe(32)  # the page's, for this run (simulator/control.py)
        self.trigger_token_made = not os.environ.get(demo.TRIGGER_TOKEN_ENV)
        self.trigger_token = os.environ.get(demo.TRIGGER_TOKEN_ENV) or secrets.token_urlsafe(24)
        self.agent_port = free_local_port()
        self.fake: SlackFake = demo.build(self.secrets, port=settings.SIMULATOR_PORT)
        control.mount_on(self.fake, token=self.token)
        # The fake reaches the web processes where they listen; a wildcard host is reached on loopback.
        local = "127.0.0.1" if web_host in ("0.0.0.0", "::", "") else web_host
        local = f"[{local}]" if ":" in local else local
        self.events_url = f"http://{local}:{web_port}/slack/events"

    @property
    def agent_url(self) -> str:
        return f"http://127.0.0.1:{self.agent_port}/"

    def start(self) -> None:
        try:
            self.fake.start()
        except OSError as exc:
            raise CommandError(
                f"The workspace simulator cannot listen on port {settings.SIMULATOR_PORT}: {exc}. "
                "Set SIMULATOR_PORT to another (0: a free one), or SIMULATOR=off."
            ) from exc
        self.fake.deliver_events_to(self.events_url, self.secrets.signing_secret)

    def stop(self) -> None:
        self.fake.stop()

    def env(self) -> dict[str, str]:
        return {
            "SIMULATOR": "on",
            "SIMULATOR_URL": self.fake.url.removesuffix("api/"),
            "SIMULATOR_TOKEN": self.token,
            "SLACK_API_URL": self.fake.url,
            demo.BOT_TOKEN_ENV: self.secrets.bot_token,
            demo.SIGNING_SECRET_ENV: self.secrets.signing_secret,
            demo.TRIGGER_TOKEN_ENV: self.trigger_token,
        }

    def apply_demo_binding(self) -> None:
        """#demo bound to the demo agent: the manifest applied as `manage.py apply` would (its secrets
        are read from this process's environment, as every process's). A Binding of the demo's name
        that the simulator did not create is never written over: nothing is changed."""
        if created_by_the_simulator(demo.BINDING_NAME) is False:
            raise CommandError(
                f"A Binding named {demo.BINDING_NAME} exists that the workspace simulator did not create, "
                "and it is not written over: rename or delete it, or set SIMULATOR=off. Nothing was changed."
            )
        os.environ.update(self.env())
        documents, problems = manifest.parse_documents(demo.manifest(self.agent_url), "simulator")
        result = services.apply_manifests(documents, actor=SIMULATOR_ACTOR) if not problems else None
        if result is None or not result.ok:
            errors = problems if result is None else result.errors
            said = "; ".join(str(e) for e in errors)
            if "is already bound to" in said:
                said += ". An earlier release's `make serve` bound #demo to its Binding ops: delete it in the admin"
            raise CommandError(f"The demo Binding was refused: {said}.")


def port_is_taken(host: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as listen() binds: TIME_WAIT is free
        try:
            probe.bind((host, port))
        except OSError:
            return True
    return False


def taken_port_problem(host: str, port: int, redis_port: int | None) -> str | None:
    """One line naming the port that is taken and the setting that moves it, or None."""
    if port_is_taken(host, port):
        return (
            f"Port {port} is taken (another Kourier, or another server): "
            f"start on another with `make serve PORT={port + 1}` (manage.py serve --port)."
        )
    if redis_port is not None and port_is_taken("127.0.0.1", redis_port):
        return (
            f"Port {redis_port}, the private Redis's, is taken (another Kourier?): start on another with "
            f"`make serve EMBEDDED_REDIS_PORT={redis_port + 1}`, or set REDIS_URL to a Redis of yours."
        )
    return None


class Command(BaseCommand):
    help = (
        "Start the web server, a Celery worker and Celery beat (and a private Redis when REDIS_URL is unset)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--concurrency", type=int, default=4, help="Celery worker threads.")
        parser.add_argument(
            "--web-processes",
            type=int,
            default=default_web_processes(),
            help="Daphne processes accepting on the one port (default: one per core).",
        )

    def handle(self, *args, host: str, port: int, concurrency: int, web_processes: int, **options):
        problem = taken_port_problem(
            host, port, settings.EMBEDDED_REDIS_PORT if settings.REDIS_IS_EMBEDDED else None
        )
        if problem:
            raise CommandError(problem)
        redis_server = None
        if settings.REDIS_IS_EMBEDDED:
            redis_server = start_private_redis(settings.EMBEDDED_REDIS_PORT, settings.VAR_DIR / "redis")
            self.stdout.write(f"Private Redis at {settings.REDIS_URL} (data in var/redis)")
        simulator: Simulator | None = None
        try:
            call_command("migrate", interactive=False, verbosity=0)
            self.stdout.write("Database migrated.")
            if simulator_wanted():
                if not is_loopback(host):
                    raise CommandError(
                        f"The workspace simulator lets anyone who reaches its page act as anyone, so it is "
                        f"served on a loopback address only, not {host}: serve on 127.0.0.1 (the default), "
                        "or set SIMULATOR=off (and configure your Slack app)."
                    )
                simulator = Simulator(host, port)
                simulator.start()
                simulator.apply_demo_binding()
            metrics_dir = fresh_metrics_dir(settings.PROMETHEUS_MULTIPROC_DIR or settings.VAR_DIR / "metrics")
            children = self._start_children(host, port, concurrency, web_processes, metrics_dir, simulator)
            self._announce(host, port, simulator)
            try:
                self._wait(children)
            finally:
                for child in children:  # their live gauges go; their counters stay counted
                    mark_process_dead(child.pid, str(metrics_dir))
        finally:
            if simulator is not None:
                simulator.stop()
            if redis_server is not None:
                redis_server.stop()

    def _start_children(
        self,
        host: str,
        port: int,
        concurrency: int,
        web_processes: int,
        metrics_dir: Path,
        simulator: Simulator | None,
    ) -> list[subprocess.Popen]:
        env = {**os.environ, "REDIS_URL": settings.REDIS_URL, MULTIPROC_DIR_VARIABLE: str(metrics_dir)}
        if simulator is not None:
            env |= simulator.env()
        # The web processes' /metrics adds up the one directory: no worker or beat serves its own (and
        # two could not listen on one port).
        env.pop("METRICS_PORT", None)
        python = sys.executable
        with listen(host, port) as listener:  # the Daphnes hold it once started
            children = [
                subprocess.Popen(command, env=env, pass_fds=[listener.fileno()])
                for command in daphne_commands(python, listener, web_processes)
            ]
        commands = [
            [python, "-m", "celery", "-A", "kourier", "worker", "--pool", "threads",
             "--concurrency", str(concurrency), "--loglevel", settings.LOG_LEVEL],
            [python, "-m", "celery", "-A", "kourier", "beat", "--loglevel", settings.LOG_LEVEL,
             "--schedule", str(settings.VAR_DIR / "celerybeat-schedule")],
        ]  # fmt: skip
        if uses_socket_mode():
            commands.append([python, "manage.py", "socket"])
            self.stdout.write("Socket Mode: a Connection has an appToken; starting manage.py socket.")
        if simulator is not None:
            commands.append([python, "manage.py", "demo_agent", "--port", str(simulator.agent_port)])
        return children + [subprocess.Popen(command, env=env) for command in commands]

    def _announce(self, host: str, port: int, simulator: Simulator | None = None) -> None:
        base = f"http://{host}:{port}"
        first_user = (
            ""
            if get_user_model().objects.exists()
            else "  (first user: .venv/bin/python manage.py createsuperuser)"
        )
        demo_lines = ""
        if simulator is not None:
            # A token made for this run is shown, so the README's curl can use it; the operator's own is not.
            token = (
                f"{demo.TRIGGER_TOKEN_ENV}={simulator.trigger_token}"
                if simulator.trigger_token_made
                else (f"your {demo.TRIGGER_TOKEN_ENV}")
            )
            demo_lines = (
                f"Workspace simulator: {base}/simulator/ (no Slack app is configured: #demo is bound to "
                f"the demo agent; mention @Agent Kourier there)\n"
                f"Start an alert thread there: the README's trigger example at "
                f"{base}/triggers/{demo.BINDING_NAME}/{demo.TRIGGER_NAME} with {token}\n"
            )
        self.stdout.write(
            self.style.SUCCESS(f"Agent Kourier is running at {base}/ (Slack events: {base}/slack/events)\n")
            + demo_lines
            + f"Admin: {base}/admin/{first_user}\n"
            + "Stop with Ctrl-C."
        )

    def _wait(self, children: list[subprocess.Popen]) -> None:
        stopping = False

        def stop(signum, frame):
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        while not stopping and all(child.poll() is None for child in children):
            time.sleep(0.5)
        for child in children:
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + GRACEFUL_STOP_SECONDS
        for child in children:
            try:
                child.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                child.kill()
        failed = [child.pid for child in children if child.returncode not in (0, -signal.SIGTERM)]
        if failed and not stopping:
            raise SystemExit(
                f"A process of the service exited unexpectedly (pids {failed}); see its log above."
            )
