"""A press on a prompt, whatever its kind (a question's Submit, an approval's buttons), as the listener
hands it over: who may press, the one take-and-queue path, and what the presser is told.

The presser must be a non-bot member of the channel (read from Slack, the members cached for at most
a minute) and, for a kind that checks approvers when the Binding lists approver groups, a member of
at least one of them. Groups are read with usergroups.users.list on every press, in the order
listed, never cached; the first read that fails stops the check (a member found in an earlier group
may press):

- a permanent failure (an unknown group, a missing scope, a plan without user groups, ...) ends the
  press with a fixed message only the person sees, takes nothing, writes no audit row, leaves the
  pause pending, and logs an error naming the Binding and the interaction;
- a transient one (a timeout, a server error, a rate limit) keeps the press: a row, tried again by
  a Celery task with backoff, and sent again by beat's sweep when a worker died holding the try
  (kept_presses.py), so the retry outlives any restart.

Beyond the spec, opt-in per Binding (policy.py): with ``interactions.tools`` each tool of the prompt
is decided under its own rule's groups, so the presser must be in the groups of every tool (each
group read once a press, the same failure rules), and a rule's own groups refuse in their own words;
four eyes (``separateApprover``) needs the press's verdicts and is checked with them, in the take
(``PauseKind.vet``).

The first complete press wins (``services.take_allowed_press``); every press that is not taken is told why,
in a message only the person sees.
"""

from __future__ import annotations

import enum
import logging
from dataclasses import asdict, dataclass

from kourier.db import in_database_thread
from kourier.slack.clients import (
    RetryPolicy,
    SlackError,
    async_web_client,
    connection_workspace,
    error_name,
    may_pass,
)
from kourier.slack.ephemeral import tell_privately
from kourier.slack.incoming import ChatMessage, SubmitPress
from kourier.slack.modals import open_modal
from kourier.slack.mrkdwn import escape
from kourier.slack.people import channel_members, is_bot, usergroup_members

from . import approvals, deny_reasons, kept_presses, services
from .bound import ANOTHER_APP, posted_by_another_app
from .kinds import PauseKind, Refusal, Refused, Taken
from .models import Interaction
from .policy import GroupCheck, group_checks
from .questions import QUESTION
from .registry import BY_ACTION

logger = logging.getLogger(__name__)

# What a presser is told, privately, when their press is kept for a retry (docs/manifests.md, approverGroups): the
# tries last about four minutes, and the last one tells them if the press could not be taken.
KEPT_FOR_RETRY = (
    "Slack did not let me check the approver groups just now, so your decision is not sent yet. "
    "I am trying again for a few minutes and will tell you here if it still cannot be sent."
)

# A press that checks approvers waits for no rate-limit block nor backoff: a group read that cannot
# answer at once is retried durably instead, and Slack has its 200 at once.
PRESS_POLICY = RetryPolicy(attempts=1, rate_limit_retries=0, max_wait=0.0)
PRESS_TIMEOUT_SECONDS = 1.5  # a read that hangs is a transient failure, found before Slack's 3 s pass


class PressOutcome(enum.Enum):
    """What became of a press on a prompt (or of one try of a kept press)."""

    TAKEN = "taken"
    REFUSED = "refused"
    RETRY = "retry"  # a group read failed for now: the press is kept and tried again
    STALE = "stale"  # a retry message for a try already taken (sent twice), or of a press taken since
    ASKED_REASON = (
        "asked-reason"  # a denial on a Binding with denyReasons: its modal is open, nothing decided
    )


def interaction_id_of(press: SubmitPress) -> int:
    """Every prompt button's value is its Interaction's id; 0 (no Interaction) for anything else."""
    return int(press.value) if press.value.isascii() and press.value.isdigit() else 0


async def receive_press(press: SubmitPress, *, connection_id: int, bot_token: str) -> PressOutcome:
    """The listener's entry: takes, refuses, or hands the press to the durable retry."""
    kind = BY_ACTION.get(press.action_id)
    if kind is None:
        raise LookupError(f"no kind of pause has the action {press.action_id!r}")
    outcome = await decide_press(kind, press, connection_id=connection_id, bot_token=bot_token)
    if outcome is PressOutcome.RETRY:
        await in_database_thread(kept_presses.keep)(
            asdict(press), connection_id=connection_id, interaction_id=interaction_id_of(press)
        )
        await _tell(press, KEPT_FOR_RETRY)
    return outcome


async def retry_kept_press(kept_id: int, attempt: int) -> PressOutcome:
    """Try ``attempt`` of a kept press (kept_presses.py, through the retry machine: retries.py):
    taken, refused (the last try refuses what it still cannot check), or put off until the next try."""
    kept = await in_database_thread(kept_presses.claim)(kept_id, attempt)
    if kept is None:
        return PressOutcome.STALE
    press = SubmitPress(**kept.press)
    kind = BY_ACTION.get(press.action_id)
    if kind is None:
        await in_database_thread(kept_presses.forget)(kept.id)
        return PressOutcome.STALE
    try:
        outcome = await decide_press(
            kind,
            press,
            connection_id=kept.connection_id,
            bot_token=kept.bot_token,
            last_attempt=kept.last,
            kept_id=kept.id,
        )
    except Exception:
        await in_database_thread(kept_presses.RETRIES.given_up_if_last)(kept.id, attempt)
        raise
    if outcome is PressOutcome.RETRY:
        await in_database_thread(kept_presses.RETRIES.put_off)(kept.id, attempt)
    else:
        await in_database_thread(kept_presses.forget)(kept.id)
    return outcome


async def decide_press(
    kind: PauseKind,
    press: SubmitPress,
    *,
    connection_id: int,
    bot_token: str,
    last_attempt: bool = False,
    kept_id: int | None = None,
) -> PressOutcome:
    interaction_id = interaction_id_of(press)
    # A kind that retries its group reads durably asks Slack once, briefly; the others as any call.
    options = {"policy": PRESS_POLICY, "timeout": PRESS_TIMEOUT_SECONDS} if kind.approvers else {}
    slack = async_web_client(bot_token, workspace=connection_workspace(connection_id), **options)  # type: ignore[arg-type]
    if await in_database_thread(posted_by_another_app)(interaction_id, connection_id):
        logger.info(
            "interaction.press_refused",
            extra={"interaction": press.value, "kind": kind.kind.value, "reason": "another-app"},
        )
        await _tell(press, ANOTHER_APP)
        return PressOutcome.REFUSED
    allowed = await _why_not_allowed(kind, slack, press, interaction_id)
    if allowed is PressOutcome.RETRY:
        if not last_attempt:
            return PressOutcome.RETRY
        allowed = Refusal.GROUPS_UNAVAILABLE
    if allowed is None and press.reason is None and kind.kind == Interaction.Kind.APPROVAL:
        asked = await _ask_reason(slack, press, interaction_id)
        if asked is not None:
            return asked
    if allowed is None:
        result = await in_database_thread(services.take_allowed_press)(
            kind,
            interaction_id,
            channel_id=press.channel_id,
            prompt_ts=press.message_ts,
            user_id=press.user_id,
            action_id=press.action_id,
            values=press.values,
            kept_press_id=kept_id,
            reason=press.reason or "",
        )
        if isinstance(result, Taken):
            return PressOutcome.TAKEN
        refused = result
    elif isinstance(allowed, Refused):
        refused = allowed
    else:
        assert isinstance(allowed, Refusal)
        refused = kind.refused(allowed)
    logger.info(
        "interaction.press_refused",
        extra={"interaction": press.value, "kind": kind.kind.value, "reason": refused.refusal.value},
    )
    await _tell(press, refused.message)
    return PressOutcome.REFUSED


async def _ask_reason(slack, press: SubmitPress, interaction_id: int) -> PressOutcome | None:
    """Opens the reason modal for a press that denies on a Binding with denyReasons: ASKED_REASON,
    REFUSED when it could not be opened (nothing decided), None when the press decides as it is."""
    tools = await in_database_thread(deny_reasons.denied_tools)(interaction_id, press.action_id, press.values)
    if tools is None:
        return None
    view = deny_reasons.reason_modal(press, tools)
    if view is None:  # a press too large to keep in the modal is decided without a reason
        logger.warning(
            "interaction.reason_not_asked", extra={"interaction": press.value, "reason": "too-large"}
        )
        return None
    try:
        await open_modal(slack, press.trigger_id, view)
    except SlackError as exc:
        logger.warning(
            "interaction.reason_form_unavailable",
            extra={"interaction": press.value, "error": error_name(exc)},
        )
        await _tell(press, deny_reasons.FORM_UNAVAILABLE)
        return PressOutcome.REFUSED
    logger.info("interaction.reason_asked", extra={"interaction": press.value})
    return PressOutcome.ASKED_REASON


async def _tell(press: SubmitPress, message: str) -> None:
    """Tells the presser alone; a message Slack will not take is logged, never retried."""
    try:
        await tell_privately(press.response_url, message)
    except SlackError as exc:
        logger.warning(
            "interaction.press_not_told", extra={"interaction": press.value, "error": error_name(exc)}
        )


class Standing(enum.Enum):
    """Whether someone may answer or decide a pause in a channel, as far as membership goes."""

    MEMBER = "member"  # a member of the channel, and not a bot
    NOT_A_MEMBER = "not-a-member"  # not in the channel, or a bot or an app
    UNKNOWN = "unknown"  # Slack could not tell just now


async def standing_of(slack, channel_id: str, user_id: str) -> Standing:
    """The person's standing in the channel: its members read from Slack (kourier/slack/people.py:
    every page, kept at most a minute and forgotten when Slack says someone left or joined), and
    whether they are a bot (users.info)."""
    try:
        if user_id not in await channel_members(slack, channel_id) or await is_bot(slack, user_id):
            return Standing.NOT_A_MEMBER
    except SlackError as exc:
        logger.warning(
            "interaction.membership_unreadable", extra={"channel": channel_id, "error": error_name(exc)}
        )
        return Standing.UNKNOWN
    return Standing.MEMBER


async def typed_reply_author_may_answer(
    message: ChatMessage, *, connection_id: int, bot_token: str
) -> bool | None:
    """Whether the author of a reply that would answer the thread's open question may answer it:
    checked as a Submit's presser is (a member of the channel, never a bot). None when Slack cannot
    tell just now: the reply is not taken, and its author is told, privately, to send it again.

    The door asks before it acknowledges the event, so Slack is asked once, briefly (a read that
    cannot answer at once is unknown), as for a press that checks approvers."""
    slack = async_web_client(
        bot_token,
        workspace=connection_workspace(connection_id),
        policy=PRESS_POLICY,
        timeout=PRESS_TIMEOUT_SECONDS,
    )
    standing = await standing_of(slack, message.channel_id, message.user_id)
    if standing is Standing.MEMBER:
        return True
    logger.info(
        "interaction.typed_answer_refused",
        extra={"channel": message.channel_id, "user_id": message.user_id, "reason": standing.value},
    )
    if standing is Standing.NOT_A_MEMBER:
        return False  # a reply that is not an answer: it waits, as any other
    try:
        await slack.chat_postEphemeral(
            channel=message.channel_id,
            user=message.user_id,
            thread_ts=message.root_ts,
            text=QUESTION.refusals[Refusal.MEMBERSHIP_UNKNOWN],
        )
    except SlackError as exc:
        logger.warning(
            "interaction.typed_answer_not_told",
            extra={"channel": message.channel_id, "error": error_name(exc)},
        )
    return None


@dataclass(frozen=True)
class Policy:
    """Who may decide: the approver groups each tool is decided under (none: any member), by the
    Binding's own groups and, opt-in, its tool rules (policy.py)."""

    binding_name: str
    checks: tuple[GroupCheck, ...]
    tool_names: tuple[str, ...]


def policy_of(interaction_id: int, kind: str) -> Policy | None:
    interaction = Interaction.objects.select_related("session__binding").filter(pk=interaction_id).first()
    if interaction is None or interaction.kind != kind or interaction.session.binding is None:
        return None
    request = approvals.request_of(interaction)
    return Policy(
        interaction.session.binding.name,
        tuple(group_checks(approvals.tool_policies(interaction))),
        tuple(tool.name for tool in request.tools),
    )


async def _why_not_allowed(
    kind: PauseKind, slack, press: SubmitPress, interaction_id: int
) -> Refusal | Refused | PressOutcome | None:
    policy = None
    if kind.approvers:
        policy = await in_database_thread(policy_of)(interaction_id, kind.kind)
        if policy is None:
            return Refusal.UNKNOWN
    standing = await standing_of(slack, press.channel_id, press.user_id)
    if standing is not Standing.MEMBER:
        if standing is Standing.UNKNOWN:
            logger.warning("interaction.membership_unknown", extra={"interaction": press.value})
            return Refusal.MEMBERSHIP_UNKNOWN
        return Refusal.NOT_A_MEMBER
    if policy is None:
        return None
    # Every press decides every tool, so the presser must be in the groups of each: a group is read
    # once a press, the first read that fails stops the check, a member found in a group may press.
    membership: dict[str, bool] = {}
    for check in policy.checks:
        for group_id in check.groups:
            if group_id not in membership:
                try:
                    membership[group_id] = press.user_id in await usergroup_members(slack, group_id)
                except SlackError as exc:  # anything else is a bug, not an outage: raised, never retried
                    extra = {
                        "binding": policy.binding_name,
                        "interaction_id": interaction_id,
                        "group": group_id,
                        "error": error_name(exc),
                    }
                    if may_pass(exc):
                        logger.warning("interaction.approver_group_unavailable", extra=extra)
                        return PressOutcome.RETRY
                    logger.error("interaction.approver_group_unreadable", extra=extra)
                    return Refusal.GROUPS_UNREADABLE
            if membership[group_id]:
                break
        else:
            if not check.own:
                return Refusal.NOT_AN_APPROVER
            names = ", ".join(escape(policy.tool_names[index]) for index in check.tools)
            return Refused(Refusal.NOT_A_TOOL_APPROVER, approvals.NOT_A_TOOL_APPROVER.format(tools=names))
    return None
