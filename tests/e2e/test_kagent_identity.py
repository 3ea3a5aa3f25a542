"""The person behind a turn reaches the real kagent runtime (both lines, tests/support/kagent_runtime):
the Binding's ``userIdentity`` puts the Slack user ID or the person's email (users.info) in the
X-User-Id header kagent attributes sessions by, an alert thread's turn goes under the system identity,
and the Binding's token from the environment rides along; the runtime's own record of each request's
headers says what arrived."""

import pytest

from sessions.identity import SYSTEM_IDENTITY
from sessions.models import Turn
from simulator import defaults
from tests.e2e.helpers import TRIGGER_TOKEN, TRIGGER_TOKEN_ENV, TRIGGERS, am_alert, deliver, group
from tests.support.kagent_runtime.script import Script
from tests.support.kagent_runtime.script import Turn as ModelTurn

pytestmark = pytest.mark.slow

WAIT = 60.0  # the runtime's first model turn imports much of ADK
AGENT_TOKEN_ENV = "KOURIER_E2E_AGENT_TOKEN"
AGENT_TOKEN = "Bearer kagent-pr0xy-t0ken"


def wait_for_the_turn(world):
    world.slack.wait_until(lambda: Turn.objects.filter(ended_at__isnull=False).exists(), timeout=WAIT)


def sent_users(runtime) -> list[str | None]:
    """The X-User-Id of each message the runtime was sent (card reads carry none and are not POSTs)."""
    return [headers.get("x-user-id") for headers in runtime.request_headers()]


def test_the_slack_user_id_is_sent_as_the_user(make_world, start_kagent_runtime):
    runtime = start_kagent_runtime(Script([ModelTurn("Hello Ada.")]))
    world = make_world(agent_url=runtime.url, dialect="kagent-v1", user_identity="slack-user-id")

    world.mention("who am I?")
    wait_for_the_turn(world)

    assert sent_users(runtime) == [defaults.ADA]


def test_the_persons_email_is_sent_as_the_user_with_the_token_from_the_environment(
    make_world, start_kagent_runtime
):
    runtime = start_kagent_runtime(Script([ModelTurn("Hello Ada.")]))
    world = make_world(
        agent_url=runtime.url,
        dialect="kagent-v1",
        user_identity="email",
        agent_headers={"Authorization": AGENT_TOKEN_ENV},
        env={AGENT_TOKEN_ENV: AGENT_TOKEN},
    )

    world.mention("who am I?")
    wait_for_the_turn(world)

    [headers] = runtime.request_headers()
    assert headers["x-user-id"] == defaults.ADA_EMAIL
    assert headers["authorization"] == AGENT_TOKEN


def test_an_alert_threads_turn_goes_under_the_system_identity(make_world, start_kagent_runtime):
    runtime = start_kagent_runtime(Script([ModelTurn("Looking into it.")]))
    world = make_world(
        agent_url=runtime.url,
        dialect="kagent-v1",
        user_identity="slack-user-id",
        triggers=TRIGGERS,
        env={TRIGGER_TOKEN_ENV: TRIGGER_TOKEN},
    )

    assert deliver(world, group(am_alert())).status_code == 200
    wait_for_the_turn(world)

    assert sent_users(runtime) == [SYSTEM_IDENTITY]


def test_without_a_user_identity_no_user_is_sent(make_world, start_kagent_runtime):
    runtime = start_kagent_runtime(Script([ModelTurn("Hello.")]))
    world = make_world(agent_url=runtime.url, dialect="kagent-v1")

    world.mention("who am I?")
    wait_for_the_turn(world)

    assert sent_users(runtime) == [None]
