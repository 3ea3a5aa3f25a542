"""The Home tab's view for one person (issue 33, point 4). Pure: built from what ``waiting`` found.

Three parts: the person's recent threads, the tool approvals waiting for their decision (each with
the prompt's own Approve and Deny buttons, deciding every tool at once as the prompt's "Approve all"
and "Deny all" do: the same action, the same value, so a press here goes down the one press path and
closes the thread's prompt), and the alert threads open in their channels. At most a few of each, so
the view stays far below Slack's 100 blocks.
"""

from __future__ import annotations

from typing import Any

from bindings.manifest import DEFAULT_SLASH_COMMAND
from kourier.slack.incoming import view_prompt_block_id
from kourier.slack.mrkdwn import escape

from .approval_prompts import APPROVE_ACTION, DENY_ACTION
from .waiting import ThreadLine, WaitingApproval

CALLBACK_ID = "kourier_home"
TITLE = "Agent Kourier"
NO_SESSIONS = "You have not talked with me yet. Mention me in a channel, or use {command}."
NO_APPROVALS = "No approvals are waiting for your decision."
NO_ALERTS = "No alert threads are open in your channels."


def _section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def _header(text: str) -> dict[str, Any]:
    return {"type": "header", "text": {"type": "plain_text", "text": text, "emoji": False}}


def _thread(line: ThreadLine, label: str) -> str:
    where = f"<#{line.channel_id}>"
    link = f"<{line.url}|{label}>" if line.url.startswith("http") else label
    when = (
        f" · last active <!date^{int(line.last_activity_at.timestamp())}^{{date_short_pretty}} {{time}}|"
        f"{line.last_activity_at:%Y-%m-%d %H:%M} UTC>"
        if line.last_activity_at is not None
        else ""
    )
    state = "" if line.open else " (expired)"
    return f"{link} in {where}{state}{when}"


def _approval_blocks(approval: WaitingApproval) -> list[dict[str, Any]]:
    tools = ", ".join(f"`{escape(tool)}`" for tool in approval.tools) or "a tool"
    link = f"<{approval.url}|the thread>" if approval.url.startswith("http") else "the thread"
    deadline = (
        f"<!date^{int(approval.deadline.timestamp())}^{{date_short_pretty}} {{time}}|"
        f"{approval.deadline:%Y-%m-%d %H:%M} UTC>"
    )
    value = str(approval.interaction_id)
    every = len(approval.tools) > 1
    return [
        _section(f"Run {tools} in {link} in <#{approval.channel_id}>? Decide by {deadline}."),
        {
            "type": "actions",
            "block_id": view_prompt_block_id(approval.channel_id, approval.prompt_ts, approval.thread_ts),
            "elements": [
                _button("Approve all" if every else "Approve", APPROVE_ACTION, value, "primary"),
                _button("Deny all" if every else "Deny", DENY_ACTION, value, "danger"),
            ],
        },
    ]


def _button(text: str, action: str, value: str, style: str) -> dict[str, Any]:
    return {
        "type": "button",
        "action_id": action,
        "text": {"type": "plain_text", "text": text, "emoji": False},
        "value": value,
        "style": style,
    }


def home_view(
    sessions: list[ThreadLine],
    approvals: list[WaitingApproval],
    alerts: list[ThreadLine],
    *,
    command: str = DEFAULT_SLASH_COMMAND,
) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = [_header("Your threads")]
    no_sessions = _section(NO_SESSIONS.format(command=command))
    blocks += [_section(_thread(line, "A thread")) for line in sessions] or [no_sessions]
    blocks.append({"type": "divider"})
    blocks.append(_header("Approvals waiting for you"))
    if approvals:
        for approval in approvals:
            blocks += _approval_blocks(approval)
    else:
        blocks.append(_section(NO_APPROVALS))
    blocks.append({"type": "divider"})
    blocks.append(_header("Alert threads in your channels"))
    blocks += [_section(_thread(line, "An alert thread")) for line in alerts] or [_section(NO_ALERTS)]
    return {"type": "home", "callback_id": CALLBACK_ID, "blocks": blocks}
