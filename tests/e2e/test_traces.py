"""One mention, one trace: with an OTLP endpoint configured, the web process's span of Slack's event,
the queued task's publish, the worker's turn with its Slack calls and its A2A request, and the real kagent runtime's own spans
(each line's, set up as kagent sets itself up) reach one receiver in one trace; no span carries the
message's text. An alert's trace runs from the trigger's request through the delivery task (its
traceparent in the task's headers) to the turn it starts."""

import pytest

from sessions.models import Turn
from tests.e2e.helpers import (
    TRIGGER_TOKEN,
    TRIGGER_TOKEN_ENV,
    TRIGGERS,
    am_alert,
    deliver,
    group,
    wait_for_turns_to_end,
)
from tests.fakes.a2a_agent import steps
from tests.support.kagent_runtime.script import Script
from tests.support.kagent_runtime.script import Turn as ModelTurn
from tests.support.otlp_receiver import otlp_receiver

pytestmark = pytest.mark.slow

WAIT = 60.0  # the runtime's first model turn imports much of ADK
WEB, WORKER, AGENT = "kourier-web", "kourier-worker", "kourier_conformance_agent"
MESSAGE = "what broke in payments-7 overnight"


def traced(receiver_url: str) -> dict[str, str]:
    return {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver_url, "OTEL_BSP_SCHEDULE_DELAY": "100"}


def test_a_mention_is_one_trace_from_slacks_event_through_the_worker_into_the_agent(
    make_world, start_kagent_runtime
):
    with otlp_receiver() as receiver:
        runtime = start_kagent_runtime(Script([ModelTurn("Nothing broke.")]), traces_to=receiver.url)
        world = make_world(agent_url=runtime.url, dialect="kagent-v1", env=traced(receiver.url))
        world.mention(MESSAGE)
        wait_for_turns_to_end(world, 1, timeout=WAIT)
        turn = Turn.objects.get()
        trace_id = turn.traceparent.split("-")[1]

        def whole(spans):
            # Each process exports on its own schedule: wait for the agent's spans and for the
            # worker's request they hang under, and for the turn's span, which ends last.
            ours = {s.span_id: s for s in spans if s.trace_id == trace_id}
            joined = any(
                s.service == AGENT and ours.get(s.parent_span_id, s).service == WORKER for s in ours.values()
            )
            names = {s.name for s in ours.values()}
            modelled = any("call_llm" in name or "generate_content" in name for name in names)
            return joined and modelled and {"slack.event", "kourier.turn", "slack.reactions.add"} <= names

        spans = [s for s in receiver.wait_for(whole, timeout=WAIT) if s.trace_id == trace_id]

    by_id = {span.span_id: span for span in spans}
    event = next(s for s in spans if s.name == "slack.event")
    turn_span = next(s for s in spans if s.name == "kourier.turn")
    assert event.service == WEB
    assert turn_span.service == WORKER
    assert turn_span.parent_span_id == event.span_id
    assert turn_span.attributes["kourier.turn_id"] == turn.pk
    assert turn_span.attributes["kourier.session_id"] == turn.session_id
    assert turn_span.attributes["kourier.binding"] == world.binding.name
    # The turn's Slack calls went straight through: each is an event of the turn's span, with its outcome.
    calls = dict(zip(turn_span.events, turn_span.event_attributes, strict=True))
    assert {"slack.chat.startStream", "slack.chat.stopStream", "slack.reactions.remove"} <= calls.keys()
    assert all(attributes["slack.outcome"] == "ok" for attributes in calls.values())
    # The acknowledgment's reaction, added before the turn runs, is a span of the event's trace: no span
    # of the worker's records it.
    added = next(s for s in spans if s.name == "slack.reactions.add")
    assert (added.service, added.parent_span_id, added.attributes["slack.outcome"]) == (
        WORKER,
        event.span_id,
        "ok",
    )
    # The queued task's publish, in the web process; Kourier's Redis bookkeeping makes no spans.
    published = next(s for s in spans if s.name == "LPUSH")
    assert (published.service, published.parent_span_id) == (WEB, event.span_id)
    assert [s.name for s in spans if s.service == WORKER and "db.system" in s.attributes] == []
    agent_spans = [s for s in spans if s.service == AGENT]
    # The agent's spans hang under the worker's A2A request: its traceparent reached the agent.
    roots_in_agent = [s for s in agent_spans if by_id.get(s.parent_span_id, s).service != AGENT]
    assert roots_in_agent
    assert all(by_id[s.parent_span_id].service == WORKER for s in roots_in_agent)
    assert any("call_llm" in s.name or "generate_content" in s.name for s in agent_spans)
    ours = [s for s in spans if s.service in (WEB, WORKER)]
    assert not any(MESSAGE in repr((s.name, s.attributes, s.event_attributes)) for s in ours)


def test_an_alerts_trace_runs_from_the_trigger_through_the_delivery_task_to_its_turn(make_world, a2a_agent):
    a2a_agent.script([steps.text("Looking into it.")])
    with otlp_receiver() as receiver:
        world = make_world(
            agent_url=a2a_agent.url,
            triggers=TRIGGERS,
            env={TRIGGER_TOKEN_ENV: TRIGGER_TOKEN, **traced(receiver.url)},
        )
        deliver(world, group(am_alert()))
        wait_for_turns_to_end(world, 1, timeout=WAIT)
        turn = Turn.objects.get()
        trace_id = turn.traceparent.split("-")[1]

        def whole(spans):
            names = {span.name for span in spans if span.trace_id == trace_id}
            return {"alert.delivery", "kourier.turn"} <= names

        spans = [s for s in receiver.wait_for(whole, timeout=WAIT) if s.trace_id == trace_id]

    delivery = next(s for s in spans if s.name == "alert.delivery")
    assert delivery.service == WEB
    assert delivery.attributes["kourier.binding"] == world.binding.name
    task = next(s for s in spans if s.service == WORKER and s.name.startswith("run/") and "alert" in s.name)
    assert task.trace_id == delivery.trace_id  # the queued task continued the request's trace
    turn_span = next(s for s in spans if s.name == "kourier.turn")
    assert turn_span.attributes["kourier.turn_id"] == turn.pk
