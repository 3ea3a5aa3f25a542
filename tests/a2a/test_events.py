import dataclasses
import json

import pytest

from kourier.a2a.events import (
    AnswerFormat,
    ApprovalRequest,
    AskedQuestion,
    Question,
    TaskEnded,
    TextDelta,
    ToolToApprove,
)
from kourier.a2a.wire import TaskState


def test_events_are_frozen():
    delta = TextDelta("hi")
    with pytest.raises(dataclasses.FrozenInstanceError):
        delta.text = "other"  # type: ignore[misc]
    assert TaskEnded(TaskState.COMPLETED) == TaskEnded(TaskState.COMPLETED, None)


def test_pause_events_store_as_json_and_come_back_equal():
    question = Question(
        questions=(AskedQuestion("Which?", ("a", "b"), multiple=True), AskedQuestion("Why?")),
        task_id="T",
        context_id="C",
        answer_format=AnswerFormat.HITL_V1,
        agent="helper",
        answer_id="adk-1",
    )
    approval = ApprovalRequest(
        tools=(ToolToApprove("adk-2", "call_2", "delete_pod", {"pod": "x", "force": True, "n": [1, 2.5]}),),
        task_id="T",
        context_id=None,
        answer_format=AnswerFormat.ADK_CONFIRMATION,
    )
    assert Question.from_dict(json.loads(json.dumps(question.to_dict()))) == question
    assert ApprovalRequest.from_dict(json.loads(json.dumps(approval.to_dict()))) == approval
