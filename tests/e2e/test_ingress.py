"""Slack ingress through the real web process: signatures, url_verification, acks, one turn per message."""

import json

import httpx
import pytest
import redis

from sessions.models import Session, Turn
from simulator import defaults

pytestmark = [pytest.mark.slow, pytest.mark.shares_stacks]  # tests/support/stack.py: StackPool


@pytest.fixture
def world(make_world):
    return make_world(workers=0)


def test_a_mention_is_acked_and_stored_as_one_turn(world):
    ts = world.mention("hello")
    deliveries = world.slack.deliveries(ts=ts)
    assert sorted((d.kind, d.status) for d in deliveries) == [("app_mention", 200), ("message", 200)]
    assert all(d.acked_in_time for d in deliveries)
    turn = Turn.objects.get()
    assert (turn.message_ts, turn.user_id, turn.state) == (ts, defaults.ADA, Turn.State.QUEUED)
    assert Session.objects.get().thread_ts == ts


@pytest.mark.parametrize("order", ["app_mention_first", "message_first"])
def test_both_events_of_a_mention_and_their_retries_are_one_turn(world, order):
    ts = world.mention("hello", order=order)
    retried = [world.slack.redeliver(delivery, retry_num=1) for delivery in world.slack.deliveries(ts=ts)]
    assert sorted((d.kind, d.status) for d in retried) == [("app_mention", 200), ("message", 200)]
    assert Turn.objects.filter(message_ts=ts).count() == 1


def queued_tasks(world) -> list[str]:
    """The tasks waiting in the world's Celery queue (it has no worker to take them)."""
    queue = redis.Redis.from_url(world.stack.env["REDIS_URL"])
    return [
        json.loads(message)["headers"]["task"]
        for message in queue.lrange(world.stack.env["CELERY_QUEUE"], 0, -1)
    ]


def test_a_mention_queues_its_session_once_for_both_of_its_events(world):
    world.mention("hello")
    assert queued_tasks(world) == ["sessions.tasks.drive_session"]


@pytest.mark.parametrize("thread_ts", [None, "reply"], ids=["top level", "thread reply"])
def test_a_stored_turn_never_queued_is_queued_when_slack_sends_its_message_again(world, thread_ts):
    """The process that stored the turn died before it queued it and before it acked, so Slack sends
    the message again, to whichever process takes it next."""
    root = world.mention("hello")
    ts = world.mention("and then", thread_ts=root) if thread_ts else root
    redis.Redis.from_url(world.stack.env["REDIS_URL"]).delete(world.stack.env["CELERY_QUEUE"])  # lost
    world.slack.redeliver(world.slack.deliveries(ts=ts)[0], retry_num=1)
    assert queued_tasks(world) == ["sessions.tasks.drive_session"]
    assert Turn.objects.filter(message_ts=ts).count() == 1


def test_both_events_arriving_at_once_are_one_turn(world):
    ts = world.mention("hello", concurrent=True)
    assert sorted(d.status for d in world.slack.deliveries(ts=ts)) == [200, 200]
    assert Turn.objects.filter(message_ts=ts).count() == 1


@pytest.mark.parametrize("only", ["app_mention", "message"])
def test_either_event_alone_makes_the_turn(world, only):
    ts = world.mention("hello", deliver=only)
    assert [(d.kind, d.status) for d in world.slack.deliveries(ts=ts)] == [(only, 200)]
    assert Turn.objects.filter(message_ts=ts).count() == 1


def test_a_message_without_mention_at_the_top_level_is_not_a_turn(world):
    ts = world.says("just chatting")
    assert [(d.kind, d.status) for d in world.slack.deliveries(ts=ts)] == [("message", 200)]
    assert not Turn.objects.exists()


def test_edits_deletions_and_other_bots_are_not_turns(world):
    ts = world.mention("hello")
    edit = world.slack.user_edits(defaults.ADA, world.channel, ts, f"{world.slack.bot_mention} edited")
    world.slack.add_bot("U0OTHERBOT", "Other bot")
    world.slack.join(world.channel, "U0OTHERBOT")
    bot_ts = world.slack.bot_says("U0OTHERBOT", world.channel, f"{world.slack.bot_mention} hi", thread_ts=ts)
    deletion = world.slack.user_deletes(defaults.ADA, world.channel, ts)
    answers = [d.status for d in [*edit, *world.slack.deliveries(ts=bot_ts), *deletion]]
    assert answers == [200, 200, 200, 200]  # the edit, the bot's app_mention and message, the deletion
    assert Turn.objects.count() == 1


@pytest.mark.parametrize("sign", ["forged", "missing", "stale"])
def test_a_request_slack_did_not_sign_is_refused_and_nothing_is_stored(world, sign):
    body = {"type": "event_callback", "team_id": defaults.TEAM_ID, "event": {
        "type": "app_mention", "user": defaults.ADA, "text": f"<@{defaults.BOT_USER_ID}> hi",
        "ts": "1700000000.000100", "channel": defaults.CHANNEL_ID}}  # fmt: skip
    delivery = world.slack.deliver_raw(body, sign=sign)
    assert delivery.status == 401
    assert not Turn.objects.exists()


def test_url_verification_is_answered_with_the_challenge(world):
    delivery = world.slack.send_url_verification(
        challenge="3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"
    )
    assert delivery.status == 200
    assert "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" in delivery.response_body.decode()


def test_an_unknown_connection_path_is_refused(world):
    body = json.dumps({"type": "url_verification", "challenge": "x"}).encode()
    response = httpx.post(f"{world.stack.base_url}/slack/events/nobody", content=body)
    assert response.status_code == 401


def test_the_connection_can_be_named_in_the_path(world):
    world.slack.deliver_events_to(f"{world.stack.base_url}/slack/events/acme", defaults.SIGNING_SECRET)
    ts = world.mention("hello")
    deliveries = world.slack.deliveries(ts=ts)
    assert [(d.url.rsplit("/", 1)[-1], d.status) for d in deliveries] == [("acme", 200), ("acme", 200)]
    assert Turn.objects.filter(message_ts=ts).count() == 1


def test_readiness_reports_database_and_redis(world):
    response = httpx.get(f"{world.stack.base_url}/readyz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_readiness_names_the_database_when_it_cannot_be_reached(start_stack):
    stack = start_stack(env={"DATABASE_URL": "postgres://nobody@127.0.0.1:9/nothing"}, workers=0)
    response = httpx.get(f"{stack.base_url}/readyz")
    assert response.status_code == 503
    assert response.json() == {"status": "unavailable", "reasons": ["database unreachable: OperationalError"]}
