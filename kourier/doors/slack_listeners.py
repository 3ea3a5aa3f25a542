"""The Bolt app of each Connection and its listeners: verify Slack's requests and hand messages to the
sessions app. Served over HTTP by kourier/doors/slack.py and over Socket Mode by `manage.py socket`.

Listeners only read the event (kourier/slack/incoming.py) and call a service; the service commits
the rows and enqueues the work, and Bolt acks once the listener returns (process_before_response),
so an acked event is always stored. An event they cannot read is acked and dropped, with a log line
saying why (never its text).
"""

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import replace

from slack_bolt.async_app import AsyncApp
from slack_bolt.authorization import AuthorizeResult
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from bindings import directory
from bindings.models import Connection
from bindings.services import note_slack_identity
from interactions import deny_reasons, feedback
from interactions.commands import answer_command
from interactions.home import publish_home
from interactions.presses import receive_press, typed_reply_author_may_answer
from interactions.registry import ACTIONS as PROMPT_ACTIONS
from interactions.stops import receive_session_stop, receive_stop_press
from kourier.db import in_database_thread
from kourier.slack.blocks import FEEDBACK_ACTIONS
from kourier.slack.clients import async_web_client, connection_workspace
from kourier.slack.identity import identity_of
from kourier.slack.incoming import (
    ChatMessage,
    IgnoredEvent,
    UnreadableEvent,
    home_opened_by,
    is_redelivery,
    read_app_opened,
    read_message_event,
    read_modal,
    read_session_stop,
    read_submit,
)
from kourier.slack.people import forget_channel_members
from kourier.slack.surfaces import ASK_ABOUT_MESSAGE, read_message_shortcut, read_slash_command
from sessions.direct_messages import Access, may_act, may_press, offer_suggested_prompts, take_direct_message
from sessions.notices import SURFACE_UNREADABLE
from sessions.services import RouteResult, route_message
from sessions.stops import STOP_ACTION
from sessions.surfaces import ask_about_message, tell

logger = logging.getLogger(__name__)

_apps: dict[tuple[int, str], AsyncApp] = {}


def bolt_app_for(connection: Connection) -> AsyncApp:
    """One Bolt app per Connection and secrets, made on first use and kept for the process."""
    key = (
        connection.pk,
        f"{connection.bot_token()}|{connection.signing_secret()}|{connection.slash_command}",
    )
    app = _apps.get(key)
    if app is None:
        app = _build_app(connection)
        _apps[key] = app
    return app


def authorize_once(client: AsyncWebClient) -> Callable[..., Awaitable[AuthorizeResult]]:
    """Bolt's authorize for one bot token: its auth.test is called once per process (the client's
    ``identity``, shared by every app and client of the token).

    Bolt's own single-token authorization calls auth.test for every request that arrives before the
    first call answers: a burst of events at start-up made a burst of calls.
    """
    identity: AsyncSlackResponse | None = None
    first_call = asyncio.Lock()

    async def authorize(user_id: str | None) -> AuthorizeResult:
        nonlocal identity
        if identity is None:
            async with first_call:
                if identity is None:
                    identity = await identity_of(client)
        return AuthorizeResult(
            enterprise_id=identity.get("enterprise_id"),
            team_id=identity.get("team_id"),
            bot_id=identity.get("bot_id"),
            bot_user_id=identity.get("user_id"),
            bot_token=client.token,
            bot_scopes=identity.headers.get("x-oauth-scopes"),
            user_id=user_id,
        )

    return authorize


def _build_app(connection: Connection) -> AsyncApp:
    workspace = connection_workspace(connection.pk)
    app = AsyncApp(
        name=f"kourier-{connection.name}",
        # No token here: authorize gives each request its token, with the identity auth.test named.
        client=async_web_client(None, workspace=workspace),
        authorize=authorize_once(async_web_client(connection.bot_token(), workspace=workspace)),
        signing_secret=connection.signing_secret(),
        process_before_response=True,
        logger=logging.getLogger("kourier.slack.bolt"),
    )
    connection_id = connection.pk

    async def take_message(event: dict, context, body: dict, request) -> None:
        read = read_message_event(
            event, team_id=body.get("team_id", ""), bot_user_id=context.bot_user_id or ""
        )
        if isinstance(read, ChatMessage) and is_redelivery(request.headers):
            read = replace(read, redelivered=True)
        if isinstance(read, UnreadableEvent):
            logger.warning(
                "slack.event_unreadable", extra={"reason": read.reason, "connection_id": connection_id}
            )
            return
        if isinstance(read, IgnoredEvent):
            logger.debug("slack.event_ignored", extra={"reason": read.reason, "connection_id": connection_id})
            return
        if read.direct:
            await take_direct_message(
                connection_id,
                read,
                context.client,
                team_id=context.team_id or "",
                bot_user_id=context.bot_user_id or "",
            )
            return
        # On ingress's few threads (kourier.db.ingress_threads), not the loop's executor: a burst of
        # events would open a database connection per executor thread and contend for the GIL.
        team_id, bot_user_id = context.team_id or "", context.bot_user_id or ""
        routed = await in_database_thread(_route, thread_sensitive=True)(
            connection_id, read, team_id=team_id, bot_user_id=bot_user_id
        )
        if routed is None or not routed.author_unchecked:
            return
        # The reply would answer the agent's open question: its author is checked as a Submit's
        # presser is, outside the database threads; then it is routed again with the verdict.
        may_answer = await typed_reply_author_may_answer(
            read, connection_id=connection_id, bot_token=bot_token
        )
        if may_answer is not None:  # None: not taken, and its author asked to send it again
            await in_database_thread(_route, thread_sensitive=True)(
                connection_id, read, team_id=team_id, bot_user_id=bot_user_id, author_may_answer=may_answer
            )

    app.event("app_mention")(take_message)
    app.event("message")(take_message)

    async def forget_members(event: dict) -> None:
        # Someone left or joined a channel the app is in: who may answer or decide there is read from
        # Slack again at the next press or typed answer, not taken from the cache (for up to a minute).
        channel = event.get("channel")
        if isinstance(channel, str) and channel:
            await forget_channel_members(channel)

    app.event("member_left_channel")(forget_members)
    app.event("member_joined_channel")(forget_members)

    async def take_app_opened(event: dict, context) -> None:
        home_user = home_opened_by(event)
        if home_user is not None:
            await publish_home(connection_id, home_user, context.client)
            return
        opened = read_app_opened(event)
        if isinstance(opened, UnreadableEvent):
            logger.warning(
                "slack.event_unreadable", extra={"reason": opened.reason, "connection_id": connection_id}
            )
            return
        if isinstance(opened, IgnoredEvent):
            logger.debug(
                "slack.event_ignored", extra={"reason": opened.reason, "connection_id": connection_id}
            )
            return
        await offer_suggested_prompts(connection_id, opened, context.client)

    app.event("app_home_opened")(take_app_opened)
    app.event("assistant_thread_started")(take_app_opened)

    async def take_session_stop(event: dict) -> None:
        stop = read_session_stop(event)
        if isinstance(stop, UnreadableEvent):
            logger.warning(
                "slack.event_unreadable", extra={"reason": stop.reason, "connection_id": connection_id}
            )
            return
        await receive_session_stop(stop, connection_id=connection_id, bot_token=connection.bot_token())

    app.event("agent_session_stopped")(take_session_stop)

    async def ignore_other_events(ack, event: dict) -> None:
        # Slack retries events that are not answered 2xx; the ones we don't use are acked and dropped.
        reason = f"event type not used: {event['type']}"
        logger.debug("slack.event_ignored", extra={"reason": reason, "connection_id": connection_id})
        await ack()

    app.event(re.compile(".*"))(ignore_other_events)

    # A press or a form in a direct-message conversation answers to its Binding's allow-list first
    # (may_press, may_act), as the person's messages do: a refused one is read no further.
    bot_token = connection.bot_token()

    def press_listener(take: Callable[..., Awaitable[object]]) -> Callable[..., Awaitable[None]]:
        """A button's listener: the press read, let through, and handed to ``take``."""

        async def take_press(ack, body: dict, action: dict, client) -> None:
            await ack()
            press = read_submit(body, action)
            if isinstance(press, UnreadableEvent):
                logger.warning(
                    "slack.press_unreadable", extra={"reason": press.reason, "connection_id": connection_id}
                )
                return
            if await may_press(connection_id, client, press):
                await take(press, connection_id=connection_id, bot_token=bot_token)
                if press.in_view:  # decided in the Home tab: it shows what waits now
                    await publish_home(connection_id, press.user_id, client)

        return take_press

    take_prompt_press = press_listener(receive_press)
    for prompt_action in PROMPT_ACTIONS:
        app.action(prompt_action)(take_prompt_press)
    take_feedback_press = press_listener(feedback.receive_thumbs_press)
    for feedback_action in FEEDBACK_ACTIONS:
        app.action(feedback_action)(take_feedback_press)
    app.action(STOP_ACTION)(press_listener(receive_stop_press))

    async def ignore_other_actions(ack) -> None:
        # Choosing an option in a prompt's inputs sends nothing (they are input blocks); anything else
        # is acked so that Slack shows no error.
        await ack()

    app.action(re.compile(".*"))(ignore_other_actions)

    async def take_deny_reason(ack, body: dict, client) -> None:
        # A reason modal's submission: the press it kept, with the reason, down the one press path.
        submission = read_modal(body)
        if isinstance(submission, UnreadableEvent):
            logger.warning(
                "slack.modal_unreadable", extra={"reason": submission.reason, "connection_id": connection_id}
            )
            await ack()
            return
        typed = deny_reasons.typed_reason(submission)
        problem = deny_reasons.reason_problem(typed)
        if problem is not None:
            await ack(response_action="errors", errors={deny_reasons.REASON_BLOCK: problem})
            return
        await ack()
        press = deny_reasons.press_of(submission, typed)
        if press is None:
            logger.warning(
                "slack.modal_unreadable",
                extra={"reason": "private_metadata is not a press", "connection_id": connection_id},
            )
            return
        if await may_press(connection_id, client, press):
            await receive_press(press, connection_id=connection_id, bot_token=bot_token)

    async def reason_modal_closed(ack, body: dict) -> None:
        await ack()  # closing the reason modal decides nothing
        logger.info("interaction.reason_modal_closed", extra={"connection_id": connection_id})

    async def take_feedback_comment(ack, body: dict, client) -> None:
        submission = read_modal(body)
        comment = None if isinstance(submission, UnreadableEvent) else feedback.read_comment(submission)
        if isinstance(comment, str):
            await ack(response_action="errors", errors={feedback.COMMENT_BLOCK: comment})
            return
        await ack()
        if comment is None:
            logger.warning(
                "slack.modal_unreadable",
                extra={"reason": "not a feedback modal", "connection_id": connection_id},
            )
            return
        channel_id = await in_database_thread(feedback.channel_of, thread_sensitive=True)(comment.feedback_id)
        allowed = await may_act(connection_id, client, channel_id=channel_id or "", user_id=comment.user_id)
        if allowed is Access.ALLOWED:
            await in_database_thread(feedback.add_comment, thread_sensitive=True)(comment)

    # The slash command and the message shortcut (issue 33): read, then handed to their service, which
    # answers refusals privately on the request's response_url. Slack does not send either again.
    async def take_command(ack, body: dict, context) -> None:
        await ack()
        command = read_slash_command(body)
        if isinstance(command, UnreadableEvent):
            await _unreadable_surface(body, command.reason, connection_id)
            return
        await answer_command(connection_id, command, context.client, bot_user_id=context.bot_user_id or "")

    async def take_shortcut(ack, body: dict, context) -> None:
        await ack()
        shortcut = read_message_shortcut(body)
        if isinstance(shortcut, UnreadableEvent):
            await _unreadable_surface(body, shortcut.reason, connection_id)
            return
        await ask_about_message(
            connection_id, shortcut, context.client, bot_user_id=context.bot_user_id or ""
        )

    async def ignore_other_commands(ack, body: dict) -> None:
        await ack()
        logger.info(
            "slack.event_ignored",
            extra={
                "reason": f"command not the Connection's: {body.get('command')}",
                "connection_id": connection_id,
            },
        )

    async def ignore_other_shortcuts(ack, body: dict) -> None:
        await ack()
        logger.info(
            "slack.event_ignored",
            extra={
                "reason": f"shortcut not declared: {body.get('callback_id')}",
                "connection_id": connection_id,
            },
        )

    # The Connection's slashCommand: the one the Slack app's manifest declares (/kourier by default).
    app.command(connection.slash_command)(take_command)
    app.command(re.compile(".*"))(ignore_other_commands)
    app.shortcut(ASK_ABOUT_MESSAGE)(take_shortcut)
    app.shortcut(re.compile(".*"))(ignore_other_shortcuts)

    app.view(feedback.CALLBACK_ID)(take_feedback_comment)
    app.view(deny_reasons.CALLBACK_ID)(take_deny_reason)
    app.view_closed(deny_reasons.CALLBACK_ID)(reason_modal_closed)
    return app


def _route(
    connection_id: int,
    message: ChatMessage,
    *,
    team_id: str,
    bot_user_id: str,
    author_may_answer: bool | None = None,
) -> RouteResult | None:
    note_slack_identity(connection_id, team_id=team_id, bot_user_id=bot_user_id)
    connection = directory.current().by_id.get(connection_id)
    if connection is None:
        logger.info("slack.connection_gone", extra={"connection_id": connection_id})
        return None
    return route_message(connection, message, author_may_answer=author_may_answer)


async def _unreadable_surface(body: dict, reason: str, connection_id: int) -> None:
    """A command or shortcut Slack would not send: logged (never its text), and its person told, privately,
    when it says where (a response_url that is Slack's: tell_privately checks)."""
    logger.warning("slack.surface_unreadable", extra={"reason": reason, "connection_id": connection_id})
    response_url = body.get("response_url")
    if isinstance(response_url, str) and response_url:
        await tell(response_url, SURFACE_UNREADABLE, channel=str(body.get("channel_id") or ""))


def forget_apps() -> None:
    """Drops every Bolt app (for tests; a restart does the same)."""
    _apps.clear()
