"""Stopping a running turn: one press wins by a conditional UPDATE and is audited; a press after the
end, a second press and a forged one change nothing; the runner cancels the agent's task, ends the
reply as Stopped and tells the thread who stopped it."""

from __future__ import annotations

import asyncio
import json
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from django import db
from django.utils import timezone

from audit.models import AuditEvent
from kourier.db import in_database_thread
from sessions import conversation, stops
from sessions.models import Turn
from sessions.turn_run import run_turn
from simulator import defaults
from tests.factories import TurnFactory
from tests.fakes.a2a_agent.gates import Gate
from tests.fakes.a2a_agent.steps import text, wait_for
from tests.sessions.running import alerted, said
from tests.support.turn_loop import run, thread_texts


def _running(**fields):
    return TurnFactory(state=Turn.State.RUNNING, **fields)


def _stop(turn: Turn, user_id: str = defaults.ADA, **where) -> stops.StopResult:
    return stops.request_stop(
        turn.pk,
        connection_id=where.get("connection_id", turn.connection_id),
        channel_id=where.get("channel_id", turn.channel_id),
        user_id=user_id,
    )


@pytest.mark.django_db
def test_a_press_on_a_running_turn_marks_who_stopped_it_and_is_audited():
    turn = _running()
    assert _stop(turn) is stops.StopResult.STOPPING
    assert stops.stopped_by(turn.pk) == defaults.ADA
    event = AuditEvent.objects.get(action="turn.stopped")
    assert (event.actor_id, event.subject) == (defaults.ADA, f"turn:{turn.pk}")


@pytest.mark.django_db
def test_a_second_press_changes_nothing_and_writes_no_audit_row():
    turn = _running()
    _stop(turn)
    assert _stop(turn, user_id="U0BOB") is stops.StopResult.OVER
    assert stops.stopped_by(turn.pk) == defaults.ADA
    assert AuditEvent.objects.filter(action="turn.stopped").count() == 1


@pytest.mark.django_db
@pytest.mark.parametrize("state", [Turn.State.DONE, Turn.State.FAILED, Turn.State.QUEUED])
def test_a_press_on_a_turn_that_does_not_run_changes_nothing(state):
    turn = TurnFactory(state=state)
    assert _stop(turn) is stops.StopResult.OVER
    assert stops.stopped_by(turn.pk) is None
    assert not AuditEvent.objects.filter(action="turn.stopped").exists()


@pytest.mark.django_db
def test_a_forged_press_naming_a_turn_of_another_channel_is_unknown_and_changes_nothing():
    turn = _running()
    assert _stop(turn, channel_id="C0ELSEWHERE") is stops.StopResult.UNKNOWN
    assert _stop(turn, connection_id=turn.connection_id + 1000) is stops.StopResult.UNKNOWN
    assert stops.stopped_by(turn.pk) is None
    assert not AuditEvent.objects.filter(action="turn.stopped").exists()


@pytest.mark.requires_postgres("SQLite serializes every write, so concurrent presses cannot race there")
@pytest.mark.django_db(transaction=True)
def test_of_ten_presses_at_once_exactly_one_stops_the_turn_and_is_audited():
    turn = _running()
    presses = 10
    start = threading.Barrier(presses)
    results: list[stops.StopResult] = []

    def press(user: str) -> None:
        try:
            start.wait()
            results.append(_stop(turn, user))
        finally:
            db.connection.close()

    threads = [threading.Thread(target=press, args=(f"U{n:08d}",)) for n in range(presses)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(result.value for result in results) == ["over"] * (presses - 1) + ["stopping"]
    [event] = AuditEvent.objects.filter(action="turn.stopped")
    assert event.actor_id == stops.stopped_by(turn.pk)


@pytest.mark.parametrize(("value", "turn_id"), [("42", 42), ("", 0), ("4x", 0), ("٣", 0), ("9" * 30, 0)])
def test_only_a_plain_number_is_a_stop_buttons_turn(value, turn_id):
    assert stops.turn_id_of(value) == turn_id


@pytest.fixture
def slack(slack_fake, settings, monkeypatch):
    settings.SLACK_API_URL = slack_fake.url
    monkeypatch.setenv("SLACK_BOT_TOKEN", slack_fake.bot_token)
    return slack_fake


async def _run_and_stop(turn: Turn, gate: Gate, user_id: str) -> None:
    running = asyncio.create_task(run_turn(turn.pk))
    # The loop's one executor thread is the database's (turn_loop.run): the gate is watched from another.
    with ThreadPoolExecutor(max_workers=1) as watcher:
        await asyncio.get_running_loop().run_in_executor(watcher, gate.wait_reached)
    stopped = await in_database_thread(lambda: _stop(Turn.objects.get(pk=turn.pk), user_id))()
    assert stopped is stops.StopResult.STOPPING
    await running


@pytest.mark.django_db(transaction=True)
def test_a_stopped_turn_cancels_the_agents_task_and_tells_the_thread_who_stopped_it(slack, a2a_agent):
    gate = Gate("slow")
    a2a_agent.script([text("Looking at the logs…"), wait_for(gate)])
    turn = said(slack, a2a_agent)
    try:
        run(_run_and_stop(turn, gate, defaults.ADA))
    finally:
        gate.open()
    turn.refresh_from_db()
    assert (turn.state, turn.outcome) == (Turn.State.DONE, Turn.Outcome.STOPPED)
    assert len(a2a_agent.calls("CancelTask")) == 1
    assert thread_texts(slack, turn)[-1] == f"Stopped by <@{defaults.ADA}>."


@pytest.mark.django_db(transaction=True)
def test_a_live_alert_replys_working_card_carries_stop_until_the_turn_ends(slack, a2a_agent):
    gate = Gate("slow")
    a2a_agent.script([text("Looking at the logs…"), wait_for(gate)])
    turn = alerted(slack, a2a_agent, output="live")
    try:
        run(_run_and_stop(turn, gate, defaults.ADA))
    finally:
        gate.open()
    turn.refresh_from_db()
    assert turn.outcome == Turn.Outcome.STOPPED
    writes = [call for call in slack.calls() if call.method in ("chat.postMessage", "chat.update")]
    posted, *updates, told = writes
    assert _stop_values(posted.args) == [str(turn.pk)]  # the Working… reply carried its Stop
    assert updates
    assert updates[-1].args["ts"] == turn.reply_ts
    assert not _stop_values(updates[-1].args)  # the reply's last write took it away
    assert (told.args.get("text") or told.args.get("markdown_text")) == f"Stopped by <@{defaults.ADA}>."


def _stop_values(args: dict) -> list[str] | None:
    """The Stop buttons' values a write carries; None for a write without blocks."""
    blocks = args.get("blocks")
    if blocks is None:
        return None
    if isinstance(blocks, str):
        blocks = json.loads(blocks)
    return [
        element["value"]
        for block in blocks
        if block.get("type") == "actions"
        for element in block.get("elements", [])
        if element.get("action_id") == stops.STOP_ACTION
    ]


async def _run_and_stop_the_stream(slack, turn: Turn, first: Gate, second: Gate) -> None:
    running = asyncio.create_task(run_turn(turn.pk))
    with ThreadPoolExecutor(max_workers=1) as watcher:
        await asyncio.get_running_loop().run_in_executor(watcher, first.wait_reached)
        reply_ts = await asyncio.get_running_loop().run_in_executor(watcher, _streaming_reply, slack, turn)
        slack.user_stops_stream(defaults.CHANNEL_ID, reply_ts)
        first.open()  # the agent writes on: Slack answers the append that the person stopped the stream
        await running


def _streaming_reply(slack, turn: Turn) -> str:
    def streaming() -> list[str]:
        return [
            message.ts
            for message in slack.thread(defaults.CHANNEL_ID, turn.message_ts)
            if message.is_bot and message.stream_phase == "streaming"
        ]

    slack.wait_until(lambda: bool(streaming()), timeout=10)
    return streaming()[0]


@pytest.mark.django_db(transaction=True)
def test_slacks_own_stop_on_a_chat_threads_stream_stops_the_turn_as_the_persons(slack, a2a_agent):
    first, second = Gate("first"), Gate("second")
    a2a_agent.script(
        [text("Looking at the logs…"), wait_for(first), text(" Still looking."), wait_for(second)]
    )
    turn = said(slack, a2a_agent, output="live", connection__team_id=defaults.TEAM_ID)
    try:
        run(_run_and_stop_the_stream(slack, turn, first, second))
    finally:
        first.open()
        second.open()
    turn.refresh_from_db()
    assert (turn.outcome, turn.stopped_by) == (Turn.Outcome.STOPPED, defaults.ADA)
    assert len(a2a_agent.calls("CancelTask")) == 1
    assert thread_texts(slack, turn)[-1] == f"Stopped by <@{defaults.ADA}>."
    assert AuditEvent.objects.get(action="turn.stopped").details["control"] == stops.SLACK_STREAM_STOP


@pytest.mark.django_db
def test_with_stopby_requester_only_the_person_who_asked_stops_the_turn():
    turn = _running(session__binding__stop_by="requester", user_id=defaults.ADA)
    assert _stop(turn, user_id=defaults.GRACE) is stops.StopResult.NOT_THE_REQUESTER
    assert stops.stopped_by(turn.pk) is None
    assert not AuditEvent.objects.filter(action="turn.stopped").exists()
    assert _stop(turn, user_id=defaults.ADA) is stops.StopResult.STOPPING


@pytest.mark.django_db
def test_with_stopby_requester_a_triggers_turn_names_nobody_so_any_member_stops_it():
    turn = _running(session__binding__stop_by="requester", user_id="")
    assert _stop(turn, user_id=defaults.GRACE) is stops.StopResult.STOPPING


async def _run_and_mark_stopped_without_word(turn: Turn, gate: Gate, user_id: str) -> None:
    running = asyncio.create_task(run_turn(turn.pk))
    with ThreadPoolExecutor(max_workers=1) as watcher:
        await asyncio.get_running_loop().run_in_executor(watcher, gate.wait_reached)
    # The row says stopped, the shared cache never heard (a Redis that lost the word).
    await in_database_thread(
        lambda: Turn.objects.filter(pk=turn.pk).update(stopped_by=user_id, stop_requested_at=timezone.now())
    )()
    await running


@pytest.mark.django_db(transaction=True)
def test_a_stop_the_shared_cache_lost_is_still_found_on_the_turns_row(slack, a2a_agent, monkeypatch):
    monkeypatch.setattr(conversation, "STOP_ROW_LOOKS", 2)
    gate = Gate("slow")
    a2a_agent.script([text("Looking at the logs…"), wait_for(gate)])
    turn = said(slack, a2a_agent)
    try:
        run(_run_and_mark_stopped_without_word(turn, gate, defaults.GRACE))
    finally:
        gate.open()
    turn.refresh_from_db()
    assert turn.outcome == Turn.Outcome.STOPPED
    assert thread_texts(slack, turn)[-1] == f"Stopped by <@{defaults.GRACE}>."


@pytest.mark.django_db(transaction=True)
def test_a_committed_stop_leaves_its_word_for_the_runner_in_the_shared_cache():
    turn = _running(started_at=timezone.now())
    _stop(turn, defaults.GRACE)
    assert asyncio.run(stops.signalled_stop(turn.pk, turn.started_at)) == defaults.GRACE
    assert asyncio.run(stops.signalled_stop(turn.pk, None)) is None  # another run of that id hears nothing
