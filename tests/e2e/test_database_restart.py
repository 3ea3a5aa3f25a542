"""A database that restarted under the product costs no request and no turn: the product's real
processes (Daphne, a Celery worker, no beat) on a PostgreSQL cluster this test owns and restarts.

Every connection the processes kept is dead after the restart. The web process's database work and
the worker's database threads run outside Django's request cycle (which checks connections before
use), so each of their kept connections must be replaced on the spot: the mention acked (not a 500)
and its turn run at once. Beat does not run, so no recovery sweep can make up for a turn that failed.
"""

import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from simulator import defaults
from simulator.fake import SlackFake
from tests.fakes.a2a_agent import steps
from tests.support.postgres import PostgresCluster, postgres_bin_dir, postgres_cluster
from tests.support.stack import REPO_ROOT, Stack

pytestmark = pytest.mark.slow

BOT_TOKEN_ENV = "KOURIER_E2E_BOT_TOKEN"
SIGNING_SECRET_ENV = "KOURIER_E2E_SIGNING_SECRET"
ANSWER = "Hello from the agent."
WAIT_SECONDS = 30.0
DATABASE_THREADS = 2  # the worker's; every one of them holds a connection when the database restarts
MENTIONS_BEFORE = 4
MENTIONS_AFTER = 4


@pytest.fixture
def restartable_postgres(tmp_path: Path) -> Iterator[PostgresCluster]:
    bin_dir = postgres_bin_dir()
    if bin_dir is None:
        pytest.skip("PostgreSQL's initdb and pg_ctl are not installed (CI installs them)")
    with postgres_cluster(bin_dir) as cluster:
        try:
            yield cluster
        finally:
            shutil.copy(cluster.log, tmp_path / "postgres.log")  # kept with the processes' logs


def manifest(agent_url: str) -> str:
    return f"""\
apiVersion: kourier/v1
kind: Connection
metadata: {{name: acme}}
spec:
  botToken: {{fromEnv: {BOT_TOKEN_ENV}}}
  signingSecret: {{fromEnv: {SIGNING_SECRET_ENV}}}
---
apiVersion: kourier/v1
kind: Binding
metadata: {{name: ops}}
spec:
  connection: acme
  channels: [{defaults.CHANNEL_ID}]
  agent: {{url: "{agent_url}", dialect: a2a}}
"""


@pytest.fixture
def product_on_its_own_database(
    restartable_postgres: PostgresCluster,
    slack_fake: SlackFake,
    a2a_agent,
    start_stack: Callable[..., Stack],
    tmp_path: Path,
) -> Stack:
    """The database migrated and configured as an operator does it, then the web process and a worker."""
    a2a_agent.script([steps.text("Hello "), steps.text("from the agent.")])
    env = {
        "DATABASE_URL": restartable_postgres.url,
        "SLACK_API_URL": slack_fake.url,
        BOT_TOKEN_ENV: defaults.BOT_TOKEN,
        SIGNING_SECRET_ENV: defaults.SIGNING_SECRET,
        "WORKER_DATABASE_THREADS": str(DATABASE_THREADS),
        # Every event reads Connections and Bindings, so that read meets a dropped connection too.
        "BINDINGS_CACHE_SECONDS": "0",
    }
    stack = start_stack(env=env, web=False, workers=0)  # the product's environment, nothing started yet
    (tmp_path / "kourier.yaml").write_text(manifest(a2a_agent.url))
    for command in (["migrate", "--noinput", "-v", "0"], ["apply", "-f", str(tmp_path / "kourier.yaml")]):
        done = subprocess.run(
            [sys.executable, "manage.py", *command],
            env=stack.env,
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, f"manage.py {command[0]}:\n{done.stdout}\n{done.stderr}"
    stack.start_web()
    stack.start_worker()
    slack_fake.deliver_events_to(f"{stack.base_url}/slack/events", defaults.SIGNING_SECRET)
    return stack


def mention_and_wait_until_answered(slack: SlackFake, number: int) -> None:
    """A person mentions the app; Slack's two events are acked, and the turn answers and ends."""
    ts = slack.user_says(defaults.ADA, defaults.CHANNEL_ID, f"{slack.bot_mention} question {number}")
    assert [d.status for d in slack.deliveries(ts=ts)] == [200, 200]  # the app_mention and the message

    def replies() -> list:
        return [m for m in slack.thread(defaults.CHANNEL_ID, ts)[1:] if m.is_bot]

    def ended() -> bool:  # the runner takes its acknowledgment reaction off once the turn has ended
        found = replies()
        return (
            len(found) == 1
            and not found[0].streaming
            and not slack.message(defaults.CHANNEL_ID, ts).reactions
        )

    slack.wait_until(ended, timeout=WAIT_SECONDS)
    assert [m.text for m in replies()] == [ANSWER]


def test_mentions_after_the_database_restarted_are_acked_and_answered_at_once(
    product_on_its_own_database: Stack, restartable_postgres: PostgresCluster, slack_fake: SlackFake
):
    for number in range(MENTIONS_BEFORE):  # the web process and the worker's threads keep connections
        mention_and_wait_until_answered(slack_fake, number)
    slack_fake.wait_for_deliveries()  # the events of the app's own posts too: nothing in flight

    restartable_postgres.restart()

    for number in range(MENTIONS_BEFORE, MENTIONS_BEFORE + MENTIONS_AFTER):
        mention_and_wait_until_answered(slack_fake, number)
    # The kept connections were there to lose, and were replaced (not a lucky fresh connection).
    logs = product_on_its_own_database.logs
    assert "database.reconnected" in (logs / "web.log").read_text()
    assert "database.reconnected" in (logs / "worker.log").read_text()
