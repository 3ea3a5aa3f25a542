"""What the sessions app does with what arrives: a Slack message (a turn, a context note, an expiry
notice), an alert that starts a thread, the expiry notice itself. The listeners and tasks call these;
they change the rows and enqueue the work after commit.

The other jobs of the app have their own modules: ``turns`` (a runner's turn and lease), ``acknowledgments``
(the reaction), ``outbox`` (intended posts), ``sweeps`` (work left behind), ``runner`` (a session's
turns), ``turn_run`` (a turn's run).
"""

import functools
import logging
from dataclasses import dataclass, replace
from datetime import datetime

from asgiref.sync import async_to_sync
from django import db
from django.db import transaction
from django.db.models import Subquery
from django.utils import timezone

from bindings import directory
from bindings.manifest import ThreadReplies
from bindings.models import Binding, Connection
from kourier import tracing
from kourier.db import insert_columns, insert_unless_taken, insert_values, quoted_columns
from kourier.progress import ThreadKind
from kourier.queue import enqueue_after_commit
from kourier.slack.clients import async_web_client, connection_workspace
from kourier.slack.incoming import ChatMessage
from kourier.slack.outbox import notice_key, post_notice

from . import activity, notices, pauses
from .identity import SYSTEM_IDENTITY
from .models import PostIntent, Session, ThreadNote, Turn
from .outbox import TurnOutbox
from .routing import Route, ThreadState, route
from .task_names import DRIVE_SESSION, TELL_EXPIRED
from .turns import message_id_for

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class RouteResult:
    route: Route | None  # None: the channel is not bound
    created: bool = False  # False for a duplicate delivery of a message already taken
    turn_id: int | None = None
    # The reply would answer the thread's open pause, whose author is not yet checked: nothing was
    # stored; route it again with ``author_may_answer`` once the door checked them as a press's presser.
    author_unchecked: bool = False


def route_message(
    connection: Connection,
    message: ChatMessage,
    *,
    author_may_answer: bool | None = None,
    now: datetime | None = None,
) -> RouteResult:
    """Takes one Slack message: a turn, a context note, an expiry notice, or nothing.

    Safe to call for every delivery of the same message: the turn key is a unique constraint. The
    Binding is the channel's as this process last read it (bindings/directory.py). A reply that would
    answer the thread's open pause is its answer only when ``author_may_answer`` (None: not checked
    yet, and the result says so; False: it is routed as any other reply).
    """
    binding = binding_for(connection, message)
    if binding is None:
        return RouteResult(route=None)
    thread_replies = ThreadReplies(binding.thread_replies)
    if message.direct:
        # A direct message is spoken to the app: every top-level message starts a session, and every
        # reply in its thread is a turn, as a mention would be in a channel.
        message, thread_replies = replace(message, mentions_bot=True), ThreadReplies.ALL
    now = now or timezone.now()
    if message.thread_ts is None:
        # A message at the top level is its thread's root: only this message (an earlier delivery of
        # it) can have started the thread's session, so it is routed as if none had.
        decision = route(message, ThreadState(has_session=False), thread_replies=thread_replies)
        if decision is Route.IGNORE:
            return RouteResult(route=decision)
        started = _start_thread_in_one_statement(connection, binding, message, now)
        if started is not None:
            return started
    # One read, before the write transaction, tells the thread's state and whether this message has
    # its turn already: a redelivery (Slack sends two events per mention) takes no write lock. A
    # delivery racing this one is settled by the unique constraints the inserts below yield to.
    found = (
        Session.objects.filter(
            connection=connection, channel_id=message.channel_id, thread_ts=message.root_ts
        )
        .annotate(message_turn_id=Subquery(_turn_of(connection.pk, message).values("pk")[:1]))
        .first()
    )
    session: Session | None = found
    thread = ThreadState(has_session=session is not None, expired=bool(session and session.expires_at <= now))
    if found is not None and not thread.expired and message.thread_ts and found.message_turn_id is None:
        # The agent's open question may take a typed reply: the first one from someone who may answer
        # it (checked as a press's presser is) is its answer, mention or not.
        if (
            author_may_answer is None
            and message.text.strip()
            and pauses.current().awaits_typed_reply(found.pk)
        ):
            return RouteResult(route=Route.TURN, author_unchecked=True)
        answer_turn_id = (
            pauses.current().take_typed_reply(
                found, message_ts=message.ts, user_id=message.user_id, text=message.text, now=now
            )
            if author_may_answer
            else None
        )
        if answer_turn_id is not None:
            return RouteResult(route=Route.TURN, created=True, turn_id=answer_turn_id)
    decision = route(message, thread, thread_replies=thread_replies)
    if decision is Route.IGNORE:
        return RouteResult(route=decision)
    if decision is not Route.NOTE and found is not None and found.message_turn_id is not None:
        return _taken_before(message, decision, session_id=found.pk, turn_id=found.message_turn_id)
    with transaction.atomic():
        if decision is Route.NOTE:
            assert session is not None
            created = _take_note(session, message)
            if created:
                _touch(session, binding, now)
            return RouteResult(route=decision, created=created)
        if session is None:
            session = _start_session(connection, binding, message, now)
        turn, created = _take_turn(session, message, expired=decision is Route.EXPIRED)
        if not created:
            return _taken_before(message, decision, session_id=session.pk, turn_id=turn.id)
        if decision is Route.EXPIRED:
            enqueue_after_commit(TELL_EXPIRED, turn.id)
        else:
            _touch(session, binding, now)
            # One message per turn: the runner adds the acknowledgment reaction before anything else.
            enqueue_after_commit(DRIVE_SESSION, session.id)
        return _accepted(turn.id, session.id, binding, decision)


def binding_for(connection: Connection, message: ChatMessage) -> Binding | None:
    """The Binding that takes the message: its channel's, or for a direct message the Connection's
    direct-message Binding (None: nothing takes it)."""
    found = directory.current()
    if message.direct:
        return found.binding_for_direct_messages(connection.pk)
    return found.binding_for_channel(connection.pk, message.channel_id)


def _taken_before(message: ChatMessage, decision: Route, *, session_id: int, turn_id: int) -> RouteResult:
    """A message whose turn is stored already.

    Slack sends a message again only when no delivery of it was acknowledged: the process that took it
    may have died after its commit and before it queued the turn (the commit and the queue are two
    systems). Such a redelivery queues the session again; a runner finds nothing to do when the turn
    ran already. A plain second delivery (Slack sends a mention as two events) queues nothing.
    """
    if message.redelivered and decision is Route.TURN:
        enqueue_after_commit(DRIVE_SESSION, session_id)
        logger.info("turn.queued_again", extra={"turn_id": turn_id, "session_id": session_id})
    return RouteResult(route=decision, created=False, turn_id=turn_id)


def _accepted(turn_id: int, session_id: int, binding: Binding, decision: Route) -> RouteResult:
    logger.info(
        "turn.accepted",
        extra={
            "turn_id": turn_id,
            "session_id": session_id,
            "binding": binding.name,
            "route": decision.value,
        },
    )
    return RouteResult(route=decision, created=True, turn_id=turn_id)


def start_alert_thread(
    binding: Binding,
    text: str,
    *,
    root_ts: str,
    root_key: str = "",
    channel_id: str | None = None,
    now: datetime | None = None,
) -> Turn:
    """Starts an alert thread on its root message ``root_ts`` (the alerts app posted it, through the
    outbox under ``root_key``, in ``channel_id``; default: the Binding's only channel): writes an
    alert Session and its first Turn, filed under the system identity (no person wrote it; its text
    is the alert's), and queues the turn once they are committed. The session takes over the root
    message's record (``PostIntent``), which is deleted with it. The thread stays an alert thread: its
    replies are posted and updated, never streamed. Calling it again for the same root message
    returns the same turn.
    """
    if not text.strip():
        raise ValueError("an alert needs text")
    channels = binding.channel_ids()
    if channel_id is None:
        if len(channels) != 1:
            raise ValueError(f"binding {binding.name} has {len(channels)} channels; name the alert's channel")
        channel_id = channels[0]
    elif channel_id not in channels:
        raise ValueError(f"channel {channel_id} is not bound to binding {binding.name}")
    connection = binding.connection
    now = now or timezone.now()
    with transaction.atomic():
        session, _ = Session.objects.get_or_create(
            connection=connection,
            channel_id=channel_id,
            thread_ts=root_ts,
            defaults={
                "binding": binding,
                "kind": ThreadKind.ALERT,
                "last_activity_at": now,
                "expires_at": now + binding.thread_ttl,
            },
        )
        turn, created = Turn.objects.get_or_create(
            connection=connection,
            channel_id=channel_id,
            message_ts=root_ts,
            defaults={
                "session": session,
                "user_id": SYSTEM_IDENTITY,
                "text": text,
                "state": Turn.State.QUEUED,
                "message_id": message_id_for(connection.pk, channel_id, root_ts),
                "traceparent": tracing.current_traceparent(),  # the delivery task's: the trigger's trace
            },
        )
        if root_key:
            PostIntent.objects.filter(key=root_key, turn=None, session=None).update(session=session)
        if created:
            _touch(session, binding, now)
            enqueue_after_commit(DRIVE_SESSION, session.id)
            logger.info(
                "alert.started", extra={"turn_id": turn.id, "session_id": session.id, "binding": binding.name}
            )
    return turn


# The unique constraints that make a second delivery of a message collapse onto the first.
_SESSION_KEY = ("connection", "channel_id", "thread_ts")
_MESSAGE_KEY = ("connection", "channel_id", "message_ts")


def _turn_of(connection_id: int, message: ChatMessage):
    return Turn.objects.filter(
        connection_id=connection_id, channel_id=message.channel_id, message_ts=message.ts
    )


def _start_thread_in_one_statement(
    connection: Connection, binding: Binding, message: ChatMessage, now: datetime
) -> RouteResult | None:
    """A top-level mention's session and turn in one statement: the thread's one round trip.

    Inserts both unless the message's turn is already stored (a redelivery then writes nothing and
    gets the turn's id); the statement commits on its own (autocommit), and the turn is enqueued
    after. None when this cannot tell (SQLite has no INSERT in a WITH; a session this message's
    other delivery is committing meanwhile): the caller routes the message the general way.
    """
    database = db.connections[db.router.db_for_write(Turn)]
    if database.vendor != "postgresql":
        return None
    session = _new_session(connection, binding, message, now)
    turn = _new_turn(session, message, expired=False)
    sql, _ = _start_thread_statement(database.alias)
    with database.cursor() as cursor:
        cursor.execute(sql, _start_thread_params(session, turn, now, database))
        row = cursor.fetchone()
    if row is None:
        return None
    turn_id, session_id, created, expired = row
    if not created:
        decision = Route.EXPIRED if expired else Route.TURN
        return _taken_before(message, decision, session_id=session_id, turn_id=turn_id)
    enqueue_after_commit(DRIVE_SESSION, session_id)  # committed: the statement was its transaction
    return _accepted(turn_id, session_id, binding, Route.TURN)


def _start_thread_params(session: Session, turn: Turn, now: datetime, database) -> list:
    _, link = _start_thread_statement(database.alias)
    turn_values = insert_values(turn, database)
    del turn_values[link]  # the turn's session is the one the statement inserts
    key = [turn.connection_id, turn.channel_id, turn.message_ts]
    return [now, *key, *insert_values(session, database), *turn_values]


@functools.cache
def _start_thread_statement(alias: str) -> tuple[str, int]:
    """The SQL of ``_start_thread_in_one_statement`` on a database, and the place of the turn's
    session among the turn's values (the statement fills it in)."""
    database = db.connections[alias]
    quote = database.ops.quote_name
    session_columns, turn_columns = insert_columns(Session, database), insert_columns(Turn, database)
    link = turn_columns.index(quote(Turn._meta.get_field("session").column))
    turn_placeholders = ["%s"] * len(turn_columns)
    turn_placeholders[link] = "new_session.pk"
    turn_key = quoted_columns(Turn, _MESSAGE_KEY, database)
    turns, sessions = quote(Turn._meta.db_table), quote(Session._meta.db_table)
    turn_pk, session_pk = quote(Turn._meta.pk.column), quote(Session._meta.pk.column)
    sql = f"""
        WITH taken AS (
            SELECT turn.{turn_pk} AS pk, session.{session_pk} AS session_pk,
                session.{quote(Session._meta.get_field("expires_at").column)} <= %s AS expired
            FROM {turns} turn JOIN {sessions} session ON session.{session_pk} = turn.{turn_columns[link]}
            WHERE {" AND ".join(f"turn.{column} = %s" for column in turn_key)}
        ), new_session AS (
            INSERT INTO {sessions} ({", ".join(session_columns)})
            SELECT {", ".join(["%s"] * len(session_columns))} WHERE NOT EXISTS (SELECT FROM taken)
            ON CONFLICT ({", ".join(quoted_columns(Session, _SESSION_KEY, database))}) DO NOTHING
            RETURNING {session_pk} AS pk
        ), new_turn AS (
            INSERT INTO {turns} ({", ".join(turn_columns)})
            SELECT {", ".join(turn_placeholders)} FROM new_session
            ON CONFLICT ({", ".join(turn_key)}) DO NOTHING
            RETURNING {turn_pk} AS pk, {turn_columns[link]} AS session_pk
        )
        SELECT pk, session_pk, TRUE, FALSE FROM new_turn
        UNION ALL SELECT pk, session_pk, FALSE, expired FROM taken
    """
    return sql, link


def _new_session(connection: Connection, binding: Binding, message: ChatMessage, now: datetime) -> Session:
    return Session(
        connection=connection,
        channel_id=message.channel_id,
        thread_ts=message.root_ts,
        binding=binding,
        kind=ThreadKind.CHAT,
        last_activity_at=now,
        expires_at=now + binding.thread_ttl,
    )


def _start_session(connection: Connection, binding: Binding, message: ChatMessage, now: datetime) -> Session:
    session = _new_session(connection, binding, message, now)
    if insert_unless_taken(session, _SESSION_KEY):
        return session
    # Another delivery started the thread's session since this one looked.
    return Session.objects.get(
        connection=connection, channel_id=message.channel_id, thread_ts=message.root_ts
    )


def _new_turn(session: Session, message: ChatMessage, *, expired: bool) -> Turn:
    return Turn(
        connection_id=session.connection_id,
        channel_id=message.channel_id,
        message_ts=message.ts,
        session=session,
        user_id=message.user_id,
        text=message.text,
        files=[shared.as_json() for shared in message.files],
        state=Turn.State.EXPIRED if expired else Turn.State.QUEUED,
        message_id=message_id_for(session.connection_id, message.channel_id, message.ts),
        traceparent=tracing.current_traceparent(),  # Slack's event's (or the alert's) trace
    )


def _take_turn(session: Session, message: ChatMessage, *, expired: bool) -> tuple[Turn, bool]:
    turn = _new_turn(session, message, expired=expired)
    if insert_unless_taken(turn, _MESSAGE_KEY):
        return turn, True
    return _turn_of(session.connection_id, message).get(), False


def _take_note(session: Session, message: ChatMessage) -> bool:
    note = ThreadNote(
        connection_id=session.connection_id,
        channel_id=message.channel_id,
        message_ts=message.ts,
        session=session,
        user_id=message.user_id,
        text=message.text,
    )
    return insert_unless_taken(note, _MESSAGE_KEY)


def file_system_note(session_id: int, *, message_ts: str, text: str, now: datetime | None = None) -> bool:
    """Files a note the product posted in an alert thread (an alert joined, fired again, resolved)
    under the system identity, for the session's next turn to carry: it starts no turn itself. The
    note is the thread's activity, as a message is: it moves the thread's expiry, unless the thread
    has expired (a message there is not taken either). False when the message was filed already."""
    now = now or timezone.now()
    session = Session.objects.select_related("binding").get(pk=session_id)
    note = ThreadNote(
        connection_id=session.connection_id,
        channel_id=session.channel_id,
        message_ts=message_ts,
        session=session,
        user_id=SYSTEM_IDENTITY,
        text=text,
    )
    if not insert_unless_taken(note, _MESSAGE_KEY):
        return False
    if session.binding is not None and session.expires_at > now:
        _touch(session, session.binding, now)
    return True


def _touch(session: Session, binding: Binding, now: datetime) -> None:
    activity.touch(session, binding.thread_ttl, now)


def tell_expired(turn_id: int) -> None:
    """Answers a reply in an expired thread with the expiry notice, once."""
    turn = (
        Turn.objects.select_related("session__binding", "connection").filter(pk=turn_id, outcome="").first()
    )
    if turn is None:
        return
    binding = turn.session.binding
    direct = binding is not None and binding.direct_messages is not None
    client = async_web_client(turn.connection.bot_token(), workspace=connection_workspace(turn.connection_id))
    async_to_sync(post_notice)(
        client,
        turn.channel_id,
        turn.session.thread_ts,
        notices.EXPIRED_DIRECT_MESSAGE if direct else notices.EXPIRED,
        key=notice_key(turn.message_id, "expired"),
        outbox=TurnOutbox(turn_id),
    )
    Turn.objects.filter(pk=turn_id).update(outcome=Turn.Outcome.EXPIRED, ended_at=timezone.now())
