"""A person's direct messages with the app (spec.directMessages): who may talk to the agent in
private, the refusal of anyone else, and Slack's agent surface (suggested prompts, a thread's title).

The session core does not tell a direct message from a channel's: once a message is let through it is
routed like any other (sessions.services.route_message). A refused person's message is not stored,
and no log line holds a message's text. A press of a button or a form submitted in the conversation
answers to the same lists (``may_act``), before anything of it is read or stored.

A person the lists do not let through is refused without asking Slack again for
``REFUSAL_PACE_SECONDS``, and told once in that time: someone who is not allowed cannot spend the
workspace's budget of usergroups.users.list (which the approvers' checks share) or of posts by
writing or pressing again and again.
"""

from __future__ import annotations

import enum
import logging
from typing import Any

from bindings import directory
from bindings.manifest import DirectMessagesSpec
from bindings.models import Binding
from bindings.services import note_slack_identity
from kourier import shared_cache
from kourier.db import in_database_thread
from kourier.slack.clients import SlackError, error_name, may_pass
from kourier.slack.ephemeral import tell_privately
from kourier.slack.incoming import AppOpened, ChatMessage, SubmitPress
from kourier.slack.outbox import post_notice
from kourier.slack.people import usergroup_members

from . import notices
from .services import RouteResult, route_message

logger = logging.getLogger(__name__)

THREAD_TITLE_MAX_LENGTH = 80  # ours: Slack documents no limit; a title is read in a list
REFUSAL_ONCE_SECONDS = 3600  # a redelivery of a refused message within the hour is not answered again
REFUSAL_PACE_SECONDS = 60  # a person refused is refused again without asking Slack, and not told again


class Access(enum.Enum):
    ALLOWED = "allowed"
    REFUSED = "refused"
    UNKNOWN = "unknown"  # a user group could not be read just now: neither let through nor refused for good


async def access_of(client: Any, spec: DirectMessagesSpec, user_id: str, *, binding: str) -> Access:
    """Whether the person may talk to the agent: listed in allowedUsers or a member of one of
    allowedGroups (read from Slack every time, as approver groups are); everyone without either list.

    A group Slack will not read (a missing scope, a group gone) refuses, logged as an error for the
    operator; a failure that may pass (a timeout, a server error, a rate limit) is UNKNOWN.
    """
    if spec.open_to_everyone or user_id in spec.allowed_users:
        return Access.ALLOWED
    for group_id in spec.allowed_groups:
        try:
            members = await usergroup_members(client, group_id)
        except (SlackError, TimeoutError, OSError) as exc:
            extra = {"binding": binding, "group": group_id, "error": error_name(exc)}
            if may_pass(exc):
                logger.warning("direct_message.allowed_group_unavailable", extra=extra)
                return Access.UNKNOWN
            logger.error("direct_message.allowed_group_unreadable", extra=extra)
            return Access.REFUSED
        if user_id in members:
            return Access.ALLOWED
    return Access.REFUSED


async def paced_access_of(
    client: Any, spec: DirectMessagesSpec, user_id: str, *, binding: str
) -> tuple[Access, bool]:
    """``access_of``, paced for the people it does not let through: a refusal (or a check Slack could
    not answer) is kept ``REFUSAL_PACE_SECONDS`` for the person and the Binding, and given again in
    that time without asking Slack. True with a kept verdict, and with a fresh one another message
    kept first (a burst): the person was told already."""
    if spec.open_to_everyone or user_id in spec.allowed_users:
        return Access.ALLOWED, False
    key = f"dm-access-kept:{binding}:{user_id}"
    kept = await shared_cache.aget(key)
    if kept is not None:
        return Access(kept), True
    access = await access_of(client, spec, user_id, binding=binding)
    if access is Access.ALLOWED:
        return access, False
    return access, not await shared_cache.aadd(key, access.value, REFUSAL_PACE_SECONDS)


def is_direct_conversation(channel_id: str) -> bool:
    # Slack's ids of direct-message conversations start with D; a press's and a form's payloads carry
    # no channel type (an event's channel_type "im" is what a message is told by).
    return channel_id.startswith("D")


async def may_act(connection_id: int, client: Any, *, channel_id: str, user_id: str) -> Access:
    """Whether a person may press a button or submit a form in ``channel_id``: in a direct-message
    conversation of the Connection, only a person its direct-message Binding lets talk (paced as a
    message is); anywhere else ALLOWED, the channel's own rules deciding."""
    if not is_direct_conversation(channel_id):
        return Access.ALLOWED
    binding = await _binding(connection_id)
    spec = binding.direct_messages_spec() if binding is not None else None
    if binding is None or spec is None:
        return Access.ALLOWED  # no Binding takes these conversations: nothing of ours is there to press
    access, _ = await paced_access_of(client, spec, user_id, binding=binding.name)
    if access is not Access.ALLOWED:
        logger.info(
            "direct_message.press_refused",
            extra={"binding": binding.name, "user_id": user_id, "access": access.value},
        )
    return access


async def may_press(connection_id: int, client: Any, press: SubmitPress) -> bool:
    """``may_act`` for a press (or a form that kept its press): a refusal is told to the person alone."""
    access = await may_act(connection_id, client, channel_id=press.channel_id, user_id=press.user_id)
    if access is Access.ALLOWED:
        return True
    text = (
        notices.DIRECT_MESSAGE_PRESS_REFUSED
        if access is Access.REFUSED
        else notices.DIRECT_MESSAGE_PRESS_ACCESS_UNKNOWN
    )
    try:
        await tell_privately(press.response_url, text)
    except (SlackError, TimeoutError, OSError) as exc:
        logger.warning(
            "direct_message.refusal_not_told", extra={"channel": press.channel_id, "error": error_name(exc)}
        )
    return False


async def take_direct_message(
    connection_id: int, message: ChatMessage, client: Any, *, team_id: str, bot_user_id: str
) -> None:
    """A person's message in their direct-message conversation with the app: routed as a turn when the
    Connection's direct-message Binding lets them talk to the agent, else answered with the refusal."""
    binding = await _binding(connection_id)
    if binding is None:
        logger.info(
            "direct_message.not_taken",
            extra={
                "reason": "no Binding takes this Connection's direct messages",
                "connection_id": connection_id,
            },
        )
        return
    spec = binding.direct_messages_spec()
    assert spec is not None
    access, told = await paced_access_of(client, spec, message.user_id, binding=binding.name)
    if access is not Access.ALLOWED:
        logger.info(
            "direct_message.refused",
            extra={"binding": binding.name, "user_id": message.user_id, "access": access.value, "told": told},
        )
        if not told:
            await _refuse(client, connection_id, message, access)
        return
    result = await in_database_thread(_route, thread_sensitive=True)(
        connection_id, message, team_id=team_id, bot_user_id=bot_user_id
    )
    if result is not None and result.created and message.thread_ts is None:
        await _set_title(client, message)


def _route(connection_id: int, message: ChatMessage, *, team_id: str, bot_user_id: str) -> RouteResult | None:
    note_slack_identity(connection_id, team_id=team_id, bot_user_id=bot_user_id)
    connection = directory.current().by_id.get(connection_id)
    # The conversation's only person, let through by access_of, may answer its open pause.
    return route_message(connection, message, author_may_answer=True) if connection is not None else None


async def _binding(connection_id: int) -> Binding | None:
    return (await directory.acurrent()).binding_for_direct_messages(connection_id)


async def _refuse(client: Any, connection_id: int, message: ChatMessage, access: Access) -> None:
    key = f"dm-refused:{connection_id}:{message.channel_id}:{message.ts}"
    if await shared_cache.acount(key, REFUSAL_ONCE_SECONDS) > 1:
        return  # Slack delivered the message again: the person was answered already
    text = (
        notices.DIRECT_MESSAGE_REFUSED if access is Access.REFUSED else notices.DIRECT_MESSAGE_ACCESS_UNKNOWN
    )
    try:
        await post_notice(client, message.channel_id, message.root_ts, text, key=key)
    except (SlackError, TimeoutError, OSError) as exc:
        logger.warning(
            "direct_message.refusal_not_posted",
            extra={"channel": message.channel_id, "error": error_name(exc)},
        )


def thread_title(text: str) -> str:
    """A thread's title from its first message: the first line, cut to a readable length."""
    first_line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if len(first_line) <= THREAD_TITLE_MAX_LENGTH:
        return first_line or "New conversation"
    return first_line[: THREAD_TITLE_MAX_LENGTH - 1].rstrip() + "…"


async def _set_title(client: Any, message: ChatMessage) -> None:
    try:
        await client.assistant_threads_setTitle(
            channel_id=message.channel_id, thread_ts=message.ts, title=thread_title(message.text)
        )
    except (SlackError, TimeoutError, OSError) as exc:  # the conversation goes on without a title
        logger.info(
            "direct_message.title_not_set", extra={"channel": message.channel_id, "error": error_name(exc)}
        )


async def offer_suggested_prompts(connection_id: int, opened: AppOpened, client: Any) -> None:
    """A person opened the app: the Binding's suggested prompts, if it has any, are set for them."""
    binding = await _binding(connection_id)
    spec = binding.direct_messages_spec() if binding is not None else None
    if spec is None or not spec.suggested_prompts:
        return
    prompts = [{"title": prompt.title, "message": prompt.message} for prompt in spec.suggested_prompts]
    # The agent view takes the prompts for the Messages tab (no thread_ts: with one, Slack silently
    # ignores the call); the legacy assistant view takes them for its thread.
    thread = {"thread_ts": opened.thread_ts} if opened.thread_ts else {}
    try:
        await client.assistant_threads_setSuggestedPrompts(
            channel_id=opened.channel_id, prompts=prompts, **thread
        )
    except (SlackError, TimeoutError, OSError) as exc:
        logger.info(
            "direct_message.prompts_not_set", extra={"channel": opened.channel_id, "error": error_name(exc)}
        )
