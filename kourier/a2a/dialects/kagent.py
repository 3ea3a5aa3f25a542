"""The ``kagent-v1`` dialect: kagent agents, both lines (docs/kagent-dialect.md §2-3).

Pauses it reads (kagent pauses only for these; any other pause is reported as unusable):

- kagent 1.0 (A2A 1.0): the ``https://kagent.dev/extensions/hitl/v1`` message extension on the pause's
  status message: ``tool_approval_request`` (``tools`` [{id, call_id, name, args}]) and
  ``ask_user_request`` (``id``, ``questions`` [{question, choices, multiple}]); a sub-agent's pause
  comes as ``nested`` {subagent_name, task_id, context_id, tools}, whose tools are what people decide.
  The extension only appears when the client opts in, hence ``EXTENSIONS``.
- kagent 0.10 (A2A 0.3): ``adk_request_confirmation`` data parts, one per pending call, with the call in
  ``args.originalFunctionCall``; ``ask_user`` when that call is named so; a sub-agent's pause carries its
  calls in ``args.toolConfirmation.payload.hitl_parts`` and its name in ``payload.subagent_name``.

Answers and decisions go back as pure ``Message`` builders in the shape each line understands:

- 1.0: ``ask_user_response`` / ``tool_approval_response`` in the message's hitl/v1 metadata (and the
  URI in ``extensions``, which kagent requires). Every pending id exactly once: kagent fails the task
  on a missing, duplicate or unknown id.
- 0.10: a ``decision_type`` DataPart. Approvals are always a ``batch`` naming every pending call, since
  kagent 0.10 treats a call missing from a batch as approved.
Both carry a short text part with counts only, as kagent's own UI does (the agent ignores it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kourier.a2a.dialects import a2a
from kourier.a2a.dialects.reader import CONFIRMATION_CALL, FUNCTION_CALL, Pause, TurnReader, part_type
from kourier.a2a.events import (
    AgentEvent,
    AnswerFormat,
    ApprovalRequest,
    AskedQuestion,
    Decision,
    Question,
    ToolToApprove,
    UnusablePause,
)
from kourier.a2a.wire import DataPart, Message, Part, Role, TaskState, TextPart

NAME = "kagent-v1"
HITL_EXTENSION = "https://kagent.dev/extensions/hitl/v1"
EXTENSIONS: tuple[str, ...] = (HITL_EXTENSION,)

# The fixed reasons the model reads after "Tool call was rejected by user. Reason: " (spec: a denial
# uses the dialect's fixed reason; it never carries what a person typed).
DENIAL_REASON = "A person in the chat thread denied this tool call."
TIMEOUT_DENIAL_REASON = "Nobody decided on this tool call in time."
# Beyond the spec (issue 21): a Binding's rule denies the tool when no person asked (unattended: deny).
POLICY_DENIAL_REASON = (
    "This tool call was denied by the chat channel's rules: no person asked for it, and this tool needs one."
)

ASK_USER_TOOL = "ask_user"


def reader() -> TurnReader:
    """A reader for one turn of a kagent agent (either line)."""
    return TurnReader(read_pause)


def read_pause(pause: Pause) -> AgentEvent:
    message = pause.message
    if pause.state is TaskState.INPUT_REQUIRED and message is not None:
        hitl_request = message.metadata.get(HITL_EXTENSION)
        if isinstance(hitl_request, dict) and "type" in hitl_request:
            return _read_hitl_v1(hitl_request, pause)
        confirmations = [data for part in message.parts if (data := _confirmation_call(part)) is not None]
        if confirmations:
            return _read_adk_confirmations(confirmations, pause)
    if pause.state is TaskState.AUTH_REQUIRED:
        return _unusable("auth-required", pause)
    # kagent only pauses for a tool approval or ask_user. Without either shape, the hitl/v1 extension
    # was not active and the pause is a bare hint: a text reply would not resume the task (kagent 1.0
    # answers it with another pause, captured in 02_pause_without_extension_optin).
    return _unusable("unstructured-pause", pause)


def _unusable(reason: str, pause: Pause) -> UnusablePause:
    return UnusablePause(reason=reason, task_id=pause.task_id, context_id=pause.context_id)


# -- kagent 1.0: hitl/v1 -----------------------------------------------------------------------------


def _read_hitl_v1(request: dict[str, Any], pause: Pause) -> AgentEvent:
    nested = _dict(request.get("nested"))
    agent = _str_or_none(nested.get("subagent_name"))
    kind = request.get("type")
    if kind == "tool_approval_request":
        # With a sub-agent pause, people decide on the sub-agent's tools and their ids go back.
        tools = _hitl_tools(nested.get("tools") if nested else request.get("tools"))
        if not tools:
            return _unusable("malformed-approval-request", pause)
        return ApprovalRequest(
            tools=tools,
            task_id=pause.task_id,
            context_id=pause.context_id,
            answer_format=AnswerFormat.HITL_V1,
            agent=agent,
        )
    if kind == "ask_user_request":
        questions = _questions(request.get("questions"))
        # A sub-agent's question is answered with the id of its nested ask_user tool.
        if nested:
            nested_tools = _hitl_tools(nested.get("tools"))
            answer_id = nested_tools[0].approval_id if nested_tools else None
        else:
            answer_id = _str_or_none(request.get("id"))
        if not questions or answer_id is None:
            return _unusable("malformed-question", pause)
        return Question(
            questions=questions,
            task_id=pause.task_id,
            context_id=pause.context_id,
            answer_format=AnswerFormat.HITL_V1,
            agent=agent,
            answer_id=answer_id,
        )
    return _unusable("unknown-hitl-request", pause)


def _hitl_tools(raw: Any) -> tuple[ToolToApprove, ...]:
    tools = []
    for tool in _list(raw):
        if not isinstance(tool, dict):
            return ()
        approval_id, name = _str_or_none(tool.get("id")), _str_or_none(tool.get("name"))
        if approval_id is None or name is None:
            return ()
        args = tool.get("args")
        tools.append(
            ToolToApprove(
                approval_id=approval_id,
                call_id=_str_or_none(tool.get("call_id")) or approval_id,
                name=name,
                args=args if isinstance(args, dict) else {},
            )
        )
    if len({tool.approval_id for tool in tools}) != len(tools):
        return ()
    return tuple(tools)


# -- kagent 0.10: adk_request_confirmation parts -----------------------------------------------------


def _confirmation_call(part: Part) -> dict[str, Any] | None:
    """The data of an ``adk_request_confirmation`` call part, else None."""
    if isinstance(part, DataPart) and part_type(part) == FUNCTION_CALL and isinstance(part.data, dict):
        return part.data if part.data.get("name") == CONFIRMATION_CALL else None
    return None


def _read_adk_confirmations(confirmations: list[dict[str, Any]], pause: Pause) -> AgentEvent:
    calls: list[Any] = []
    agent: str | None = None
    for confirmation_call in confirmations:
        args = _dict(confirmation_call.get("args"))
        payload = _dict(_dict(args.get("toolConfirmation")).get("payload"))
        inner_parts = _list(payload.get("hitl_parts"))
        if inner_parts:
            # A sub-agent paused: people decide on its calls, named by their (inner) call ids.
            agent = _str_or_none(payload.get("subagent_name")) or agent
            calls.extend(_dict(inner).get("originalFunctionCall") for inner in inner_parts)
        else:
            calls.append(args.get("originalFunctionCall"))

    tools: list[ToolToApprove] = []
    for call in calls:
        if (
            not isinstance(call, dict)
            or not _str_or_none(call.get("id"))
            or not _str_or_none(call.get("name"))
        ):
            return _unusable("malformed-confirmation", pause)
        call_args = call.get("args")
        tools.append(
            ToolToApprove(
                approval_id=call["id"],
                call_id=call["id"],
                name=call["name"],
                args=call_args if isinstance(call_args, dict) else {},
            )
        )
    if len({tool.approval_id for tool in tools}) != len(tools):
        return _unusable("malformed-confirmation", pause)

    questions = [tool for tool in tools if tool.name == ASK_USER_TOOL]
    if questions and len(tools) > 1:
        # kagent 0.10 has no answer that carries both answers and decisions.
        return _unusable("question-with-approval", pause)
    if questions:
        asked = _questions(questions[0].args.get("questions"))
        if not asked:
            return _unusable("malformed-question", pause)
        return Question(
            questions=asked,
            task_id=pause.task_id,
            context_id=pause.context_id,
            answer_format=AnswerFormat.ADK_CONFIRMATION,
            agent=agent,
        )
    return ApprovalRequest(
        tools=tuple(tools),
        task_id=pause.task_id,
        context_id=pause.context_id,
        answer_format=AnswerFormat.ADK_CONFIRMATION,
        agent=agent,
    )


# -- shared ------------------------------------------------------------------------------------------


def _questions(raw: Any) -> tuple[AskedQuestion, ...]:
    """kagent's ask_user questions: [{question, choices, multiple}]; empty when malformed."""
    questions = []
    for item in _list(raw):
        if not isinstance(item, dict) or not isinstance(item.get("question"), str):
            return ()
        questions.append(
            AskedQuestion(
                text=item["question"],
                choices=tuple(str(choice) for choice in _list(item.get("choices"))),
                multiple=item.get("multiple") is True,
            )
        )
    return tuple(questions)


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


# -- answers and decisions ---------------------------------------------------------------------------


def answer_message(question: Question, answers: Sequence[Sequence[str]], *, message_id: str) -> Message:
    """The answers to a question, one list of strings (chosen choices and/or typed text) per question."""
    if question.answer_format is AnswerFormat.TEXT:
        return a2a.answer_message(question, answers, message_id=message_id)
    if len(answers) != len(question.questions):
        raise ValueError(f"{len(question.questions)} questions need as many answers, got {len(answers)}")
    answer_list = [{"answer": [str(value) for value in answer]} for answer in answers]
    summary = TextPart(text="Answered questions")
    if question.answer_format is AnswerFormat.HITL_V1:
        return _hitl_v1_message(
            question,
            {"type": "ask_user_response", "id": question.answer_id, "answers": answer_list},
            summary,
            message_id,
        )
    decision = {"decision_type": "approve", "ask_user_answers": answer_list}
    return _user_message(question, (DataPart(data=decision), summary), message_id)


def decision_message(
    request: ApprovalRequest, decisions: Mapping[str, Decision], *, message_id: str
) -> Message:
    """The decisions on an approval request, keyed by ``ToolToApprove.approval_id``: one for every tool."""
    pending = [tool.approval_id for tool in request.tools]
    missing = [approval_id for approval_id in pending if approval_id not in decisions]
    unknown = [approval_id for approval_id in decisions if approval_id not in pending]
    if missing or unknown:
        # Ids are opaque agent ids, safe to name.
        raise ValueError(f"a decision is needed for every pending tool: missing {missing}, unknown {unknown}")

    approved = sum(decisions[approval_id].approved for approval_id in pending)
    summary = f"{approved} approved, {len(pending) - approved} rejected"
    if request.answer_format is AnswerFormat.HITL_V1:
        approvals = []
        for approval_id in pending:
            decision = decisions[approval_id]
            approval: dict[str, Any] = {"id": approval_id, "approved": decision.approved}
            if not decision.approved and decision.reason:
                approval["rejection_reason"] = decision.reason
            approvals.append(approval)
        return _hitl_v1_message(
            request,
            {"type": "tool_approval_response", "approvals": approvals},
            TextPart(text=summary),
            message_id,
        )
    if request.answer_format is not AnswerFormat.ADK_CONFIRMATION:
        raise ValueError(f"no tool decisions in answer format {request.answer_format}")
    batch: dict[str, Any] = {
        "decision_type": "batch",
        "decisions": {
            approval_id: "approve" if decisions[approval_id].approved else "reject" for approval_id in pending
        },
    }
    reasons = {
        approval_id: decisions[approval_id].reason
        for approval_id in pending
        if not decisions[approval_id].approved and decisions[approval_id].reason
    }
    if reasons:
        batch["rejection_reasons"] = reasons
    return _user_message(
        request, (DataPart(data=batch), TextPart(text=f"Batch decision: {summary}")), message_id
    )


def deny_all(request: ApprovalRequest, *, reason: str = DENIAL_REASON) -> dict[str, Decision]:
    """A denial of every pending tool (the timeout sweeper passes ``TIMEOUT_DENIAL_REASON``)."""
    return {tool.approval_id: Decision(approved=False, reason=reason) for tool in request.tools}


def _hitl_v1_message(
    pause: Question | ApprovalRequest, response: dict[str, Any], summary: TextPart, message_id: str
) -> Message:
    return Message(
        message_id=message_id,
        role=Role.USER,
        parts=(summary,),
        task_id=pause.task_id,
        context_id=pause.context_id,
        metadata={HITL_EXTENSION: response},
        extensions=(HITL_EXTENSION,),
    )


def _user_message(pause: Question | ApprovalRequest, parts: tuple[Part, ...], message_id: str) -> Message:
    return Message(
        message_id=message_id, role=Role.USER, parts=parts, task_id=pause.task_id, context_id=pause.context_id
    )
