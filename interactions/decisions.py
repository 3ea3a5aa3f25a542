"""Reading a press on an approval prompt: which tools it approves and which it denies. Pure.

Approve and Deny (one tool), Approve all and Deny all (several) decide every tool at once; Submit
decides each tool as its choice says, and is incomplete while any tool is undecided.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kourier.a2a.events import ApprovalRequest
from kourier.slack.mrkdwn import escape

from . import approval_prompts as prompts

Verdicts = tuple[bool, ...]  # one per tool of the request, in its order: True approves


@dataclass(frozen=True)
class Undecided:
    """Submit with tools left undecided; the message says which (for the person alone)."""

    message: str


@dataclass(frozen=True)
class NotADecision:
    """The press does not fit the prompt (an unknown button, a choice that is not offered)."""

    reason: str


def read_decision(
    request: ApprovalRequest,
    action_id: str,
    values: Mapping[str, Any],
    *,
    denied: frozenset[int] = frozenset(),
    allow_for_thread: bool = False,
) -> Verdicts | Undecided | NotADecision:
    """``denied``: the tools (by index) the Binding's rules denied already (unattended: deny); the
    prompt offers them no choice, and every press leaves them denied. ``allow_for_thread``: the
    Binding offers "Allow for this thread" (a one-tool prompt's third button), which approves."""
    count = len(request.tools)
    if action_id == prompts.ALLOW_FOR_THREAD_ACTION:
        if not allow_for_thread:
            return NotADecision("allow-for-thread-off")
        if count != 1 or denied:
            return NotADecision("allow-for-thread-not-offered")
        return (True,)
    if action_id == prompts.APPROVE_ACTION:
        return tuple(index not in denied for index in range(count))
    if action_id == prompts.DENY_ACTION:
        return (False,) * count
    if action_id != prompts.DECIDE_ACTION or count < 2:
        return NotADecision("unknown-action")
    verdicts: list[bool | None] = []
    for index in range(count):
        if index in denied:
            verdicts.append(False)
            continue
        block = values.get(prompts.block_id(index))
        element = block.get(prompts.verdict_action(index)) if isinstance(block, Mapping) else None
        option = element.get("selected_option") if isinstance(element, Mapping) else None
        chosen = option.get("value") if isinstance(option, Mapping) else None
        if chosen is None:
            verdicts.append(None)
        elif chosen in (prompts.APPROVED, prompts.DENIED):
            verdicts.append(chosen == prompts.APPROVED)
        else:
            return NotADecision("unknown-choice")
    undecided = [
        escape(request.tools[index].name) for index, verdict in enumerate(verdicts) if verdict is None
    ]
    if undecided:
        return Undecided(
            "Your decision was not sent: choose Approve or Deny for every tool first "
            f"(still undecided: {', '.join(undecided)}), or use Approve all or Deny all."
        )
    return tuple(bool(verdict) for verdict in verdicts)
