"""State changes of sessions and turns. Ingress and tasks call these; they audit and enqueue."""

import functools
import logging
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from django import db
from django.db import transaction
from django.db.models import Q, Subquery
from django.utils import timezone

from bindings import directory
from bindings.models import Binding, Connection
from kourier.db import insert_columns, insert_unless_taken, insert_values, quoted_columns
from kourier.queue import enqueue_after_commit
from kourier.slack.clients import connection_workspace, web_client
from kourier.slack.incoming import ChatMessage

from .models import Session, ThreadNote, Turn
from .routing import Route, ThreadState, route

logger = logging.getLogger(__name__)

# uuid5 namespace for A2A message ids: the id of a turn is a pure function of its Slack message.
_MESSAGE_ID_NAMESPACE = uuid.UUID("6f1d8f2c-3b57-4b8e-9a55-1d3f0c6a7e10")


def message_id_for(connection_id: int, channel_id: str, message_ts: str) -> str:
    return str(uuid.uuid5(_MESSAGE_ID_NAMESPACE, f"{connection_id}:{channel_id}:{message_ts}"))


@dataclass(frozen=True)
class RouteResult:
    route: Route | None  # None: the channel is not bound
    created: bool = False  # False for a duplicate delivery of a message already taken
    turn_id: int | None = None


def route_message(
    connection: Connection, message: ChatMessage, *, now: datetime | None = None
) -> RouteResult:
    """Takes one Slack message: a turn, a context note, an expiry notice, or nothing.

    Safe to call for every delivery of the same message: the turn key is a unique constraint. The
    Binding is the channel's as this process last read it (bindings/directory.py).
    """
    binding = directory.current().binding_for_channel(connection.pk, message.channel_id)
    if binding is None:
        return RouteResult(route=None)
    now = now or timezone.now()
    if message.thread_ts is None:
        # A message at the top level is its thread's root: only this message (an earlier delivery of
        # it) can have started the thread's session, so it is routed as if none had.
        decision = route(message, ThreadState(has_session=False), thread_replies=binding.thread_replies)
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
    decision = route(message, thread, thread_replies=binding.thread_replies)
    if decision is Route.IGNORE:
        return RouteResult(route=decision)
    if decision is not Route.NOTE and found is not None and found.message_turn_id is not None:
        return RouteResult(route=decision, created=False, turn_id=found.message_turn_id)
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
            return RouteResult(route=decision, created=False, turn_id=turn.id)
        from . import tasks  # the tasks module imports this one

        if decision is Route.EXPIRED:
            enqueue_after_commit(tasks.tell_expired, turn.id)
        else:
            _touch(session, binding, now)
            # One message per turn: the runner adds the acknowledgment reaction before anything else.
            enqueue_after_commit(tasks.drive_session, session.id)
        return _accepted(turn.id, session.id, binding, decision)


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


ALERT_METADATA_EVENT = "kourier_alert"


def start_alert_thread(
    binding: Binding,
    text: str,
    *,
    channel_id: str | None = None,
    root_ts: str | None = None,
    now: datetime | None = None,
) -> Turn:
    """Starts an alert thread: a thread a trigger starts, with no person behind it.

    Posts ``text`` as the thread's root message, as the bot, in ``channel_id`` (default: the
    Binding's only channel), or takes the message ``root_ts`` someone else posted there. Then writes
    an alert Session and its first Turn (no user; its text is the alert's) and queues the turn once
    they are committed. The thread stays an alert thread: its replies are posted and updated, never
    streamed. Calling it again for the same root message returns the same turn.
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
    if root_ts is None:
        response = web_client(
            connection.bot_token(), workspace=connection_workspace(connection.pk)
        ).chat_postMessage(
            channel=channel_id,
            text=text,
            metadata={"event_type": ALERT_METADATA_EVENT, "event_payload": {"binding": binding.name}},
        )
        root_ts = str(response["ts"])
    now = now or timezone.now()
    with transaction.atomic():
        session, _ = Session.objects.get_or_create(
            connection=connection,
            channel_id=channel_id,
            thread_ts=root_ts,
            defaults={
                "binding": binding,
                "kind": Session.Kind.ALERT,
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
                "user_id": "",
                "text": text,
                "state": Turn.State.QUEUED,
                "message_id": message_id_for(connection.pk, channel_id, root_ts),
            },
        )
        if created:
            from . import tasks  # the tasks module imports this one

            _touch(session, binding, now)
            enqueue_after_commit(tasks.drive_session, session.id)
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
        return RouteResult(route=Route.EXPIRED if expired else Route.TURN, created=False, turn_id=turn_id)
    from . import tasks  # the tasks module imports this one

    enqueue_after_commit(tasks.drive_session, session_id)  # committed: the statement was its transaction
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
            SELECT turn.{turn_pk} AS pk, session.{quote(Session._meta.get_field("expires_at").column)} <= %s AS expired
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
        UNION ALL SELECT pk, NULL, FALSE, expired FROM taken
    """
    return sql, link


def _new_session(connection: Connection, binding: Binding, message: ChatMessage, now: datetime) -> Session:
    return Session(
        connection=connection,
        channel_id=message.channel_id,
        thread_ts=message.root_ts,
        binding=binding,
        kind=Session.Kind.CHAT,
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
        state=Turn.State.EXPIRED if expired else Turn.State.QUEUED,
        message_id=message_id_for(session.connection_id, message.channel_id, message.ts),
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


def _touch(session: Session, binding: Binding, now: datetime) -> None:
    if session.last_activity_at >= now:  # a session this delivery started: nothing to move
        return
    # Activity only moves forward, whichever of two concurrent deliveries commits last.
    Session.objects.filter(pk=session.pk).filter(Q(last_activity_at__lt=now)).update(
        last_activity_at=now, expires_at=now + binding.thread_ttl
    )


def claim_lease(session_id: int, owner: str, *, seconds: int, now: datetime | None = None) -> bool:
    """Takes the session's runner lease if it is free, expired, or already ours."""
    now = now or timezone.now()
    taken = (
        Session.objects.filter(pk=session_id)
        .filter(Q(lease_owner="") | Q(lease_expires_at__lt=now) | Q(lease_owner=owner))
        .update(lease_owner=owner, lease_expires_at=now + timedelta(seconds=seconds))
    )
    return taken == 1


def renew_lease(session_id: int, owner: str, *, seconds: int) -> bool:
    now = timezone.now()
    return (
        Session.objects.filter(pk=session_id, lease_owner=owner).update(
            lease_expires_at=now + timedelta(seconds=seconds)
        )
        == 1
    )


def release_lease(session_id: int, owner: str) -> None:
    Session.objects.filter(pk=session_id, lease_owner=owner).update(lease_owner="", lease_expires_at=None)


def next_queued_turn(session_id: int) -> Turn | None:
    return (
        Turn.objects.filter(session_id=session_id, state__in=[Turn.State.QUEUED, Turn.State.RUNNING])
        .order_by("message_ts")
        .first()
    )


__all__ = [
    "RouteResult",
    "claim_lease",
    "next_queued_turn",
    "release_lease",
    "renew_lease",
    "route_message",
    "start_alert_thread",
]


# --- The turn runner's state changes. Each is one transaction, called from async code via sync_to_async.


@dataclass(frozen=True)
class AgentSettings:
    url: str
    headers: dict[str, str]
    dialect: str
    protocol_version: str


@dataclass(frozen=True)
class TurnWork:
    """Everything a runner needs to run one turn, read in one go."""

    turn_id: int
    session_id: int
    binding_name: str
    connection_id: int
    team_id: str
    channel_id: str
    thread_ts: str
    thread_kind: str  # Session.Kind: chat (a person's message started it) or alert (a trigger did)
    message_ts: str
    user_id: str  # empty for a trigger's turn (no person)
    text: str
    message_id: str
    task_id: str  # set when an earlier attempt already reached the agent
    context_id: str
    resumed: bool  # an earlier runner started this turn and did not finish it
    reply_ts: str
    stream_cards: tuple[tuple[str, str], ...]  # (id, title) of the cards an earlier runner's stream left open
    bot_token: str
    bot_user_id: str
    agent: AgentSettings
    live: bool
    progress: str  # chat.progress: steps, steps-and-activity or activity
    ask_user: bool
    acknowledgment_emoji: str | None
    notes: tuple[tuple[str, str], ...]  # (user_id, text) of replies carried as context


def start_turn(turn_id: int, *, now: datetime | None = None) -> TurnWork | None:
    """Marks a queued turn running and gathers its work; None when it is no longer to be run."""
    now = now or timezone.now()
    with transaction.atomic():
        turn = (
            Turn.objects.select_for_update(of=("self",))
            .select_related("session__binding", "session__connection")
            .filter(pk=turn_id, state__in=[Turn.State.QUEUED, Turn.State.RUNNING])
            .first()
        )
        if turn is None:
            return None
        session, binding, connection = turn.session, turn.session.binding, turn.session.connection
        if binding is None:
            return None
        resumed = turn.state == Turn.State.RUNNING
        if not resumed:
            turn.state, turn.started_at = Turn.State.RUNNING, now
            turn.save(update_fields=["state", "started_at"])
        if binding.thread_replies == "mention":
            ThreadNote.objects.filter(
                session=session, carried_by=None, message_ts__lt=turn.message_ts
            ).update(carried_by=turn)
        notes = tuple(turn.notes.order_by("message_ts").values_list("user_id", "text"))
        return TurnWork(
            turn_id=turn.pk,
            session_id=session.pk,
            binding_name=binding.name,
            connection_id=connection.pk,
            team_id=connection.team_id,
            channel_id=turn.channel_id,
            thread_ts=session.thread_ts,
            thread_kind=session.kind,
            message_ts=turn.message_ts,
            user_id=turn.user_id,
            text=turn.text,
            message_id=turn.message_id,
            task_id=turn.task_id,
            context_id=session.context_id,
            resumed=resumed,
            reply_ts=turn.reply_ts,
            stream_cards=tuple((card["id"], card["title"]) for card in turn.stream_cards),
            bot_token=connection.bot_token(),
            bot_user_id=connection.bot_user_id,
            agent=AgentSettings(
                url=binding.agent_url,
                headers=binding.agent_headers_resolved(),
                dialect=binding.dialect,
                protocol_version=binding.protocol_version,
            ),
            live=binding.output == "live",
            progress=binding.progress,
            ask_user=binding.ask_user,
            acknowledgment_emoji=binding.acknowledgment_emoji if binding.acknowledgment_enabled else None,
            notes=notes,
        )


def record_task(turn_id: int, session_id: int, *, task_id: str, context_id: str) -> None:
    """Keeps the agent's task and context as soon as the agent names them."""
    with transaction.atomic():
        Turn.objects.filter(pk=turn_id).update(task_id=task_id)
        if context_id:
            Session.objects.filter(pk=session_id, context_id="").update(context_id=context_id)


def record_stream_cards(turn_id: int, cards: list[dict[str, str]]) -> None:
    Turn.objects.filter(pk=turn_id).update(stream_cards=cards)


def record_reply(turn_id: int, reply_ts: str) -> None:
    Turn.objects.filter(pk=turn_id, reply_ts="").update(reply_ts=reply_ts)


def finish_turn(turn_id: int, *, outcome: str, failed: bool, now: datetime | None = None) -> bool:
    """Ends a running turn. Returns whether its acknowledgment reaction is to be removed."""
    now = now or timezone.now()
    Turn.objects.filter(pk=turn_id, state=Turn.State.RUNNING).update(
        state=Turn.State.FAILED if failed else Turn.State.DONE, outcome=outcome, ended_at=now
    )
    return Turn.objects.filter(pk=turn_id, acknowledged=True).exists()


def forget_context(session_id: int) -> None:
    """The agent no longer has the conversation: the next turn starts a fresh context."""
    Session.objects.filter(pk=session_id).update(context_id="")


@dataclass(frozen=True)
class Acknowledgment:
    turn_id: int
    connection_id: int
    channel_id: str
    message_ts: str
    emoji: str
    bot_token: str


def _acknowledgment(turn: Turn, binding: Binding) -> Acknowledgment:
    return Acknowledgment(
        turn_id=turn.pk,
        connection_id=turn.connection_id,
        channel_id=turn.channel_id,
        message_ts=turn.message_ts,
        emoji=binding.acknowledgment_emoji,
        bot_token=turn.connection.bot_token(),
    )


def claim_acknowledgments(session_id: int) -> list[Acknowledgment]:
    """Claims the right to add the reaction of each of the session's turns that waits or runs without
    one: once per turn (a conditional update), in message order."""
    waiting = (
        Turn.objects.filter(
            session_id=session_id, acknowledged=False, state__in=[Turn.State.QUEUED, Turn.State.RUNNING]
        )
        .select_related("session__binding", "connection")
        .order_by("message_ts")
    )
    claimed = []
    for turn in waiting:
        binding = turn.session.binding
        if binding is None or not binding.acknowledgment_enabled:
            return []
        won = (
            Turn.objects.filter(
                pk=turn.pk, acknowledged=False, state__in=[Turn.State.QUEUED, Turn.State.RUNNING]
            ).update(acknowledged=True)
            == 1
        )
        if won:
            claimed.append(_acknowledgment(turn, binding))
    return claimed


def acknowledgment_removed(turn_id: int) -> None:
    """The reaction of an ended turn is off its message: nothing is left for the recovery sweep.

    From then on ``acknowledged`` is false again; a turn that waits or runs is never cleared, since its
    reaction is to stay (and is not claimed again: ``claim_acknowledgments`` would add it twice).
    """
    Turn.objects.filter(pk=turn_id).exclude(state__in=[Turn.State.QUEUED, Turn.State.RUNNING]).update(
        acknowledged=False
    )


# How far back the recovery sweep looks for reactions left on ended turns, and how many it takes a run.
STALE_ACKNOWLEDGMENT_HORIZON = timedelta(days=1)
STALE_ACKNOWLEDGMENT_BATCH = 50


def stale_acknowledgments(*, ended_before: datetime) -> list[Acknowledgment]:
    """Ended turns whose reaction is not known to be off their message: the runner died between ending
    the turn and removing it, or Slack failed the removal. Oldest first."""
    turns = (
        Turn.objects.filter(
            acknowledged=True,
            ended_at__lt=ended_before,
            ended_at__gte=ended_before - STALE_ACKNOWLEDGMENT_HORIZON,
        )
        .exclude(state__in=[Turn.State.QUEUED, Turn.State.RUNNING])
        .select_related("session__binding", "connection")
        .order_by("ended_at")[:STALE_ACKNOWLEDGMENT_BATCH]
    )
    return [_acknowledgment(turn, turn.session.binding) for turn in turns if turn.session.binding is not None]


def turn_is_over(turn_id: int) -> bool:
    return not Turn.objects.filter(pk=turn_id, state__in=[Turn.State.QUEUED, Turn.State.RUNNING]).exists()


def has_pending_turns(session_id: int) -> bool:
    return Turn.objects.filter(
        session_id=session_id, state__in=[Turn.State.QUEUED, Turn.State.RUNNING]
    ).exists()


def delete_sessions_expired_before(cutoff: datetime) -> int:
    """Deletes sessions whose TTL ran out before cutoff, with everything that belongs to them."""
    deleted = 0
    for session in Session.objects.filter(expires_at__lt=cutoff).only("pk", "channel_id", "thread_ts"):
        with transaction.atomic():
            session.delete()
        deleted += 1
    return deleted
