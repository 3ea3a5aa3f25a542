"""The README's first command: `manage.py serve` brings the whole service up on the embedded default."""

import os
import re
import signal
import socket
import subprocess
import sys
import time
from io import StringIO
from pathlib import Path

import httpx
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from bindings import services
from bindings.models import Binding, Connection
from kourier.management.commands import serve
from kourier.management.commands.serve import Command, Simulator, is_loopback, simulator_wanted
from simulator import defaults, demo
from tests.e2e.helpers import wait_for_ready
from tests.factories import BindingFactory, ConnectionFactory
from tests.support.private_redis import free_port
from tests.support.stack import REPO_ROOT

pytestmark = pytest.mark.slow


def port_is_open(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def children_of(pid: int) -> list[str]:
    """The command lines of a process's children (from /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            if parent == pid:
                found.append((stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode())
        except (OSError, IndexError, ValueError):
            continue  # the process ended while it was being read
    return found


def test_serve_runs_web_worker_beat_and_a_private_redis_and_stops_them_all(tmp_path):
    web_port, redis_port = free_port(), free_port()
    env = {key: value for key, value in os.environ.items() if key not in {"REDIS_URL", "DATABASE_URL"}}
    env |= {
        "KOURIER_VAR_DIR": str(tmp_path),
        "EMBEDDED_REDIS_PORT": str(redis_port),
        "SECRET_KEY": "serve-test-secret-key",
        "CELERY_QUEUE": f"serve-test-{web_port}",
    }
    stale_metrics = tmp_path / "metrics" / "counter_1.db"  # an earlier run's, unreadable now
    stale_metrics.parent.mkdir()
    stale_metrics.write_bytes(b"left by a run long gone")
    log = open(tmp_path / "serve.log", "wb")  # noqa: SIM115  (closed below)
    process = subprocess.Popen(
        [sys.executable, "manage.py", "serve", "--port", str(web_port), "--web-processes", "2"],
        cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        ready = wait_for_ready(f"http://127.0.0.1:{web_port}/readyz", process)
        assert ready.json() == {"status": "ok"}
        login = httpx.get(f"http://127.0.0.1:{web_port}/admin/login/")
        assert login.status_code == 200
        assert "Agent Kourier" in login.text
        assert "Django administration" not in login.text
        stylesheet = httpx.get(f"http://127.0.0.1:{web_port}/static/admin/css/base.css")
        assert stylesheet.status_code == 200
        assert port_is_open(redis_port)
        assert (tmp_path / "kourier.sqlite3").exists()
        # Two Daphnes accept on the one port: both were handed the socket serve bound.
        assert len([command for command in children_of(process.pid) if " daphne " in command]) == 2
        # The children write their metrics into var/metrics, emptied first, and either Daphne adds them up.
        scraped = httpx.get(f"http://127.0.0.1:{web_port}/metrics")
        assert scraped.status_code == 200
        assert "kourier_live_state_readable 1.0" in scraped.text
        assert not stale_metrics.exists()
        # No Slack app is configured: the workspace simulator runs, #demo bound to the demo agent.
        simulator = httpx.get(f"http://127.0.0.1:{web_port}/simulator/")
        assert simulator.status_code == 200
        assert '<label for="message">Message</label>' in simulator.text
        assert_the_demo_answers_a_mention(f"http://127.0.0.1:{web_port}")
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
        log.close()
    output = (tmp_path / "serve.log").read_text()
    assert f"Admin: http://127.0.0.1:{web_port}/admin/" in output
    assert "createsuperuser" in output
    assert f"Workspace simulator: http://127.0.0.1:{web_port}/simulator/" in output
    assert not port_is_open(redis_port)
    assert not port_is_open(web_port)


def assert_the_demo_answers_a_mention(base: str) -> None:
    """Through the page's API, as the page does: Ada mentions the bot by name; the demo agent answers
    in the thread."""
    page = httpx.get(f"{base}/simulator/")
    said = httpx.post(
        f"{base}/simulator/api/messages",
        json={"as": "U0ADA", "channel": demo.CHANNEL_ID, "text": "@Agent Kourier hello"},
        cookies=page.cookies,
        headers={"X-CSRFToken": page.cookies["csrftoken"]},
    )
    assert said.status_code == 200, said.text
    assert said.json()["text"] == f"<@{demo.BOT_USER_ID}> hello"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        channel = httpx.get(
            f"{base}/simulator/api/channel", params={"as": "U0ADA", "channel": demo.CHANNEL_ID}
        )
        [root] = channel.json()["messages"]
        answers = [m for m in root["replies"] if m["author"]["is_bot"] and not m["streaming"]]
        if answers and "I am the demo agent" in answers[0]["text"]:
            return
        time.sleep(0.2)  # polling as the page does, not timing a race
    raise AssertionError(f"the demo agent did not answer: {channel.text}")


SOCKET_MODE_MANIFEST = """\
apiVersion: kourier/v1
kind: Connection
metadata: {name: acme}
spec:
  botToken: {fromEnv: KOURIER_SERVE_BOT_TOKEN}
  signingSecret: {fromEnv: KOURIER_SERVE_SIGNING_SECRET}
  appToken: {fromEnv: KOURIER_SERVE_APP_TOKEN}
"""


def test_serve_starts_the_socket_process_when_a_connection_has_an_app_token(tmp_path, slack_fake):
    slack_fake.deliver_events_over_socket_mode()
    web_port = free_port()
    env = {key: value for key, value in os.environ.items() if key not in {"REDIS_URL", "DATABASE_URL"}}
    env |= {
        "KOURIER_VAR_DIR": str(tmp_path),
        "EMBEDDED_REDIS_PORT": str(free_port()),
        "SECRET_KEY": "serve-test-secret-key",
        "CELERY_QUEUE": f"serve-test-{web_port}",
        "SLACK_API_URL": slack_fake.url,
        "KOURIER_SERVE_BOT_TOKEN": defaults.BOT_TOKEN,
        "KOURIER_SERVE_SIGNING_SECRET": defaults.SIGNING_SECRET,
        "KOURIER_SERVE_APP_TOKEN": defaults.APP_TOKEN,
    }
    manifest = tmp_path / "acme.yaml"
    manifest.write_text(SOCKET_MODE_MANIFEST)
    for command in (["migrate", "--verbosity", "0"], ["apply", "-f", str(manifest)]):
        subprocess.run([sys.executable, "manage.py", *command], cwd=REPO_ROOT, env=env, check=True)
    log = open(tmp_path / "serve.log", "wb")  # noqa: SIM115  (closed below)
    process = subprocess.Popen(
        [sys.executable, "manage.py", "serve", "--port", str(web_port), "--web-processes", "1"],
        cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        wait_for_ready(f"http://127.0.0.1:{web_port}/readyz", process)
        slack_fake.wait_for_socket_connections(1, timeout=60)
        assert len([command for command in children_of(process.pid) if "manage.py socket" in command]) == 1
        # A Slack app is configured: no simulator.
        assert httpx.get(f"http://127.0.0.1:{web_port}/simulator/").status_code == 404
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
        log.close()
    slack_fake.wait_until(lambda: slack_fake.socket_connections() == [], timeout=30)
    assert "starting manage.py socket" in (tmp_path / "serve.log").read_text()


def serve_with_a_port_taken(tmp_path, *, taken: str) -> subprocess.CompletedProcess:
    web_port, redis_port = free_port(), free_port()
    env = {key: value for key, value in os.environ.items() if key not in {"REDIS_URL", "DATABASE_URL"}}
    env |= {"KOURIER_VAR_DIR": str(tmp_path), "EMBEDDED_REDIS_PORT": str(redis_port), "SECRET_KEY": "x" * 50}
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", web_port if taken == "web" else redis_port))
        holder.listen()
        return subprocess.run(
            [sys.executable, "manage.py", "serve", "--port", str(web_port)],
            cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip


def test_a_taken_web_port_is_said_in_one_line_naming_the_setting_that_moves_it(tmp_path):
    done = serve_with_a_port_taken(tmp_path, taken="web")
    assert done.returncode != 0
    [line] = (done.stdout + done.stderr).strip().splitlines()
    assert line.startswith("CommandError: Port ")
    assert "make serve PORT=" in line
    assert not (tmp_path / "kourier.sqlite3").exists()  # nothing started


def test_a_taken_redis_port_is_said_in_one_line_naming_the_setting_that_moves_it(tmp_path):
    done = serve_with_a_port_taken(tmp_path, taken="redis")
    assert done.returncode != 0
    [line] = (done.stdout + done.stderr).strip().splitlines()
    assert "the private Redis's, is taken" in line
    assert "make serve EMBEDDED_REDIS_PORT=" in line


def test_the_first_user_line_goes_once_a_user_exists(db, django_user_model):
    before = StringIO()
    Command(stdout=before)._announce("127.0.0.1", 8000)
    django_user_model.objects.create_user("ada")
    after = StringIO()
    Command(stdout=after)._announce("127.0.0.1", 8000)
    assert "createsuperuser" in before.getvalue()
    assert "createsuperuser" not in after.getvalue()
    assert "Admin: http://127.0.0.1:8000/admin/" in after.getvalue()


def test_make_serve_takes_its_port_and_readable_logs_from_the_command_line():
    planned = subprocess.run(
        ["make", "-n", "serve", "PORT=8123"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60
    )
    [serve] = [line for line in planned.stdout.splitlines() if "manage.py serve" in line]
    assert serve.startswith("LOG_FORMAT=${LOG_FORMAT:-text} ")  # JSON stays the default elsewhere
    assert serve.endswith("manage.py serve --port 8123")


class TestTheSimulatorRunsWhenNoSlackAppIsConfigured:
    @pytest.fixture(autouse=True)
    def no_slack_app(self, monkeypatch, settings):
        settings.SIMULATOR = "auto"
        for name in ("SLACK_BOT_TOKEN", "ACME_BOT_TOKEN", demo.BOT_TOKEN_ENV):
            monkeypatch.delenv(name, raising=False)

    def test_with_no_token_and_no_connection_it_runs(self, db):
        assert simulator_wanted()

    def test_a_slack_bot_token_is_a_slack_app(self, db, monkeypatch):
        monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-real")
        assert not simulator_wanted()

    def test_a_connection_whose_token_variable_is_set_is_a_slack_app(self, db, monkeypatch):
        ConnectionFactory(name="acme", bot_token_env="ACME_BOT_TOKEN")
        assert simulator_wanted()  # named, but its token is not there: not configured yet
        monkeypatch.setenv("ACME_BOT_TOKEN", "xoxb-real")
        assert not simulator_wanted()

    def test_the_simulators_own_connection_is_not_a_slack_app(self, db, monkeypatch):
        ConnectionFactory(name=demo.CONNECTION_NAME, bot_token_env=demo.BOT_TOKEN_ENV)
        monkeypatch.setenv(demo.BOT_TOKEN_ENV, "xoxb-demo-left-from-a-run")
        assert simulator_wanted()

    def test_on_and_off_override_the_rule(self, db, monkeypatch, settings):
        monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-real")
        settings.SIMULATOR = "on"
        assert simulator_wanted()
        monkeypatch.delenv("SLACK_BOT_TOKEN")
        settings.SIMULATOR = "off"
        assert not simulator_wanted()


def applied_demo(monkeypatch, web_host: str = "127.0.0.1") -> Simulator:
    """A simulator started and stopped around applying the demo's manifest (or trying to)."""
    simulator = Simulator(web_host, 8123)
    simulator.start()
    try:
        for name in simulator.env():  # apply_demo_binding sets them for this process: put back after
            monkeypatch.setenv(name, "")
        simulator.apply_demo_binding()
    finally:
        simulator.stop()
    return simulator


def test_the_demo_manifest_applies_with_the_approver_group_and_the_readmes_trigger(db, monkeypatch):
    simulator = applied_demo(monkeypatch, web_host="0.0.0.0")

    binding = Binding.objects.get(name="simulator-demo")
    assert binding.channel_ids() == [demo.CHANNEL_ID]
    assert binding.agent_url == simulator.agent_url
    assert (binding.tool_approvals, binding.approver_groups, binding.ask_user) == (
        True,
        [demo.ONCALL_ID],
        True,
    )
    assert binding.trigger(demo.TRIGGER_NAME) is not None
    assert simulator.events_url == "http://127.0.0.1:8123/slack/events"


def test_the_simulator_writes_its_own_demo_binding_again_run_after_run(db, monkeypatch):
    first = applied_demo(monkeypatch)
    second = applied_demo(monkeypatch)

    assert first.agent_url != second.agent_url
    assert Binding.objects.get(name="simulator-demo").agent_url == second.agent_url


def test_a_binding_of_the_demos_name_the_simulator_did_not_create_is_never_written_over(db, monkeypatch):
    mine = ConnectionFactory(name="acme")
    services.apply_manifests(
        "apiVersion: kourier/v1\nkind: Binding\nmetadata: {name: simulator-demo}\n"
        f"spec: {{connection: {mine.name}, channels: [C0MINE], agent: {{url: 'http://agents.example/'}}}}\n"
    )

    with pytest.raises(
        CommandError,
        match=r"^A Binding named simulator-demo exists that the workspace simulator did not create",
    ):
        applied_demo(monkeypatch)

    binding = Binding.objects.get(name="simulator-demo")
    assert (binding.connection.name, binding.agent_url) == ("acme", "http://agents.example/")
    assert not Connection.objects.filter(name=demo.CONNECTION_NAME).exists()  # nothing was changed


def test_an_earlier_releases_demo_binding_holding_demo_is_named_and_left_alone(db, monkeypatch):
    simulator_connection = ConnectionFactory(name=demo.CONNECTION_NAME, bot_token_env=demo.BOT_TOKEN_ENV)
    BindingFactory(name="ops", connection=simulator_connection, channels=[demo.CHANNEL_ID])

    with pytest.raises(CommandError, match=r"bound #demo to its Binding ops: delete it in the admin\.$"):
        applied_demo(monkeypatch)

    assert Binding.objects.get(name="ops").channel_ids() == [demo.CHANNEL_ID]


@pytest.mark.parametrize(
    ("host", "loopback"),
    [("127.0.0.1", True), ("127.0.0.2", True), ("localhost", True), ("::1", True),
     ("0.0.0.0", False), ("::", False), ("", False), ("192.168.1.10", False), ("kourier.example.com", False)],
)  # fmt: skip
def test_only_a_loopback_address_is_loopback(host, loopback):
    assert is_loopback(host) is loopback


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.10"])
def test_serve_refuses_to_expose_the_simulator_beyond_loopback_and_starts_nothing(
    db, settings, monkeypatch, host
):
    settings.SIMULATOR = "on"
    settings.REDIS_IS_EMBEDDED = False
    started = []
    monkeypatch.setattr(Simulator, "start", lambda self: started.append(self))
    monkeypatch.setattr(serve, "taken_port_problem", lambda *args: None)  # no such address here

    with pytest.raises(CommandError, match=rf"served on a loopback address only, not {re.escape(host)}: "):
        call_command("serve", "--host", host, "--port", str(free_port()), stdout=StringIO())

    assert started == []
    assert not Binding.objects.filter(name=demo.BINDING_NAME).exists()
