"""Slack's call budgets: the arithmetic of a slot (a clock passed in), the same in Redis's one step
and in a process's own ledger, blocks from 429s, and the settings that change a budget."""

import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.test import override_settings

from kourier import shared_cache
from kourier.slack.budgets import (
    DEFAULT_LIMITS,
    Budget,
    Limit,
    LocalLedger,
    next_slot,
    parse_limits,
)

NOW = 1_800_000_000.0
THREE_A_MINUTE = Limit(3, 60.0)


def test_a_budget_with_room_serves_a_call_now():
    assert next_slot([], NOW, THREE_A_MINUTE) == NOW
    assert next_slot([NOW - 5, NOW - 1], NOW, THREE_A_MINUTE) == NOW


def test_a_full_window_serves_the_next_call_once_its_oldest_slot_has_left_it():
    taken = [NOW - 10, NOW - 5, NOW - 1]
    assert next_slot(taken, NOW, THREE_A_MINUTE) == NOW - 10 + 60 + THREE_A_MINUTE.margin


def test_calls_are_served_in_the_order_they_asked_and_a_block_holds_them_all():
    assert next_slot([NOW + 30], NOW, THREE_A_MINUTE) == NOW + 30  # never before an earlier caller
    assert next_slot([], NOW, THREE_A_MINUTE, blocked_until=NOW + 7) == NOW + 7
    assert next_slot([], NOW, None, blocked_until=NOW + 7) == NOW + 7  # a method without a budget


class RedisLedger:
    """The shared budget (one Redis step per call) with the limit under test, as LocalLedger is asked."""

    def __init__(self) -> None:
        self.workspace = f"T-{uuid.uuid4().hex}"

    def reserve(self, key, now, limit, *, max_wait, take=True):
        return Budget(self.workspace, {key: limit} if limit else {}).reserve(
            key, now, max_wait=max_wait, take=take
        )

    def block(self, key, until):
        Budget(self.workspace, {}).block(key, until, until - NOW)


@pytest.fixture(params=["in Redis", "in this process"])
def ledger(request):
    return RedisLedger() if request.param == "in Redis" else LocalLedger()


def test_slots_are_handed_out_so_that_no_window_holds_more_than_the_budget(ledger):
    slots = [ledger.reserve("chat.update", NOW, THREE_A_MINUTE, max_wait=600).at for _ in range(7)]
    step = 60 + THREE_A_MINUTE.margin
    assert slots == [NOW, NOW, NOW, NOW + step, NOW + step, NOW + step, NOW + 2 * step]


def test_a_slot_later_than_the_caller_can_wait_is_told_but_not_taken(ledger):
    for _ in range(3):
        ledger.reserve("chat.update", NOW, THREE_A_MINUTE, max_wait=600)
    refused = ledger.reserve("chat.update", NOW, THREE_A_MINUTE, max_wait=5)
    assert (refused.reserved, refused.at) == (False, NOW + 60 + THREE_A_MINUTE.margin)
    asked = ledger.reserve("chat.update", NOW, THREE_A_MINUTE, max_wait=600, take=False)
    assert asked.at == refused.at
    assert not asked.reserved
    # Neither took the slot: the next caller who can wait gets it.
    assert ledger.reserve("chat.update", NOW, THREE_A_MINUTE, max_wait=600).at == refused.at


def test_a_429_pushes_the_next_free_slot_past_its_retry_after(ledger):
    ledger.block("chat.update", NOW + 30)
    assert ledger.reserve("chat.update", NOW, THREE_A_MINUTE, max_wait=600).at == NOW + 30
    assert ledger.reserve("auth.test", NOW, None, max_wait=600).at == NOW  # another method goes on


def test_slots_left_behind_by_time_free_the_budget_again(ledger):
    for _ in range(3):
        ledger.reserve("chat.update", NOW, THREE_A_MINUTE, max_wait=600)
    later = NOW + 61 + THREE_A_MINUTE.margin
    assert ledger.reserve("chat.update", later, THREE_A_MINUTE, max_wait=0).at == later


def test_many_threads_reserving_at_once_never_overfill_a_window():
    """Redis's step is atomic: threads of several processes asking at once get distinct, ordered places."""
    budget = Budget(f"T-{uuid.uuid4().hex}", {"chat.startStream": Limit(20, 60.0)})

    def ask(_):
        return budget.reserve("chat.startStream", NOW, max_wait=600).at

    with ThreadPoolExecutor(max_workers=8) as threads:
        slots = sorted(threads.map(ask, range(60)))
    assert slots.count(NOW) == 20
    assert len({slot for slot in slots}) == 3  # three windows of 20


def test_a_post_has_a_budget_per_channel_and_other_calls_one_per_workspace():
    budget = Budget("T-1", DEFAULT_LIMITS)
    assert budget.key("chat.postMessage", "C1") != budget.key("chat.postMessage", "C2")
    assert budget.key("chat.update", "C1") == budget.key("chat.update", "C2")


def test_a_reservation_is_one_round_trip_to_redis(monkeypatch):
    from redis.connection import AbstractConnection

    sent: list[int] = []
    send = AbstractConnection.send_packed_command

    def counted(self, command, check_health=True):
        sent.append(1)
        return send(self, command, check_health)

    monkeypatch.setattr(AbstractConnection, "send_packed_command", counted)
    budget = Budget(f"T-{uuid.uuid4().hex}", DEFAULT_LIMITS)
    budget.reserve("chat.update", NOW, max_wait=60)  # loads the script once per process
    sent.clear()
    budget.reserve("chat.update", NOW, max_wait=60)
    assert len(sent) == 1


def test_without_redis_the_process_paces_its_own_calls(monkeypatch):
    def unreachable(*args, **kwargs):
        raise ConnectionError("redis is down")

    monkeypatch.setattr(shared_cache, "run_script", unreachable)
    budget = Budget(f"T-{uuid.uuid4().hex}", {"chat.stopStream": Limit(1, 60.0)})
    assert budget.reserve("chat.stopStream", NOW, max_wait=600).at == NOW
    assert budget.reserve("chat.stopStream", NOW, max_wait=600).at > NOW + 60


@pytest.mark.parametrize(
    ("text", "limits"),
    [
        ("", {}),
        ("chat.update=40/60", {"chat.update": Limit(40, 60.0)}),
        (
            " chat.update = 40/60 , chat.postMessage=1/1/channel",
            {"chat.update": Limit(40, 60.0), "chat.postMessage": Limit(1, 1.0, per_channel=True)},
        ),
    ],
)
def test_the_setting_changes_a_methods_budget(text, limits):
    assert parse_limits(text) == limits


@pytest.mark.parametrize(
    "text", ["chat.update", "chat.update=40", "chat.update=0/60", "x=1/0", "y=1/2/team", "=1/2"]
)
def test_a_budget_setting_that_is_not_understood_fails_the_start_up_check(text):
    with pytest.raises(ValueError, match="="):
        parse_limits(text)
    with (
        override_settings(SLACK_CALL_LIMITS=text),
        pytest.raises(SystemCheckError, match="SLACK_CALL_LIMITS"),
    ):
        call_command("check")


SHARED_BUDGET_CALLER = """
import asyncio, os, django
django.setup()
from kourier.slack.clients import async_web_client

async def main():
    client = async_web_client(os.environ["CALLER_TOKEN"], workspace=os.environ["CALLER_WORKSPACE"])
    for _ in range(2):
        await client.users_info(user=os.environ["CALLER_USER"])

asyncio.run(main())
"""


@pytest.mark.slow
def test_two_processes_take_their_turns_in_one_budget_and_slack_refuses_none(make_slack_fake, settings):
    """Each process alone is within the budget; together they are not: only a budget they share keeps
    Slack from refusing the second pair."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from simulator import defaults

    slack = make_slack_fake(rate_limits=True)
    slack.rate_limits.set_budget("users.info", 2, window=5.0)
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "kourier.settings",
        "REDIS_URL": settings.REDIS_URL,
        "CACHE_KEY_PREFIX": settings.CACHES["default"]["KEY_PREFIX"],
        "SLACK_API_URL": slack.url,
        "SLACK_CALL_LIMITS": "users.info=2/5",
        "CALLER_TOKEN": slack.bot_token,
        "CALLER_WORKSPACE": f"T-{uuid.uuid4().hex}",
        "CALLER_USER": defaults.ADA,
    }
    root = Path(__file__).resolve().parents[3]
    callers = [
        subprocess.Popen(
            [sys.executable, "-c", SHARED_BUDGET_CALLER], env=env, cwd=root, stderr=subprocess.PIPE
        )
        for _ in range(2)
    ]
    for caller in callers:
        _, errors = caller.communicate(timeout=60)
        assert caller.returncode == 0, errors.decode()[-2000:]
    assert [call.status for call in slack.calls("users.info")] == [200] * 4
