import base64

import pytest
from a2a.types import a2a_pb2
from google.protobuf import json_format

from kourier.a2a.codec_v10 import CODEC
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
from tests.a2a.transcripts import V1ALPHA, exchanges

TRANSCRIPTS = [
    "01_two_tools_approve_one_deny_one",
    "02_pause_without_extension_optin",
    "03_ask_user",
    "04_invalid_hitl_responses",
    "05_errors_and_lifecycle",
]


@pytest.mark.parametrize("name", TRANSCRIPTS)
def test_every_captured_kagent_1_0_result_decodes(name):
    decoded = 0
    for exchange in exchanges(V1ALPHA, name):
        for result in exchange.results:
            if exchange.method == "ListTasks":
                CODEC.decode_list_tasks(result)
            elif exchange.method in ("GetTask", "CancelTask"):
                CODEC.decode_task(result)
            else:  # SendMessage answers {"task": ...}, streams send one StreamResponse per event
                CODEC.decode_stream_event(result)
            decoded += 1
    assert decoded > 0


def test_stream_of_a_turn_decodes_to_task_artifacts_and_status():
    turn = exchanges(V1ALPHA, "01_two_tools_approve_one_deny_one")[0]
    events = [CODEC.decode_stream_event(result) for result in turn.results]

    assert isinstance(events[0], Task)
    assert events[0].state is TaskState.SUBMITTED
    assert [type(event) for event in events[1:]] == [
        StatusUpdate,
        ArtifactUpdate,
        ArtifactUpdate,
        ArtifactUpdate,
        ArtifactUpdate,
        StatusUpdate,
        ArtifactUpdate,
        StatusUpdate,
    ]
    first_chunk, second_chunk, full = events[2], events[3], events[5]
    assert (first_chunk.append, first_chunk.last_chunk) == (False, False)
    assert (second_chunk.append, second_chunk.parts) == (True, (TextPart("bers and check the"),))
    assert (full.append, full.last_chunk) == (False, True)
    assert full.parts[1] == DataPart(
        data={"name": "add_numbers", "args": {"a": 2.0, "b": 3.0}, "id": "call_add_1"},
        metadata={"kagent.dev/a2a/part-type": "function_call"},
    )
    pause = events[-1]
    assert pause.state is TaskState.INPUT_REQUIRED
    assert pause.final, "1.0 has no final flag: a paused state ends the stream"
    assert pause.message.role is Role.AGENT
    assert pause.message.extensions == ("https://kagent.dev/extensions/hitl/v1",)


def test_list_tasks_reads_tasks_and_treats_empty_strings_as_unset():
    listing = exchanges(V1ALPHA, "05_errors_and_lifecycle")[-1]
    tasks, next_page = CODEC.decode_list_tasks(listing.results[0])

    assert next_page is None  # "nextPageToken": ""
    assert [task.state for task in tasks] == [TaskState.COMPLETED, TaskState.COMPLETED]
    agent_message = tasks[0].history[1]
    assert (agent_message.context_id, agent_message.task_id) == (None, None)  # sent as ""
    assert tasks[0].has_message("cf0aa86e-e3a0-4274-bacb-6d604fc4ec3c")


def test_numbers_are_kept_as_sent_not_turned_into_floats():
    event = CODEC.decode_stream_event(
        {
            "artifactUpdate": {
                "taskId": "t",
                "artifact": {"artifactId": "a", "parts": [{"data": {"count": 12345678901234567890, "n": 2}}]},
            }
        }
    )
    assert event.parts[0].data == {"count": 12345678901234567890, "n": 2}
    assert type(event.parts[0].data["n"]) is int


@pytest.mark.parametrize(
    ("wire", "state"),
    [
        ("TASK_STATE_WORKING", TaskState.WORKING),
        ("TASK_STATE_INPUT_REQUIRED", TaskState.INPUT_REQUIRED),
        ("TASK_STATE_AUTH_REQUIRED", TaskState.AUTH_REQUIRED),
        ("TASK_STATE_CANCELED", TaskState.CANCELED),
        ("TASK_STATE_REJECTED", TaskState.REJECTED),
        (4, TaskState.FAILED),  # protobuf JSON may send the enum number
        ("TASK_STATE_UNSPECIFIED", TaskState.UNKNOWN),
        ("TASK_STATE_FROM_THE_FUTURE", TaskState.UNKNOWN),
    ],
)
def test_states(wire, state):
    event = CODEC.decode_stream_event({"statusUpdate": {"taskId": "t", "status": {"state": wire}}})
    assert event.state is state


def test_file_parts_by_url_and_inline():
    message = CODEC.decode_stream_event(
        {
            "message": {
                "messageId": "m",
                "role": "ROLE_AGENT",
                "parts": [
                    {
                        "url": "https://example.test/report.pdf",
                        "mediaType": "application/pdf",
                        "filename": "r.pdf",
                    },
                    {"raw": base64.b64encode(b"\x00hi").decode(), "mediaType": "application/octet-stream"},
                ],
            }
        }
    )
    assert message.parts == (
        FilePart(url="https://example.test/report.pdf", media_type="application/pdf", filename="r.pdf"),
        FilePart(raw=b"\x00hi", media_type="application/octet-stream"),
    )


@pytest.mark.parametrize(
    "garbage",
    [
        [],
        {},
        {"unknown": {}},
        {"kind": "status-update", "taskId": "t", "status": {"state": "working"}, "final": False},  # 0.3 shape
        {"statusUpdate": {"taskId": 5, "status": {}}},
        {"statusUpdate": {"status": {"state": "TASK_STATE_WORKING"}}},  # no task id
        {"artifactUpdate": {"taskId": "t", "artifact": {"artifactId": "a", "parts": [{"bogus": 1}]}}},
        {"message": {"messageId": "m", "parts": [{"raw": "not base64!"}]}},
    ],
)
def test_shapes_that_are_not_a2a_1_0_are_refused(garbage):
    with pytest.raises(InvalidAgentResponse):
        CODEC.decode_stream_event(garbage)


def test_encoded_message_is_valid_1_0_json_and_decodes_back():
    message = Message(
        message_id="m-1",
        role=Role.USER,
        parts=(
            TextPart("hello", metadata={"k": "v"}),
            DataPart({"decision_type": "approve"}),
            FilePart(raw=b"abc", media_type="text/plain", filename="a.txt"),
            FilePart(url="https://example.test/x"),
        ),
        context_id="ctx",
        task_id="task",
        metadata={"https://kagent.dev/extensions/hitl/v1": {"type": "ask_user_response"}},
        extensions=("https://kagent.dev/extensions/hitl/v1",),
    )
    encoded = CODEC.encode_message(message)

    json_format.ParseDict(encoded, a2a_pb2.Message())  # strict: no unknown members
    assert encoded["role"] == "ROLE_USER"
    assert encoded["parts"][0] == {"text": "hello", "metadata": {"k": "v"}}
    assert CODEC.decode_stream_event({"message": encoded}) == message


def test_unset_members_are_left_out_and_headers_name_the_version():
    encoded = CODEC.encode_message(Message(message_id="m", role="user", parts=(TextPart("hi"),)))
    assert encoded == {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}]}
    assert CODEC.headers(()) == {"A2A-Version": "1.0"}
    assert CODEC.headers(("urn:a", "urn:b")) == {"A2A-Version": "1.0", "A2A-Extensions": "urn:a,urn:b"}


def test_captured_request_message_encodes_the_same():
    decision = exchanges(V1ALPHA, "01_two_tools_approve_one_deny_one")[2]
    sent = decision.request["params"]["message"]
    message = CODEC.decode_stream_event({"message": sent})
    assert CODEC.encode_message(message) == sent
