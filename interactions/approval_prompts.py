"""What a tool approval looks like in the thread: the prompt's Block Kit, open and ended. Pure.

One tool: its name, its redacted arguments, and Approve and Deny buttons. Several tools: each tool
with its arguments and an Approve/Deny choice (an ``input`` block, so choosing sends nothing), then
Submit, Approve all and Deny all. Every button's value is the Interaction's id, as for questions.

A prompt is never truncated (spec): a tool name or an argument that cannot be shown exactly, a value
JSON cannot carry, or a whole that does not fit in one message within Slack's Block Kit limits makes
the prompt ``Unshowable``, and the caller refuses the approval instead of posting it.
"""

from __future__ import annotations

import json
import math
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kourier.a2a.events import ApprovalRequest, ToolToApprove
from kourier.slack.mrkdwn import escape

APPROVE_ACTION = "kourier_approve"  # one tool's Approve, several tools' Approve all
DENY_ACTION = "kourier_deny"  # one tool's Deny, several tools' Deny all
DECIDE_ACTION = "kourier_submit_decisions"  # several tools: Submit the choices made one by one
# Beyond the spec (issue 33), opt-in (spec.interactions.allowForThread): one tool's third button.
ALLOW_FOR_THREAD_ACTION = "kourier_allow_for_thread"
ACTIONS = (APPROVE_ACTION, DENY_ACTION, DECIDE_ACTION, ALLOW_FOR_THREAD_ACTION)
APPROVED, DENIED = "approve", "deny"

# Slack's Block Kit limits (api.slack.com/reference/block-kit): the prompt must fit them whole.
MAX_BLOCKS = 50
MAX_TEXT = 3000  # a section's text object
MAX_LABEL = 2000  # an input block's label
MAX_TOOL_NAME = 200
MAX_DEPTH = 32
MAX_FALLBACK = 4000  # chat.postMessage's text, shown in notifications


@dataclass(frozen=True)
class Unshowable:
    """Why the prompt cannot be shown exactly: a fixed token, never the value itself."""

    reason: str


def block_id(index: int) -> str:
    return f"tool-{index}"


def verdict_action(index: int) -> str:
    return f"verdict-{index}"


def asker(request: ApprovalRequest) -> str:
    return f"The sub-agent *{_escape(request.agent)}*" if request.agent else "The agent"


# Beyond the spec (issue 21): a tool the Binding's rules denied at once (unattended: deny), in a
# prompt whose other tools wait for people. A fixed wording (docs/manifests.md, "Approval rules").
DENIED_BY_POLICY_LINE = "Denied by this channel's rules: nobody asked for it, so it does not run."

# Beyond the spec (issue 33): what a prompt with "Allow for this thread" and its ending add. Fixed
# wordings (docs/manifests.md, "Allow for this thread").
ALLOW_FOR_THREAD = "Allow for this thread"
ALLOW_FOR_THREAD_HINT = (
    "_Allow for this thread_ approves this call and lets the agent run {tool} again in this thread "
    "without asking, until the thread expires."
)
ALLOWED_FOR_THREAD_LINE = (
    "Allowed for this thread: {tools} now runs here without asking until the thread expires."
)


def open_prompt(
    request: ApprovalRequest,
    interaction_id: int,
    *,
    denied: frozenset[int] = frozenset(),
    allow_for_thread: bool = False,
) -> list[dict[str, Any]] | Unshowable:
    """The prompt as it waits for a decision, or why it cannot be shown. ``denied``: tools (by index)
    the Binding's rules denied already, shown without a choice; ``allow_for_thread``: a one-tool
    prompt also offers "Allow for this thread", and says what it does."""
    shown: list[tuple[str, str]] = []
    for tool in request.tools:
        unshowable = _check_tool(tool)
        if unshowable is not None:
            return unshowable
        shown.append((tool.name, arguments_text(tool.args)))
    if request.agent is not None and (not _showable_line(request.agent) or len(request.agent) > 200):
        return Unshowable("agent-name")
    count = len(shown)
    blocks: list[dict[str, Any]] = [
        _mrkdwn(
            "asker",
            f"{asker(request)} asks for approval to run {'a tool' if count == 1 else f'{count} tools'}:",
        )
    ]
    value = str(interaction_id)
    if count == 1:
        name, args = shown[0]
        blocks.append(_tool_section(0, name, args))
        buttons = [
            _button("Approve", APPROVE_ACTION, value, "primary"),
            _button("Deny", DENY_ACTION, value, "danger"),
        ]
        if allow_for_thread:
            buttons.append(_button(ALLOW_FOR_THREAD, ALLOW_FOR_THREAD_ACTION, value, None))
        blocks.append(_actions("decide", buttons))
        if allow_for_thread:
            hint = ALLOW_FOR_THREAD_HINT.format(tool=escape(name))
            blocks.append(
                {"type": "context", "block_id": "allow-hint", "elements": [{"type": "mrkdwn", "text": hint}]}
            )
    else:
        for index, (name, args) in enumerate(shown):
            blocks.append(_tool_section(index, name, args))
            if index in denied:
                blocks.append(_mrkdwn(f"denied-{index}", f"_{DENIED_BY_POLICY_LINE}_"))
                continue
            blocks.append(
                {
                    "type": "input",
                    "block_id": block_id(index),
                    "label": {"type": "plain_text", "text": f"Run {name}?", "emoji": False},
                    "element": {
                        "type": "radio_buttons",
                        "action_id": verdict_action(index),
                        "options": [
                            {"text": {"type": "plain_text", "text": "Approve"}, "value": APPROVED},
                            {"text": {"type": "plain_text", "text": "Deny"}, "value": DENIED},
                        ],
                    },
                    "optional": True,  # an undecided tool is turned away with a message that names it
                }
            )
        blocks.append(
            _actions(
                "decide",
                [
                    _button("Submit", DECIDE_ACTION, value, "primary"),
                    _button("Approve all", APPROVE_ACTION, value, None),
                    _button("Deny all", DENY_ACTION, value, "danger"),
                ],
            )
        )
    return _fits(blocks)


def _check_tool(tool: ToolToApprove) -> Unshowable | None:
    if not tool.name or len(tool.name) > MAX_TOOL_NAME or not _showable_line(tool.name):
        return Unshowable("tool-name")
    if not isinstance(tool.args, Mapping):
        return Unshowable("unsupported-value")
    return _check_value(tool.args, 0)


def _check_value(value: Any, depth: int) -> Unshowable | None:
    if depth > MAX_DEPTH:
        return Unshowable("unsupported-value")
    if value is None or isinstance(value, bool | int):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else Unshowable("unsupported-value")
    if isinstance(value, str):
        return None if _showable_text(value) else Unshowable("unshowable-argument")
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str) or not _showable_text(key):
                return Unshowable("unshowable-argument")
            if (found := _check_value(item, depth + 1)) is not None:
                return found
        return None
    if isinstance(value, list | tuple):
        for item in value:
            if (found := _check_value(item, depth + 1)) is not None:
                return found
        return None
    return Unshowable("unsupported-value")


def _showable_text(text: str) -> bool:
    """Text Slack shows as it is: no lone surrogates, no control or format characters (other than
    newlines and tabs, which JSON shows escaped), nothing unassigned."""
    for char in text:
        if char in "\n\t":
            continue
        if unicodedata.category(char) in ("Cc", "Cs", "Cf", "Co", "Cn"):
            return False
    return True


def _showable_line(text: str) -> bool:
    return bool(text.strip()) and "\n" not in text and "\t" not in text and _showable_text(text)


def arguments_text(args: Mapping[str, Any]) -> str:
    """The arguments as people read them: JSON, one key a line, exactly as the agent sent them."""
    if not args:
        return "(no arguments)"
    return json.dumps(dict(args), ensure_ascii=False, indent=2)


def _tool_section(index: int, name: str, args: str) -> dict[str, Any]:
    # plain_text shows every character as it is (mrkdwn would read *, _, ` and <...> as markup).
    return {
        "type": "section",
        "block_id": f"call-{index}",
        "text": {"type": "plain_text", "text": f"{name}\n{args}", "emoji": False},
    }


def _fits(blocks: list[dict[str, Any]]) -> list[dict[str, Any]] | Unshowable:
    if len(blocks) > MAX_BLOCKS:
        return Unshowable("too-many-tools")
    for block in blocks:
        if block["type"] == "section" and len(block["text"]["text"]) > MAX_TEXT:
            return Unshowable("too-long")
        if block["type"] == "input" and len(block["label"]["text"]) > MAX_LABEL:
            return Unshowable("too-long")
    return blocks


def _mrkdwn(block: str, text: str) -> dict[str, Any]:
    return {"type": "section", "block_id": block, "text": {"type": "mrkdwn", "text": text}}


def _actions(block: str, elements: list[dict[str, Any]]) -> dict[str, Any]:
    return {"type": "actions", "block_id": block, "elements": elements}


def _button(text: str, action: str, value: str, style: str | None) -> dict[str, Any]:
    button: dict[str, Any] = {
        "type": "button",
        "action_id": action,
        "text": {"type": "plain_text", "text": text, "emoji": False},
        "value": value,
    }
    if style:
        button["style"] = style
    return button


def _escape(text: str | None) -> str:
    return escape(text or "")


def decided_prompt(request: ApprovalRequest, verdicts: Sequence[bool], line: str) -> list[dict[str, Any]]:
    """The prompt once a person decided: each tool with its verdict, no controls."""
    listed = [
        f"{'Approved' if approved else 'Denied'}: {tool.name}"
        for tool, approved in zip(request.tools, verdicts, strict=True)
    ]
    return _ended(request, listed, line)


def allowed_for_thread_line(tool_names: Sequence[str]) -> str:
    """What the ended prompt of a decision that allowed its tools for the thread adds."""
    return ALLOWED_FOR_THREAD_LINE.format(tools=", ".join(escape(name) for name in tool_names))


def timed_out_prompt(request: ApprovalRequest) -> list[dict[str, Any]]:
    """The prompt once its deadline passed: every tool denied, no controls."""
    listed = [f"Denied (timed out): {tool.name}" for tool in request.tools]
    return _ended(request, listed, TIMED_OUT_LINE)


def denied_by_policy_prompt(request: ApprovalRequest) -> list[dict[str, Any]]:
    """The request the Binding's rules denied whole at once (unattended: deny): no controls."""
    listed = [f"Denied (by this channel's rules): {tool.name}" for tool in request.tools]
    return _ended(request, listed, DENIED_BY_POLICY_ENDING)


def _ended(request: ApprovalRequest, listed: Sequence[str], line: str) -> list[dict[str, Any]]:
    blocks = [_mrkdwn("asker", f"{asker(request)} asked for approval to run tools.")]
    blocks.extend(_verdict_sections(listed))
    blocks.append({"type": "context", "block_id": "ended", "elements": [{"type": "mrkdwn", "text": line}]})
    return blocks


def _verdict_sections(lines: Sequence[str]) -> list[dict[str, Any]]:
    """Every tool's verdict, a line each, split across as many sections as Slack's section text limit
    needs: never cut. A prompt that was shown had at most 24 tools of names at most 200 characters
    (``open_prompt``), so its ending stays well within the 50 blocks a message may have."""
    texts: list[str] = []
    for verdict in lines:
        if texts and len(texts[-1]) + 1 + len(verdict) <= MAX_TEXT:
            texts[-1] += "\n" + verdict
        else:
            texts.append(verdict)
    return [
        {
            "type": "section",
            "block_id": "verdicts" if index == 0 else f"verdicts-{index}",
            "text": {"type": "plain_text", "text": text, "emoji": False},
        }
        for index, text in enumerate(texts)
    ]


def decided_line(user_id: str, at_epoch: int, at_text: str) -> str:
    return f"Decided by <@{user_id}> <!date^{at_epoch}^{{date_short_pretty}} at {{time}}|at {at_text} UTC>."


# Where a decision made outside Slack was made (interactions/outside.py), as the ended prompt says it.
DECIDED_IN = {"admin": "in the admin", "cli": "from the command line"}


def decided_outside_line(name: str, where: str, at_epoch: int, at_text: str) -> str:
    """The ending of a prompt decided by a Django user: their name (escaped: it is theirs, not Slack's)
    and where, e.g. "Decided by ada in the admin at ..."."""
    return (
        f"Decided by {escape(name)} {DECIDED_IN[where]} "
        f"<!date^{at_epoch}^{{date_short_pretty}} at {{time}}|at {at_text} UTC>."
    )


TIMED_OUT_LINE = "Nobody decided in time: every tool was denied, and the agent was told so."
DENIED_BY_POLICY_ENDING = (
    "Nobody asked for this, so this channel's rules denied it at once, and the agent was told so."
)


def fallback_text(request: ApprovalRequest) -> str:
    names = ", ".join(escape(tool.name) for tool in request.tools)
    text = f"{asker(request)} asks for approval to run: {names}"
    return (
        text
        if len(text) <= MAX_FALLBACK
        else f"{asker(request)} asks for approval to run {len(request.tools)} tools."
    )
