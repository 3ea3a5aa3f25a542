"""One turn's run, against the scripted A2A agent and the Slack fake: the person's words reach the
agent, the answer reaches the thread, a failure is told in plain words, a pause goes to the pauses
handed in (sessions/pauses.py) or is cancelled, a decision goes under the Binding's service identity,
and with output: final, chat.progress changes nothing."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from kourier.a2a.wire import Message, Role, TextPart
from sessions import notices, pauses
from sessions.models import Session, Turn
from sessions.turn_run import run_turn
from simulator import defaults
from tests.factories import TurnFactory
from tests.fakes.a2a_agent.steps import fail, input_required, text, tool_call, tool_result
from tests.sessions.running import alerted, said
from tests.support.turn_loop import run, thread_texts

# The runner reaches the database from its threads: they must see the test's rows.
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def slack(slack_fake, settings, monkeypatch):
    settings.SLACK_API_URL = slack_fake.url
    monkeypatch.setenv("SLACK_BOT_TOKEN", slack_fake.bot_token)
    return slack_fake


def test_a_turn_sends_the_persons_words_and_posts_the_agents_answer(slack, a2a_agent):
    a2a_agent.script([text("Sunny all day.")])
    turn = said(slack, a2a_agent)
    run(run_turn(turn.pk))
    assert a2a_agent.received[0].text == "Slack: Ada Lovelace (U0ADA): what is the weather"
    assert thread_texts(slack, turn) == ["Sunny all day."]
    turn.refresh_from_db()
    assert (turn.state, turn.outcome) == (Turn.State.DONE, Turn.Outcome.COMPLETED)
    assert turn.task_id == a2a_agent.received[0].server_task_id


def test_a_task_that_fails_ends_the_turn_failed_and_tells_the_thread_in_plain_words(slack, a2a_agent):
    a2a_agent.script([fail("boom")])
    turn = said(slack, a2a_agent)
    run(run_turn(turn.pk))
    turn.refresh_from_db()
    assert (turn.state, turn.outcome) == (Turn.State.FAILED, Turn.Outcome.FAILED)
    assert thread_texts(slack, turn)[-1] == notices.TASK_FAILED


def test_a_question_without_askuser_cancels_the_task_and_tells_the_thread(slack, a2a_agent):
    a2a_agent.script([input_required("Which city?")])
    turn = said(slack, a2a_agent, ask_user=False)
    run(run_turn(turn.pk))
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
    run(run_turn(turn.pk))
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
    run(run_turn(answer.pk))
    assert recorded.answered == [answer.pk]
    assert a2a_agent.received[0].text == "Paris"
    answer.refresh_from_db()
    assert answer.outcome == Turn.Outcome.COMPLETED


def test_a_decision_turn_is_sent_under_the_bindings_service_identity(slack, a2a_agent, recorded, monkeypatch):
    monkeypatch.setenv("OPS_AGENT_TOKEN", "Bearer ops-service")
    a2a_agent.script([text("Restarted.")])
    asked = said(slack, a2a_agent, agent_headers={"Authorization": "OPS_AGENT_TOKEN"})
    decision = TurnFactory(
        session=asked.session, message_ts="decision-1", kind=Turn.Kind.ANSWER, user_id=defaults.GRACE, text=""
    )  # Grace approved: her decision is the turn's answer

    run(run_turn(decision.pk))

    assert recorded.answered == [decision.pk]
    assert "POST" in {request.http_method for request in a2a_agent.requests}  # the decision sent
    assert {request.authorization for request in a2a_agent.requests} == {"Bearer ops-service"}


PROGRESS_MODES = ("steps", "steps-and-activity", "activity")
REPLY_WRITES = ("chat.startStream", "chat.appendStream", "chat.stopStream", "chat.postMessage", "chat.update")


@pytest.mark.parametrize("progress", PROGRESS_MODES)
@pytest.mark.parametrize("begin", [said, alerted], ids=["chat-thread", "alert-thread"])
def test_with_output_final_chat_progress_has_no_effect(slack, a2a_agent, begin, progress):
    a2a_agent.script(
        [tool_call("c1", "search", {"q": "disk"}), tool_result("c1", "search", {"hits": 3}), text("Full.")]
    )
    turn = begin(slack, a2a_agent, output="final", progress=progress)

    run(run_turn(turn.pk))

    # One post when the turn ends, as under steps: no card, line, Working…, activity card or status.
    writes = [
        call.method for call in slack.calls() if call.method in REPLY_WRITES or "assistant" in call.method
    ]
    assert writes == ["chat.postMessage"]
    [reply] = slack.thread(defaults.CHANNEL_ID, turn.session.thread_ts)[1:]
    assert (reply.text, reply.cards, reply.edited) == ("Full.", [], False)
