import pytest
from a2a.compat.v0_3 import types as v03

from kourier.a2a.codec_v03 import CODEC
from kourier.a2a.errors import InvalidAgentResponse
from kourier.a2a.wire import (
    ArtifactUpdate,
    DataPart,
    FilePart,
    Message,
    Role,
    StatusUpdate,
    Task,
    TaskState,
    TextPart,
)
from tests.a2a.transcripts import V010, exchanges

TRANSCRIPTS = [
    "01_two_tools_approve_one_deny_one",
    "03_ask_user",
    "04_plain_text_reply_while_paused",
    "05_errors_and_lifecycle",
]


@pytest.mark.parametrize("name", TRANSCRIPTS)
def test_every_captured_kagent_0_10_result_decodes(name):
    decoded = 0
    for exchange in exchanges(V010, name):
        for result in exchange.results:
            if exchange.method in ("tasks/get", "tasks/cancel"):
                assert isinstance(CODEC.decode_task(result), Task)
            else:
                CODEC.decode_stream_event(result)
            decoded += 1
    assert decoded > 0


def test_stream_of_a_turn_decodes_with_final_flag_and_partial_metadata():
    turn = exchanges(V010, "01_two_tools_approve_one_deny_one")[0]
    events = [CODEC.decode_stream_event(result) for result in turn.results]

    assert [type(event) for event in events] == [StatusUpdate] * 8
    assert events[0].message.role is Role.USER  # the request echoed back
    assert events[2].message.metadata["kagent_adk_partial"] is True
    assert events[2].message.parts == (TextPart("I will add the num"),)
    assert [event.final for event in events] == [False] * 7 + [True]
    assert events[-1].state is TaskState.INPUT_REQUIRED
    confirmation = events[-1].message.parts[0]
    assert isinstance(confirmation, DataPart)
    assert confirmation.metadata == {"kagent_type": "function_call", "kagent_is_long_running": True}


def test_the_closing_artifact_and_completed_status():
    second_turn = exchanges(V010, "01_two_tools_approve_one_deny_one")[2]
    artifact, completed = (CODEC.decode_stream_event(result) for result in second_turn.results[-2:])

    assert isinstance(artifact, ArtifactUpdate)
    assert (artifact.append, artifact.last_chunk) == (False, True)
    assert completed.state is TaskState.COMPLETED
    assert completed.final


@pytest.mark.parametrize(
    "garbage",
    [
        "text",
        {"kind": "something-else"},
        {"statusUpdate": {"taskId": "t", "status": {"state": "TASK_STATE_WORKING"}}},  # 1.0 shape
        {
            "kind": "status-update",
            "taskId": "t",
            "contextId": "c",
            "final": False,
            "status": {"state": "napping"},
        },
        {
            "kind": "status-update",
            "contextId": "c",
            "final": False,
            "status": {"state": "working"},
        },  # no taskId
        {"kind": "message", "messageId": "m", "role": "agent", "parts": [{"kind": "sound"}]},
    ],
)
def test_shapes_that_are_not_a2a_0_3_are_refused(garbage):
    with pytest.raises(InvalidAgentResponse):
        CODEC.decode_stream_event(garbage)


def test_encoded_message_is_valid_0_3_json_and_decodes_back():
    message = Message(
        message_id="m-1",
        role=Role.USER,
        parts=(
            DataPart({"decision_type": "batch", "decisions": {"call_1": "approve"}}),
            TextPart("Batch decision: 1 approved, 0 rejected"),
            FilePart(raw=b"abc", media_type="text/plain", filename="a.txt"),
            FilePart(url="https://example.test/x"),
        ),
        context_id="ctx",
        task_id="task",
    )
    encoded = CODEC.encode_message(message)

    v03.Message.model_validate(encoded)
    assert encoded["role"] == "user"
    assert encoded["parts"][2] == {
        "kind": "file",
        "file": {"bytes": "YWJj", "mimeType": "text/plain", "name": "a.txt"},
    }
    assert CODEC.decode_stream_event(encoded) == message


def test_captured_request_message_encodes_the_same():
    decision = exchanges(V010, "01_two_tools_approve_one_deny_one")[2]
    sent = decision.request["params"]["message"]
    assert CODEC.encode_message(CODEC.decode_stream_event(sent)) == sent


def test_headers_name_the_version_and_both_extension_header_spellings():
    assert CODEC.headers(()) == {"A2A-Version": "0.3"}
    assert CODEC.headers(("urn:a",)) == {
        "A2A-Version": "0.3",
        "A2A-Extensions": "urn:a",
        "X-A2A-Extensions": "urn:a",
    }
