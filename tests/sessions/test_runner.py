"""The runner, one session at a time, against the scripted A2A agent and the Slack fake: a session's
queued turns run in order under its lease, a session another runner holds is left to it, and what a
turn costs the worker."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import aiohttp
import pytest
from django import db

from sessions import runner, turns
from sessions.models import Session, Turn
from simulator import defaults
from tests.factories import TurnFactory
from tests.fakes.a2a_agent.steps import text
from tests.sessions.running import said
from tests.support.turn_loop import run, thread_texts

# The runner reaches the database from its threads: they must see the test's rows.
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def slack(slack_fake, settings, monkeypatch):
    settings.SLACK_API_URL = slack_fake.url
    monkeypatch.setenv("SLACK_BOT_TOKEN", slack_fake.bot_token)
    return slack_fake


def test_a_session_another_runner_holds_is_left_to_it(slack, a2a_agent):
    turn = said(slack, a2a_agent)
    assert turns.claim_lease(turn.session_id, "another-runner", seconds=60)
    run(runner.run_session(turn.session_id))
    turn.refresh_from_db()
    assert turn.state == Turn.State.QUEUED
    assert a2a_agent.received == []


def test_a_session_runs_its_queued_turns_in_order_and_lets_the_lease_go(slack, a2a_agent):
    a2a_agent.script([text("First.")])
    first = said(slack, a2a_agent, "one")
    second = TurnFactory(
        session=first.session, message_ts=f"{first.message_ts}1", user_id=defaults.ADA, text="two"
    )
    run(runner.run_session(first.session_id))
    assert [received.text.rsplit(": ", 1)[-1] for received in a2a_agent.received] == ["one", "two"]
    assert set(Turn.objects.values_list("state", flat=True)) == {Turn.State.DONE}
    assert Session.objects.get(pk=first.session_id).lease_owner == ""
    assert second.pk != first.pk


# What a turn costs the worker, in what can be counted (docs/performance.md, issue 17 point 6).
class CountingExecutor(ThreadPoolExecutor):
    """The worker loop's executor, counting the hand-overs to the database and the statements run."""

    def __init__(self) -> None:
        self.database_hops = 0
        self.statements: list[str] = []
        super().__init__(max_workers=1, initializer=self._count_statements)

    def _count_statements(self) -> None:
        def counted(execute, sql, params, many, context):
            if not sql.startswith(("BEGIN", "SAVEPOINT", "RELEASE SAVEPOINT")):  # SQLite's transactions
                self.statements.append(sql)
            return execute(sql, params, many, context)

        db.connection.execute_wrappers.append(counted)

    def submit(self, fn, /, *args, **kwargs):
        work = args[0] if args else fn
        if getattr(work, "__qualname__", "").startswith("in_database_thread."):
            self.database_hops += 1
        return super().submit(fn, *args, **kwargs)


def run_as_the_turn_loop(work) -> CountingExecutor:
    """Runs a coroutine of the runner as the worker's turn loop does: its database calls on a thread,
    its connections shared (``runner.shared_connections``)."""
    executor = CountingExecutor()

    async def scenario() -> None:
        asyncio.get_running_loop().set_default_executor(executor)
        try:
            async with runner.shared_connections():
                await work
        finally:
            await asyncio.get_running_loop().run_in_executor(executor, lambda: db.connection.close())

    asyncio.run(scenario())
    return executor


@pytest.fixture
def aiohttp_sessions(monkeypatch) -> list[aiohttp.ClientSession]:
    """Every aiohttp session made from now on (slack_sdk makes one per call unless it is given one)."""
    made: list[aiohttp.ClientSession] = []
    session_class = aiohttp.ClientSession

    def counted(*args: Any, **kwargs: Any) -> aiohttp.ClientSession:
        made.append(session_class(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(aiohttp, "ClientSession", counted)
    return made


def test_a_queued_mention_takes_ten_hand_overs_to_the_database(slack, a2a_agent):
    a2a_agent.script([text("Sunny all day.")])
    turn = said(slack, a2a_agent, output="live", connection__team_id=defaults.TEAM_ID)
    counted = run_as_the_turn_loop(runner.run_session(turn.session_id))
    assert thread_texts(slack, turn) == ["Sunny all day."]
    # Before issue 17 point 6: 16 hand-overs and 26 statements, on either database (transactions'
    # BEGINs and savepoints not counted). Now: the reaction's claim and check, the lease with the look
    # for a turn (twice), the start, the task, the reply's intent and confirmation, the end, the
    # reaction's removal.
    assert counted.database_hops == 10
    assert len(counted.statements) == 18


def test_a_turn_keeps_its_slack_calls_and_the_agents_events_for_the_timeline(slack, a2a_agent):
    a2a_agent.script([text("Sunny all day.")])
    turn = said(slack, a2a_agent, output="live", connection__team_id=defaults.TEAM_ID)
    run_as_the_turn_loop(runner.run_session(turn.session_id))

    turn.refresh_from_db()
    methods = [call["method"] for call in turn.slack_calls]
    made = [call.method for call in slack.calls() if call.method in methods]
    assert "chat.startStream" in methods
    assert methods == made[: len(methods)]  # in the order Slack got them
    assert {call["outcome"] for call in turn.slack_calls} == {"ok"}
    kinds = [event["kind"] for event in turn.agent_events]
    assert kinds[0] == "task started"
    assert "text" in kinds
    assert turn.agent_events[-1] == {**turn.agent_events[-1], "kind": "task ended", "state": "completed"}


def test_the_turns_of_a_loop_share_one_slack_session_and_read_the_agents_card_once(
    slack, a2a_agent, aiohttp_sessions
):
    a2a_agent.script([text("First.")])
    first = said(slack, a2a_agent, "one", output="live", connection__team_id=defaults.TEAM_ID)
    TurnFactory(session=first.session, message_ts=f"{first.message_ts}1", user_id=defaults.ADA, text="two")
    run_as_the_turn_loop(runner.run_session(first.session_id))
    assert len(a2a_agent.received) == 2
    assert len(slack.calls("chat.startStream")) == 2
    assert len(aiohttp_sessions) == 1  # the loop's, for every call of both turns (before: one per call)
    assert aiohttp_sessions[0].closed
    card_reads = [request for request in a2a_agent.requests if request.http_method == "GET"]
    assert len(card_reads) == 1
