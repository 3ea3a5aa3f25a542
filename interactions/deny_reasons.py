"""A reason with a denial (``spec.interactions.denyReasons``, beyond the spec and opt-in per Binding).

On such a Binding, a press that denies a tool (Deny, Deny all, or a Submit with a tool denied) does
not decide at once: it opens a modal for the reason (views.open with the press's trigger_id). The
modal carries the press in its ``private_metadata``; its view_submission comes back through the same
door and the same press path (presses.py: who may decide, the first decision wins) with the reason.
The reason is redacted like tool arguments and cut to 500 characters; it reaches the model as the
rejection reason of every tool denied, and the audit keeps it. Closing the modal decides nothing.

The view, the metadata and the wordings are pure; ``wants_reason`` reads the Interaction.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from kourier.a2a.events import ApprovalRequest
from kourier.redaction import redact_text
from kourier.slack.incoming import ModalSubmission, SubmitPress, input_text
from kourier.slack.mrkdwn import escape

from . import approval_prompts
from .decisions import read_decision
from .models import Interaction

CALLBACK_ID = "kourier_deny_reason"
REASON_BLOCK = "deny_reason"
REASON_ACTION = "reason"
MAX_REASON = 500
MAX_PRIVATE_METADATA = 3000  # Slack's limit on a view's private_metadata

# The fixed wordings (docs/manifests.md, denyReasons).
TITLE = "Deny tool call"
SUBMIT = "Deny"
CLOSE = "Cancel"
ASKING = "Tell the agent why you deny {tools}. It reads your reason with the denial. Closing this form decides nothing."
REASON_LABEL = "Reason"
REASON_BLANK = "Write a reason, or close this form to decide nothing."
REASON_TOO_LONG = f"A reason can be at most {MAX_REASON} characters."
FORM_UNAVAILABLE = (
    "I could not open the form for your reason in time, so nothing was decided. Press Deny again."
)


def denied_tools(interaction_id: int, action_id: str, values: Mapping[str, Any]) -> list[str] | None:
    """The names of the tools this press denies, when its Binding asks a reason with a denial and the
    approval is still open at this prompt; None when the press decides as it is."""
    interaction = (
        Interaction.objects.select_related("session__binding")
        .filter(pk=interaction_id, kind=Interaction.Kind.APPROVAL, state=Interaction.State.OPEN)
        .first()
    )
    binding = interaction.session.binding if interaction is not None else None
    if interaction is None or binding is None or not binding.deny_reasons:
        return None
    request = ApprovalRequest.from_dict(interaction.pause)
    by_policy = frozenset(interaction.denied_by_policy)
    verdicts = read_decision(request, action_id, values, denied=by_policy)
    if not isinstance(verdicts, tuple):
        return None  # no decision: the press path says what it is
    # A tool the Binding's rules denied already (unattended: deny) carries the policy's reason, not a person's.
    denied = [
        tool.name
        for index, (tool, approved) in enumerate(zip(request.tools, verdicts, strict=True))
        if not approved and index not in by_policy
    ]
    return denied or None  # approves every tool left to people: decided as it is


def reason_modal(press: SubmitPress, tools: list[str]) -> dict[str, Any] | None:
    """The modal that asks ``press``'s presser why; None when the press cannot ride in its metadata."""
    metadata = press_metadata(press)
    if len(metadata) > MAX_PRIVATE_METADATA:
        return None
    names = ", ".join(f"`{escape(name)}`" for name in tools)
    return {
        "type": "modal",
        "callback_id": CALLBACK_ID,
        "private_metadata": metadata,
        "notify_on_close": True,
        "title": {"type": "plain_text", "text": TITLE},
        "submit": {"type": "plain_text", "text": SUBMIT},
        "close": {"type": "plain_text", "text": CLOSE},
        "blocks": [
            {"type": "section", "text": {"type": "mrkdwn", "text": ASKING.format(tools=names)[:3000]}},
            {
                "type": "input",
                "block_id": REASON_BLOCK,
                "label": {"type": "plain_text", "text": REASON_LABEL},
                "element": {
                    "type": "plain_text_input",
                    "action_id": REASON_ACTION,
                    "multiline": True,
                    "max_length": MAX_REASON,
                },
            },
        ],
    }


def press_metadata(press: SubmitPress) -> str:
    """The press, as the modal keeps it until its submission: only the choices a decision reads."""
    kept = {
        "v": press.value,
        "t": press.team_id,
        "c": press.channel_id,
        "m": press.message_ts,
        "h": press.thread_ts,
        "a": press.action_id,
        "s": _verdict_choices(press.values),
        "r": press.response_url,
    }
    return json.dumps(kept, separators=(",", ":"))


_TOOL_BLOCK_PREFIX = approval_prompts.block_id(0).removesuffix("0")


def _verdict_choices(values: Mapping[str, Any]) -> dict[str, Any]:
    chosen: dict[str, Any] = {}
    for block_id, block in values.items():
        if not (isinstance(block, Mapping) and str(block_id).startswith(_TOOL_BLOCK_PREFIX)):
            continue
        for action_id, element in block.items():
            option = element.get("selected_option") if isinstance(element, Mapping) else None
            if isinstance(option, Mapping) and isinstance(option.get("value"), str):
                chosen.setdefault(block_id, {})[action_id] = {"selected_option": {"value": option["value"]}}
    return chosen


def press_of(submission: ModalSubmission, reason: str) -> SubmitPress | None:
    """The press a reason modal kept, with its reason; None when the metadata is not one we wrote."""
    try:
        kept = json.loads(submission.private_metadata)
    except ValueError:
        return None
    if not isinstance(kept, dict) or not all(isinstance(kept.get(key), str) for key in "vtcmar"):
        return None
    if not isinstance(kept.get("s"), dict) or not isinstance(kept.get("h"), str | None):
        return None
    return SubmitPress(
        value=kept["v"],
        team_id=kept["t"],
        channel_id=kept["c"],
        message_ts=kept["m"],
        thread_ts=kept["h"],
        user_id=submission.user_id,
        values=kept["s"],
        response_url=kept["r"],
        action_id=kept["a"],
        reason=cleaned(reason),
    )


def typed_reason(submission: ModalSubmission) -> str:
    return input_text(submission.values, REASON_BLOCK, REASON_ACTION)


def reason_problem(typed: str) -> str | None:
    """What the person must fix before the reason can be taken (shown under the input), if anything."""
    if not typed.strip():
        return REASON_BLANK
    if len(typed) > MAX_REASON:
        return REASON_TOO_LONG
    return None


def cleaned(typed: str) -> str:
    """The reason as it may be stored, audited and sent: redacted like tool arguments, at most 500 characters."""
    return redact_text(typed.strip())[:MAX_REASON]
