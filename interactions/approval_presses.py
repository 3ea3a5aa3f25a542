"""A press on an approval prompt, as the listener hands it over: who may decide, checked on every press.

The presser must be a non-bot member of the channel and, when the Binding lists approver groups, a
member of at least one of them. Groups are read with usergroups.users.list on every press, in the
order listed, never cached; the first read that fails stops the check (a member found in an earlier
group may decide):

- a permanent failure (an unknown group, a missing scope, a plan without user groups, ...) ends the
  press with a fixed message only the person sees, decides nothing, writes no audit row, leaves the
  approval pending, and logs an error naming the Binding and the interaction;
- a transient one (a timeout, a server error, a rate limit) keeps the press: a row, tried again by
  a Celery task with backoff, and sent again by beat's sweep when a worker died holding the try
  (kept_presses.py), so the retry outlives any restart.
"""

from __future__ import annotations

import enum
import logging
from dataclasses import asdict

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
from kourier.slack.incoming import SubmitPress
from kourier.slack.people import channel_members, is_bot, usergroup_members

from . import approvals, kept_presses
from .approvals import Refusal
from .bound import ANOTHER_APP, posted_by_another_app

logger = logging.getLogger(__name__)

# A press waits for no rate-limit block nor backoff: a group read that cannot answer at once is
# retried durably instead, and Slack has its 200 at once.
PRESS_POLICY = RetryPolicy(attempts=1, rate_limit_retries=0, max_wait=0.0)
PRESS_TIMEOUT_SECONDS = 1.5  # a read that hangs is a transient failure, found before Slack's 3 s pass


class Outcome(enum.Enum):
    DECIDED = "decided"
    REFUSED = "refused"
    RETRY = "retry"  # a group read failed for now: the press is kept and tried again
    STALE = "stale"  # a retry message for a try already taken (sent twice), or of a press decided since


async def take_approval_press(press: SubmitPress, *, connection_id: int, bot_token: str) -> Outcome:
    """The listener's entry: decides, refuses, or hands the press to the durable retry."""
    outcome = await decide_press(press, connection_id=connection_id, bot_token=bot_token)
    if outcome is Outcome.RETRY:
        await in_database_thread(kept_presses.keep)(
            asdict(press), connection_id=connection_id, interaction_id=int(press.value)
        )
    return outcome


async def retry_kept_press(kept_id: int, attempt: int) -> Outcome:
    """Try ``attempt`` of a kept press: decided, refused, or put off (RETRY) until the next try."""
    kept = await in_database_thread(kept_presses.claim)(kept_id, attempt)
    if kept is None:
        return Outcome.STALE
    outcome = await decide_press(
        SubmitPress(**kept.press),
        connection_id=kept.connection_id,
        bot_token=kept.bot_token,
        last_attempt=kept.last,
        kept_id=kept.id,
    )
    if outcome is Outcome.RETRY:
        await in_database_thread(kept_presses.put_off)(kept.id, attempt)
    else:
        await in_database_thread(kept_presses.forget)(kept.id)
    return outcome


async def decide_press(
    press: SubmitPress,
    *,
    connection_id: int,
    bot_token: str,
    last_attempt: bool = False,
    kept_id: int | None = None,
) -> Outcome:
    interaction_id = int(press.value) if press.value.isascii() and press.value.isdigit() else 0
    slack = async_web_client(
        bot_token,
        workspace=connection_workspace(connection_id),
        policy=PRESS_POLICY,
        timeout=PRESS_TIMEOUT_SECONDS,
    )
    if await in_database_thread(posted_by_another_app)(interaction_id, connection_id):
        await _tell(press, "another-app", ANOTHER_APP)
        return Outcome.REFUSED
    refusal = await _why_not_allowed(slack, press, interaction_id)
    if refusal is None:
        result = await in_database_thread(approvals.take_decision)(
            interaction_id,
            channel_id=press.channel_id,
            prompt_ts=press.message_ts,
            user_id=press.user_id,
            action_id=press.action_id,
            values=press.values,
            kept_press_id=kept_id,
        )
        if isinstance(result, approvals.Taken):
            return Outcome.DECIDED
        refusal, message = result.refusal, result.message
    elif isinstance(refusal, Refusal):
        message = approvals.REFUSALS[refusal]
    else:  # a group read failed for now
        if not last_attempt:
            return Outcome.RETRY
        refusal, message = Refusal.GROUPS_UNAVAILABLE, approvals.REFUSALS[Refusal.GROUPS_UNAVAILABLE]
    await _tell(press, refusal.value, message)
    return Outcome.REFUSED


async def _tell(press: SubmitPress, reason: str, message: str) -> None:
    logger.info("interaction.press_refused", extra={"interaction": press.value, "reason": reason})
    try:
        await tell_privately(press.response_url, message)
    except SlackError as exc:
        logger.warning(
            "interaction.refusal_not_told", extra={"interaction": press.value, "error": error_name(exc)}
        )


async def _why_not_allowed(slack, press: SubmitPress, interaction_id: int) -> Refusal | Outcome | None:
    policy = await in_database_thread(approvals.policy_of)(interaction_id)
    if policy is None:
        return Refusal.UNKNOWN
    try:
        if press.user_id not in await channel_members(slack, press.channel_id) or await is_bot(
            slack, press.user_id
        ):
            return Refusal.NOT_A_MEMBER
    except SlackError as exc:
        logger.warning(
            "interaction.membership_unknown", extra={"interaction": press.value, "error": error_name(exc)}
        )
        return Refusal.MEMBERSHIP_UNKNOWN
    for group_id in policy.approver_groups:
        try:
            members = await usergroup_members(slack, group_id)
        except Exception as exc:
            if may_pass(exc):
                logger.warning(
                    "interaction.approver_group_unavailable",
                    extra={
                        "binding": policy.binding_name,
                        "interaction_id": interaction_id,
                        "group": group_id,
                        "error": error_name(exc),
                    },
                )
                return Outcome.RETRY
            logger.error(
                "interaction.approver_group_unreadable",
                extra={
                    "binding": policy.binding_name,
                    "interaction_id": interaction_id,
                    "group": group_id,
                    "error": error_name(exc),
                },
            )
            return Refusal.GROUPS_UNREADABLE
        if press.user_id in members:
            return None
    return Refusal.NOT_AN_APPROVER if policy.approver_groups else None
