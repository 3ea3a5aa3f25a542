"""The runner, one turn and one session at a time, against the scripted A2A agent and the Slack fake:
the person's words reach the agent, the answer reaches the thread, a failure is told in plain words,
a pause goes to the pauses handed in (sessions/pauses.py) or is cancelled, and a session another
runner holds is left to it."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import pytest
from django import db
from slack_sdk.web.async_client import AsyncWebClient

from kourier.a2a.events import TextDelta
from kourier.a2a.wire import Message, Role, TextPart
from kourier.slack.writer import MESSAGE_TEXT_LIMIT, ReplyTarget, SlackReply
from sessions import notices, pauses, runner, turns
from sessions.models import Session, Turn
from sessions.runner import TurnDisplay
from simulator import defaults
from tests.factories import BindingFactory, TurnFactory
from tests.fakes.a2a_agent.steps import fail, input_required, text

# The runner reaches the database from its threads: they must see the test's rows.
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def slack(slack_fake, settings, monkeypatch):
    settings.SLACK_API_URL = slack_fake.url
    monkeypatch.setenv("SLACK_BOT_TOKEN", slack_fake.bot_token)
    return slack_fake


def said(slack_fake, a2a_agent, words: str = "what is the weather", **binding: Any):
    """Ada mentions the bot at the top level of the fake's channel; the turn is queued, not yet run."""
    bound = BindingFactory(
        channels=[defaults.CHANNEL_ID],
        agent_url=a2a_agent.url,
        connection__bot_user_id=slack_fake.bot_user_id,
        **{"output": "final", **binding},
    )
    ts = slack_fake.user_says(
        defaults.ADA, defaults.CHANNEL_ID, f"{slack_fake.bot_mention} {words}", deliver="none"
    )
    return TurnFactory(
        session__binding=bound,
        session__thread_ts=ts,
        message_ts=ts,
        user_id=defaults.ADA,
        text=f"{slack_fake.bot_mention} {words}",
    )


def run(work) -> Any:
    """Runs a coroutine of the runner as the worker's loop does: its database calls on a thread."""

    async def scenario() -> Any:
        database_thread = ThreadPoolExecutor(max_workers=1)
        asyncio.get_running_loop().set_default_executor(database_thread)
        try:
            return await work
        finally:
            await asyncio.get_running_loop().run_in_executor(database_thread, lambda: db.connection.close())

    return asyncio.run(scenario())


def thread_texts(slack_fake, turn: Turn) -> list[str]:
    return [message.text for message in slack_fake.thread(defaults.CHANNEL_ID, turn.session.thread_ts)[1:]]


def test_a_turn_sends_the_persons_words_and_posts_the_agents_answer(slack, a2a_agent):
    a2a_agent.script([text("Sunny all day.")])
    turn = said(slack, a2a_agent)
    run(runner.run_turn(turn.pk))
    assert a2a_agent.received[0].text == "Slack: Ada Lovelace (U0ADA): what is the weather"
    assert thread_texts(slack, turn) == ["Sunny all day."]
    turn.refresh_from_db()
    assert (turn.state, turn.outcome) == (Turn.State.DONE, Turn.Outcome.COMPLETED)
    assert turn.task_id == a2a_agent.received[0].server_task_id


def test_a_task_that_fails_ends_the_turn_failed_and_tells_the_thread_in_plain_words(slack, a2a_agent):
    a2a_agent.script([fail("boom")])
    turn = said(slack, a2a_agent)
    run(runner.run_turn(turn.pk))
    turn.refresh_from_db()
    assert (turn.state, turn.outcome) == (Turn.State.FAILED, Turn.Outcome.FAILED)
    assert thread_texts(slack, turn)[-1] == notices.TASK_FAILED


def test_a_question_without_askuser_cancels_the_task_and_tells_the_thread(slack, a2a_agent):
    a2a_agent.script([input_required("Which city?")])
    turn = said(slack, a2a_agent, ask_user=False)
    run(runner.run_turn(turn.pk))
    turn.refresh_from_db()
    assert (turn.state, turn.outcome) == (Turn.State.FAILED, Turn.Outcome.QUESTION_CANCELED)
    assert len(a2a_agent.calls("CancelTask")) == 1
    assert thread_texts(slack, turn)[-1] == notices.QUESTION_NOT_ENABLED


@dataclass
class RecordedPauses:
    """Pauses as the interactions app would hand them in, recording what the runner hands over."""

    put_pauses: list[Any] = field(default_factory=list)
    answered: list[int] = field(default_factory=list)

    async def put(self, turn: pauses.PausedTurn, pause: pauses.Pause) -> pauses.PauseEnd:
        self.put_pauses.append((turn.turn_id, pause))
        return pauses.PauseEnd(Turn.Outcome.ASKED)

    async def cancel_unasked(self, turn: pauses.PausedTurn, *, approval: bool) -> None:
        await turn.cancel()

    async def answer_message(self, turn: pauses.AnswerTurn, dialect) -> Message:
        self.answered.append(turn.turn_id)
        return Message(message_id=turn.message_id, role=Role.USER, parts=(TextPart("Paris"),))

    def take_typed_reply(self, session, *, message_ts, user_id, text, now) -> int | None:
        return None

    def holds(self, session_id: int, *, now) -> None:
        return None

    def held_sessions(self):
        return Session.objects.none().values("pk")

    def keep_undelivered(self, turn_id: int) -> pauses.UndeliveredAnswer:
        return pauses.UndeliveredAnswer.NOT_AN_ANSWER

    def settle_answer(self, turn_id: int) -> None:
        return None


@pytest.fixture
def recorded(monkeypatch) -> RecordedPauses:
    handed_in = RecordedPauses()
    monkeypatch.setattr(pauses, "_pauses", handed_in)
    return handed_in


def test_with_askuser_a_question_goes_to_the_pauses_handed_in_and_the_turn_ends_as_they_say(
    slack, a2a_agent, recorded
):
    a2a_agent.script([input_required("Which city?")])
    turn = said(slack, a2a_agent, ask_user=True)
    run(runner.run_turn(turn.pk))
    [(turn_id, question)] = recorded.put_pauses
    assert turn_id == turn.pk
    assert question.questions[0].text == "Which city?"
    assert not a2a_agent.calls("CancelTask")
    turn.refresh_from_db()
    assert (turn.state, turn.outcome) == (Turn.State.DONE, Turn.Outcome.ASKED)


def test_an_answer_turn_sends_what_the_pauses_handed_in_build(slack, a2a_agent, recorded):
    a2a_agent.script([text("Paris it is.")])
    asked = said(slack, a2a_agent)
    answer = TurnFactory(
        session=asked.session, message_ts="answer-1", kind=Turn.Kind.ANSWER, user_id=defaults.ADA, text=""
    )
    run(runner.run_turn(answer.pk))
    assert recorded.answered == [answer.pk]
    assert a2a_agent.received[0].text == "Paris"
    answer.refresh_from_db()
    assert answer.outcome == Turn.Outcome.COMPLETED


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


# The display of a turn keeps a bounded part of a runaway answer.
def display(max_messages: int) -> TurnDisplay:
    reply = SlackReply(
        AsyncWebClient(token="xoxb-unused"),
        ReplyTarget("C0001", "1.0", None, None, "key"),
        live=False,
        stream=False,
        max_messages=max_messages,
    )
    return TurnDisplay(reply, None, max_messages=max_messages)


def test_a_runaway_answer_is_kept_to_one_message_past_what_the_reply_may_post():
    shown = display(max_messages=2)

    for _ in range(400):
        shown.feed(TextDelta("x" * 1_000))

    assert len(shown.text) == 3 * MESSAGE_TEXT_LIMIT
    assert shown.received == 400_000


def test_a_replacing_text_is_bounded_the_same_way():
    shown = display(max_messages=1)
    shown.feed(TextDelta("a" * 50_000))

    shown.feed(TextDelta("b" * 100_000, replace=True))

    assert shown.text == "b" * (2 * MESSAGE_TEXT_LIMIT)
    assert shown.received == 100_000


def test_an_answer_within_the_limit_is_kept_whole():
    shown = display(max_messages=10)
    for part in ("Hello", ", ", "world."):
        shown.feed(TextDelta(part))

    assert (shown.text, shown.received) == ("Hello, world.", 13)


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
