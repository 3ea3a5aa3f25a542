import dataclasses

import pytest

from kourier.a2a.wire import (
    ArtifactUpdate,
    Message,
    Role,
    StatusUpdate,
    Task,
    TaskState,
    TextPart,
    ends_stream,
    text_of,
)


@pytest.mark.parametrize(
    ("state", "terminal", "paused"),
    [
        (TaskState.SUBMITTED, False, False),
        (TaskState.WORKING, False, False),
        (TaskState.INPUT_REQUIRED, False, True),
        (TaskState.AUTH_REQUIRED, False, True),
        (TaskState.COMPLETED, True, False),
        (TaskState.FAILED, True, False),
        (TaskState.CANCELED, True, False),
        (TaskState.REJECTED, True, False),
        (TaskState.UNKNOWN, False, False),
    ],
)
def test_state_kinds(state, terminal, paused):
    assert (state.is_terminal, state.is_paused, state.ends_stream) == (terminal, paused, terminal or paused)


def test_what_ends_a_stream():
    assert ends_stream(Message("m", Role.AGENT, ()))
    assert ends_stream(Task("t", "c", TaskState.INPUT_REQUIRED))
    assert not ends_stream(Task("t", "c", TaskState.SUBMITTED))
    assert ends_stream(StatusUpdate("t", "c", TaskState.WORKING, final=True))  # 0.3's flag
    assert not ends_stream(StatusUpdate("t", "c", TaskState.WORKING))
    assert not ends_stream(ArtifactUpdate("t", "c", "a", (), last_chunk=True))


def test_messages_accept_plain_role_strings_and_are_frozen():
    message = Message("m", "user", [TextPart("hi")])  # type: ignore[arg-type]
    assert message.role is Role.USER
    assert message.parts == (TextPart("hi"),)
    with pytest.raises(dataclasses.FrozenInstanceError):
        message.role = Role.AGENT  # type: ignore[misc]


def test_text_of_concatenates_text_parts_only():
    assert text_of([TextPart("a"), TextPart("b")]) == "ab"


def test_task_has_message():
    task = Task("t", "c", TaskState.COMPLETED, history=(Message("m1", Role.USER, ()),))
    assert task.has_message("m1")
    assert not task.has_message("m2")
