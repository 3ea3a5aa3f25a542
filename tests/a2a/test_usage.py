"""Model tokens in event metadata (kourier/a2a/usage.py) and what a turn's reader adds up: kagent 0.10's
per-call usage (the Python runtime's kagent_ key on real captures, the Go runtime's adk_ key on its
golden transcripts), kagent 1.0's task total, and usage of the wrong type ignored."""

import pytest

from kourier.a2a.dialects import kagent
from kourier.a2a.usage import MAX_TOKEN_COUNT, TokenCount, per_call_usage, task_total_usage
from kourier.a2a.wire import Message, Role, StatusUpdate, TaskState, TextPart
from tests.a2a.transcripts import GO, V010, exchanges, wire_events

USAGE_V1 = "https://kagent.dev/extensions/usage/v1"


@pytest.mark.parametrize("key", ["kagent_usage_metadata", "adk_usage_metadata"])
def test_a_model_calls_usage_is_read_from_either_runtimes_key(key):
    metadata = {key: {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}}
    assert per_call_usage(metadata) == TokenCount(10, 5)


def test_kagent_1_0s_usage_extension_is_the_task_total():
    metadata = {USAGE_V1: {"inputTokens": 250.0, "outputTokens": 30, "totalTokens": 280, "models": []}}
    assert task_total_usage(metadata) == TokenCount(250, 30)


@pytest.mark.parametrize(
    "usage",
    [
        pytest.param({"promptTokenCount": "10", "candidatesTokenCount": 5}, id="a string"),
        pytest.param({"promptTokenCount": -1, "candidatesTokenCount": 5}, id="negative"),
        pytest.param({"promptTokenCount": 1.5, "candidatesTokenCount": 5}, id="a fraction"),
        pytest.param({"promptTokenCount": True, "candidatesTokenCount": 5}, id="a boolean"),
        pytest.param({"promptTokenCount": float("nan"), "candidatesTokenCount": 5}, id="NaN"),
        pytest.param({"promptTokenCount": float("inf"), "candidatesTokenCount": 5}, id="infinity"),
        pytest.param({"promptTokenCount": 5, "candidatesTokenCount": float("-inf")}, id="minus infinity"),
        pytest.param({"promptTokenCount": 1e300, "candidatesTokenCount": 5}, id="past any count"),
        pytest.param({"promptTokenCount": MAX_TOKEN_COUNT + 1, "candidatesTokenCount": 5}, id="past the cap"),
        pytest.param({"promptTokenCount": None, "candidatesTokenCount": "NaN"}, id="a string NaN"),
        pytest.param({"promptTokenCount": [1], "candidatesTokenCount": {"n": 1}}, id="a list and an object"),
        pytest.param({"promptTokenCount": 0}, id="nothing counted"),
        pytest.param("lots", id="not a mapping"),
    ],
)
def test_usage_of_the_wrong_type_is_no_usage(usage):
    assert per_call_usage({"kagent_usage_metadata": usage}) is None
    assert task_total_usage({USAGE_V1: usage}) is None


def turn_usage(line, name, index):
    reader = kagent.reader()
    for event in wire_events(line, exchanges(line, name)[index]):
        reader.feed(event)
    return reader.usage, reader.usage_is_task_total


def test_the_python_runtimes_turn_counts_each_model_call_once():
    # The model call's message is sent as it ends, repeated in the closing artifact and status: once.
    assert turn_usage(V010, "01_two_tools_approve_one_deny_one", 0) == (TokenCount(10, 5), False)


def test_the_go_runtimes_turns_are_read_from_adk_usage_metadata():
    assert turn_usage(GO, "01_two_tools_approve_one_deny_one", 0) == (TokenCount(120, 30), False)
    assert turn_usage(GO, "01_two_tools_approve_one_deny_one", 1) == (TokenCount(180, 12), False)


def test_a_turn_of_kagent_1_0_reports_the_task_total_of_its_final_status():
    reader = kagent.reader()
    reader.feed(
        StatusUpdate(
            task_id="t",
            context_id="c",
            state=TaskState.COMPLETED,
            message=Message("m", Role.AGENT, (TextPart("Done."),)),
            metadata={USAGE_V1: {"inputTokens": 250, "outputTokens": 30}},
        )
    )
    assert (reader.usage, reader.usage_is_task_total) == (TokenCount(250, 30), True)


def test_a_turn_with_garbage_usage_reads_as_one_without_and_still_ends():
    reader = kagent.reader()
    events = reader.feed(
        StatusUpdate(
            task_id="t",
            context_id="c",
            state=TaskState.COMPLETED,
            message=Message("m", Role.AGENT, (TextPart("Done."),), metadata={"kagent_usage_metadata": ["x"]}),
            metadata={USAGE_V1: "lots"},
        )
    )
    assert reader.usage is None
    assert events[-1].state is TaskState.COMPLETED
