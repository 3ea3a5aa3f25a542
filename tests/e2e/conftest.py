"""End-to-end world: a Connection and Binding in the test database, the Slack fake delivering to the
product's real processes, and the product's Slack clients pointed at the fake."""

from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
from celery import current_app
from django.db import transaction

from alerts import owed as owed_alert_posts
from bindings.models import Binding, Connection
from simulator import defaults
from simulator.fake import SlackFake
from tests.e2e.helpers import (
    APP_TOKEN_ENV,
    BOT_TOKEN_ENV,
    SIGNING_SECRET_ENV,
    assert_acked,
    chromium_path,
    skip_or_fail,
)
from tests.factories import BindingFactory, ConnectionFactory
from tests.support.stack import QUIET_SECONDS, Stack, StackPool

SOCKET_START_TIMEOUT = 60.0  # a busy 2-core host can take many seconds to start a process


@dataclass
class World:
    slack: SlackFake
    connection: Connection
    binding: Binding
    stack: Stack

    @property
    def channel(self) -> str:
        return defaults.CHANNEL_ID

    def says(self, text: str, *, user: str = defaults.ADA, thread_ts: str | None = None, **options) -> str:
        """A person posts in the bound channel; returns the message's ts once the app acked Slack's events
        for it with the 200 Slack needs (anything else, or no answer within 3 s, and Slack retries)."""
        ts = self.slack.user_says(user, self.channel, text, thread_ts, **options)
        assert_acked(self.slack, ts)
        return ts

    def mention(self, text: str, *, user: str = defaults.ADA, thread_ts: str | None = None, **options) -> str:
        return self.says(f"{self.slack.bot_mention} {text}", user=user, thread_ts=thread_ts, **options)


@dataclass
class SocketWorld(World):
    """The same world over Socket Mode: no web process; `manage.py socket` replicas hold the sockets."""

    replicas: list[str] = field(default_factory=list)

    def says(self, text: str, *, user: str = defaults.ADA, thread_ts: str | None = None, **options) -> str:
        """A person posts; returns the ts once every envelope Slack sent about it was acked in time."""
        ts = self.slack.user_says(user, self.channel, text, thread_ts, **options)
        self.slack.wait_until(lambda: envelopes_done(self.slack, ts), timeout=10)
        assert_acked(self.slack, ts)
        return ts

    def start_replica(self, name: str | None = None, env: dict[str, str] | None = None) -> str:
        name = name or f"socket{len(self.replicas) + 1}"
        self.stack.start_socket(name, env=env)
        self.replicas.append(name)
        return name


def envelopes_done(slack: SlackFake, ts: str) -> bool:
    """Every envelope about message ``ts`` was acked or timed out (and some were sent)."""
    about = [e for e in slack.socket_envelopes() if _event_ts(e.payload) == ts]
    return bool(about) and all(e.delivery is not None for e in about)


def _event_ts(payload: object) -> str | None:
    event = payload.get("event") if isinstance(payload, dict) else None
    return event.get("ts") if isinstance(event, dict) else None


SHARES_STACKS = "shares_stacks"
# A stack kept for the next test reads Bindings and agent cards afresh for each: the next test's rows
# and agents are new, and these processes' snapshots (5 s, 60 s) would still hold the last test's.
KEPT_STACK_ENV = {"BINDINGS_CACHE_SECONDS": "0", "AGENT_CARD_SECONDS": "0"}


def shares_stacks(request: pytest.FixtureRequest) -> bool:
    """Whether the test's module lets its worlds keep their processes for the next test (StackPool)."""
    return request.node.get_closest_marker(SHARES_STACKS) is not None


@pytest.fixture
def slack_fake(make_slack_fake, request: pytest.FixtureRequest, stack_pool: StackPool) -> SlackFake:
    """Slack; in a module that shares stacks, at the address a kept stack was started with."""
    if shares_stacks(request):
        try:
            return make_slack_fake(port=stack_pool.slack_port)
        except OSError:  # the port was taken meanwhile: this test starts its own stack
            pass
    return make_slack_fake()


def quiet_for_a_while(slack: SlackFake) -> Callable[[], bool]:
    def quiet() -> bool:
        calls = slack.calls()
        return not calls or slack.clock.now() - calls[-1].at >= QUIET_SECONDS

    return quiet


@pytest.fixture
def make_world(
    slack_fake: SlackFake, start_stack: Callable[..., Stack], request: pytest.FixtureRequest
) -> Callable[..., World]:
    """Writes the Connection and a Binding of channel C0001, starts the product and points Slack at it.
    In a module marked ``shares_stacks``, the processes may be the last test's (tests/support/stack.py)."""
    sharing = shares_stacks(request)

    def make(
        *,
        workers: int = 1,
        beat: bool = False,
        env: dict[str, str] | None = None,
        workers_own_metrics: bool = False,
        channels: list[str] | None = None,
        **binding_fields,
    ) -> World:
        connection = ConnectionFactory(
            name="acme", bot_token_env=BOT_TOKEN_ENV, signing_secret_env=SIGNING_SECRET_ENV
        )
        channels = [defaults.CHANNEL_ID] if channels is None else channels
        binding = BindingFactory(connection=connection, channels=channels, **binding_fields)
        stack = start_stack(
            env={
                "SLACK_API_URL": slack_fake.url,
                BOT_TOKEN_ENV: defaults.BOT_TOKEN,
                SIGNING_SECRET_ENV: defaults.SIGNING_SECRET,
                **(KEPT_STACK_ENV if sharing else {}),
                **(env or {}),
            },
            workers=workers,
            beat=beat,
            workers_own_metrics=workers_own_metrics,
            quiet=quiet_for_a_while(slack_fake) if sharing else None,
        )
        slack_fake.deliver_events_to(f"{stack.base_url}/slack/events", defaults.SIGNING_SECRET)
        return World(slack=slack_fake, connection=connection, binding=binding, stack=stack)

    return make


@pytest.fixture
def make_socket_world(slack_fake: SlackFake, start_stack: Callable[..., Stack]) -> Callable[..., SocketWorld]:
    """A Connection with an app token and a Binding of C0001; the workers, and ``replicas``
    `manage.py socket` processes connected to the Slack fake's Socket Mode."""

    def make(
        *,
        replicas: int = 1,
        workers: int = 1,
        beat: bool = False,
        web: bool = False,
        env: dict[str, str] | None = None,
        channels: list[str] | None = None,
        **binding_fields,
    ) -> SocketWorld:
        connection = ConnectionFactory(
            name="acme",
            bot_token_env=BOT_TOKEN_ENV,
            signing_secret_env=SIGNING_SECRET_ENV,
            app_token_env=APP_TOKEN_ENV,
        )
        channels = [defaults.CHANNEL_ID] if channels is None else channels
        binding = BindingFactory(connection=connection, channels=channels, **binding_fields)
        slack_fake.deliver_events_over_socket_mode()
        stack = start_stack(
            env={
                "SLACK_API_URL": slack_fake.url,
                BOT_TOKEN_ENV: defaults.BOT_TOKEN,
                SIGNING_SECRET_ENV: defaults.SIGNING_SECRET,
                APP_TOKEN_ENV: defaults.APP_TOKEN,
                **(env or {}),
            },
            web=web,
            workers=workers,
            beat=beat,
        )
        world = SocketWorld(slack=slack_fake, connection=connection, binding=binding, stack=stack)
        for _ in range(replicas):
            world.start_replica()
        slack_fake.wait_for_socket_connections(replicas, timeout=SOCKET_START_TIMEOUT)
        return world

    return make


@pytest.fixture
def start_alerts_here(settings, monkeypatch) -> Callable[[World], None]:
    """Lets the test process fire alerts in a world (``tests.support.alerts.fire_alert``): what an
    alert thread owes (``alerts.owed``) is queued for that world's workers, which deliver the alert
    message through the Slack fake and start the thread."""

    def allow(world: World) -> None:
        settings.SLACK_API_URL = world.slack.url
        monkeypatch.setenv(BOT_TOKEN_ENV, defaults.BOT_TOKEN)
        queue = world.stack.env["CELERY_QUEUE"]
        monkeypatch.setattr(
            owed_alert_posts,
            "enqueue_after_commit",
            lambda task_name, *args: transaction.on_commit(
                lambda: current_app.send_task(task_name, args, queue=queue)
            ),
        )

    return allow


@pytest.fixture
def chromium() -> str:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        skip_or_fail("Playwright for Python is not installed (the dev extras have it)")
    executable = chromium_path()
    if executable is None:
        skip_or_fail("Chromium is not installed (apt-get install chromium)")
    assert executable is not None
    return executable
