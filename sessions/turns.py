"""Turns and the session's runner lease: the state changes a runner makes, one transaction each.

Async callers reach them through ``kourier.db.in_database_thread``.
"""

from __future__ import annotations

import functools
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from django.db import transaction
from django.db.models import Case, Exists, OuterRef, Q, QuerySet, Sum, When
from django.utils import timezone

from bindings.manifest import FilesSpec, Mentions, Output, ThreadReplies, UserIdentity
from kourier.db import CompiledFirst
from kourier.progress import ProgressMode, ThreadKind
from kourier.slack import call_log
from kourier.slack.files import SharedFile

from . import pauses
from .models import OPEN_TURN_STATES, Session, ThreadNote, Turn
from .thread_context import Bounds

# uuid5 namespace for A2A message ids: the id of a turn is a pure function of its Slack message.
_MESSAGE_ID_NAMESPACE = uuid.UUID("6f1d8f2c-3b57-4b8e-9a55-1d3f0c6a7e10")


def message_id_for(connection_id: int, channel_id: str, message_ts: str) -> str:
    """The A2A messageId of the turn of one Slack message (design invariant 4)."""
    return str(uuid.uuid5(_MESSAGE_ID_NAMESPACE, f"{connection_id}:{channel_id}:{message_ts}"))


# --- the lease: one runner per session ---------------------------------------------------------------


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


def next_queued_turn(session_id: int, *, now: datetime | None = None) -> Turn | None:
    """The turn the session's runner runs next: one a runner left half-way, then an answer to the
    agent's question, then people's messages in order. While a pause waits for people they wait: the
    agent's task is paused on it, and only the turn that asked may still be running. So they do behind
    a person's answer kept until the agent can be reached again, until it is due or a reply comes
    (``Pauses.holds``; interactions/kept_answers.py). One statement: the pause check is a condition
    of it, not a query of its own; built and compiled by the ORM once per connection, not at every look
    (docs/performance.md, issue 17 point 6)."""
    pauses_now = pauses.current()
    look = _next_queued_looks.get(pauses_now)
    if look is None:
        look = _next_queued_looks[pauses_now] = CompiledFirst(
            Turn, functools.partial(_next_queued, pauses_now), _LOOK_STAND_INS
        )
    return look(session_id=session_id, now=now or timezone.now())


def _next_queued(pauses_now: pauses.Pauses, *, session_id: int, now: datetime) -> QuerySet[Turn]:
    waiting = Turn.objects.filter(session_id=session_id, state__in=OPEN_TURN_STATES)
    held = pauses_now.holds(session_id, now=now)
    if held is not None:
        waiting = waiting.filter(Q(state=Turn.State.RUNNING) | ~held)
    return waiting.order_by(
        Case(When(state=Turn.State.RUNNING, then=0), When(kind=Turn.Kind.MESSAGE, then=2), default=1),
        "message_ts",
    )


# The look compiled for each implementation of the pauses handed in (tests hand in their own), with
# the values it is compiled with: no session has these ids, and no kept answer these times.
_next_queued_looks: dict[pauses.Pauses, CompiledFirst[Turn]] = {}
_LOOK_STAND_INS = (
    {"session_id": -7_000_000_001, "now": datetime(2001, 2, 3, 4, 5, 6, 7, tzinfo=UTC)},
    {"session_id": -7_000_000_002, "now": datetime(2002, 3, 4, 5, 6, 7, 8, tzinfo=UTC)},
)


def lease_next_turn(session_id: int, owner: str, *, seconds: int, now: datetime | None = None) -> Turn | None:
    """The turn the runner ``owner`` runs next, under the session's lease (taken, or renewed); None
    when another runner holds the lease, or when nothing is to run: the lease is then let go.

    One transaction, the lease's write first: it holds the session's row until the commit, so a turn
    stored after the look below finds the lease free once it is let go (its runner's ``claim_lease``
    waits for this commit), and a turn stored before it is seen here. The runner's look before it
    starts and its look after every turn, each in one hand-over to the database thread.
    """
    with transaction.atomic():
        if not claim_lease(session_id, owner, seconds=seconds, now=now):
            return None
        turn = next_queued_turn(session_id)
        if turn is None:
            release_lease(session_id, owner)
        return turn


def has_runnable_turns(session_id: int) -> bool:
    """Whether the session has a turn to run now (replies behind an open question wait for it)."""
    return next_queued_turn(session_id) is not None


def turn_is_over(turn_id: int) -> bool:
    return not Turn.objects.filter(pk=turn_id, state__in=OPEN_TURN_STATES).exists()


# --- one turn ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AgentSettings:
    url: str
    headers: dict[str, str]
    dialect: str
    protocol_version: str
    user_identity: str = UserIdentity.NONE.value  # spec.agent.userIdentity (sessions/identity.py)


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
    thread_kind: ThreadKind  # chat (a person's message started it) or alert (a trigger did)
    direct: bool  # in a person's direct messages with the app: Slack's agent status shows while it runs
    kind: Turn.Kind  # a message, or an answer to the agent's question
    message_ts: str
    user_id: str  # the system identity for a trigger's turn (no person; sessions/identity.py)
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
    progress: ProgressMode
    ask_user: bool  # interactions.askUser: a question is put to the channel, not cancelled
    tool_approvals: bool  # interactions.toolApprovals: an approval request is put to the channel
    acknowledgment_emoji: str | None
    notes: tuple[tuple[str, str], ...]  # (user_id, text) of replies carried as context
    allow_user_mentions: bool  # replies.allowMentions: users
    max_messages: int  # replies.maxMessages: the most messages one answer takes
    accepted_at: datetime  # when its message was taken as a turn
    started_at: datetime  # when a runner first started it
    feedback: bool = False  # spec.feedback: an answer's final reply carries thumbs up and down
    budget_spent: BudgetSpent | None = None  # the channel's daily token budget is used (``budget_spent``)
    # A mention that started its session in a thread Kourier did not start carries the thread so far
    # within these bounds (spec.chat.threadContext; sessions/thread_context.py); None: it carries nothing.
    thread_context: Bounds | None = None
    # The files its message shares (issue 30), and the Binding's bounds for files both ways.
    files: tuple[SharedFile, ...] = ()
    files_spec: FilesSpec = field(default_factory=FilesSpec)
    # The Connection's spec.agentSessions: the thread's Slack agent session follows the turn.
    agent_sessions: bool = False


def start_turn(turn_id: int, *, now: datetime | None = None) -> TurnWork | None:
    """Marks a queued turn running and gathers its work; None when it is no longer to be run."""
    now = now or timezone.now()
    with transaction.atomic():
        turn = (
            Turn.objects.select_for_update(of=("self",))
            .select_related("session__binding", "session__connection")
            .annotate(follows_a_turn=_FOLLOWS_A_TURN)
            .filter(pk=turn_id, state__in=OPEN_TURN_STATES)
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
        # Replies that were not turns (threadReplies: mention), and an alert thread's own notes
        # (a join, a repeat, a resolve: sessions.services.file_system_note), go with the next message.
        # Only a message carries notes: an answer or a decision sends none, and its key sorts after
        # every Slack ts, so it would mark as carried every note held while the pause was open.
        carries_notes = binding.thread_replies == ThreadReplies.MENTION or session.kind == ThreadKind.ALERT
        takes_notes = carries_notes and turn.kind == Turn.Kind.MESSAGE
        if takes_notes:
            ThreadNote.objects.filter(
                session=session, carried_by=None, message_ts__lt=turn.message_ts
            ).update(carried_by=turn)
        # A turn that took no notes now, and was never started before, carries none: no query for them.
        notes = (
            tuple(turn.notes.order_by("message_ts").values_list("user_id", "text"))
            if takes_notes or resumed
            else ()
        )
        return TurnWork(
            turn_id=turn.pk,
            session_id=session.pk,
            binding_name=binding.name,
            connection_id=connection.pk,
            team_id=connection.team_id,
            channel_id=turn.channel_id,
            thread_ts=session.thread_ts,
            thread_kind=ThreadKind(session.kind),
            direct=binding.direct_messages is not None,
            kind=Turn.Kind(turn.kind),
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
                user_identity=binding.user_identity,
            ),
            live=binding.output == Output.LIVE,
            progress=ProgressMode(binding.progress),
            ask_user=binding.ask_user,
            tool_approvals=binding.tool_approvals,
            acknowledgment_emoji=binding.acknowledgment_emoji if binding.acknowledgment_enabled else None,
            notes=notes,
            allow_user_mentions=binding.allow_mentions == Mentions.USERS,
            max_messages=binding.max_messages,
            accepted_at=turn.created_at,
            started_at=turn.started_at or now,
            feedback=binding.feedback,
            agent_sessions=connection.agent_sessions,
            # Read here, not in a hand-over of its own: one fewer per turn (docs/performance.md).
            budget_spent=_budget_spent(turn, binding, now),
            thread_context=_thread_context(turn, session, binding),
            files=tuple(SharedFile.from_json(shared) for shared in turn.files),
            files_spec=binding.files_spec(),
        )


# In the turn's own statement, not a query of its own: whether an earlier turn of its session exists.
_FOLLOWS_A_TURN = Exists(
    Turn.objects.filter(session_id=OuterRef("session_id"), message_ts__lt=OuterRef("message_ts"))
)


def _thread_context(turn: Turn, session: Session, binding) -> Bounds | None:
    """The bounds of the thread so far the turn carries: only the message that started its session
    inside a thread (not at its root), in a chat thread, before it reached the agent, and only when
    the Binding has it on. Whether Kourier posted the thread's root is read with the thread."""
    starts_in_a_thread = turn.message_ts != session.thread_ts and not turn.follows_a_turn  # type: ignore[attr-defined]
    if (
        not binding.thread_context_enabled
        or not starts_in_a_thread
        or turn.kind != Turn.Kind.MESSAGE
        or session.kind != ThreadKind.CHAT
        or turn.task_id
    ):
        return None
    return Bounds(
        max_messages=binding.thread_context_max_messages,
        max_characters=binding.thread_context_max_characters,
    )


def record_task(
    turn_id: int, session_id: int, *, task_id: str, context_id: str, known_context_id: str = ""
) -> None:
    """Keeps the agent's task and context as soon as the agent names them; the session's context only
    when it is new (``known_context_id``: the one the turn was started with), a write saved per turn."""
    if not context_id or context_id == known_context_id:
        Turn.objects.filter(pk=turn_id).update(task_id=task_id)
        return
    with transaction.atomic():
        Turn.objects.filter(pk=turn_id).update(task_id=task_id)
        Session.objects.filter(pk=session_id, context_id="").update(context_id=context_id)


def record_usage(turn_id: int, *, input_tokens: int, output_tokens: int, task_total: bool) -> tuple[int, int]:
    """Keeps the tokens the agent reported for a turn; returns what this turn is charged.

    ``task_total``: the agent reported its task's total so far (kagent 1.0), so what the task's earlier
    turns were charged is taken off: a turn that resumes a paused task is charged its own part only.
    """
    turn = Turn.objects.get(pk=turn_id)
    if task_total and turn.task_id:
        earlier = Turn.objects.filter(
            session_id=turn.session_id, task_id=turn.task_id, pk__lt=turn.pk
        ).aggregate(input=Sum("input_tokens"), output=Sum("output_tokens"))
        input_tokens = max(0, input_tokens - (earlier["input"] or 0))
        output_tokens = max(0, output_tokens - (earlier["output"] or 0))
    Turn.objects.filter(pk=turn_id).update(input_tokens=input_tokens, output_tokens=output_tokens)
    return input_tokens, output_tokens


@dataclass(frozen=True)
class BudgetSpent:
    """The channel used its daily token budget; ``told`` when the thread was told so already today."""

    told: bool


def budget_spent(turn_id: int, *, now: datetime | None = None) -> BudgetSpent | None:
    """Whether the turn's channel has used its Binding's daily token budget (spec.budget), as of the
    UTC day of ``now``; None when it has not, or there is no budget."""
    turn = Turn.objects.select_related("session__binding").get(pk=turn_id)
    return _budget_spent(turn, turn.session.binding, now or timezone.now())


def _budget_spent(turn: Turn, binding, now: datetime) -> BudgetSpent | None:
    if binding is None or binding.daily_token_budget is None:
        return None
    day_start = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    today = Turn.objects.filter(started_at__gte=day_start)
    used = today.filter(session__binding=binding, channel_id=turn.channel_id).aggregate(
        input=Sum("input_tokens"), output=Sum("output_tokens")
    )
    if (used["input"] or 0) + (used["output"] or 0) < binding.daily_token_budget:
        return None
    told = today.filter(session=turn.session, outcome=Turn.Outcome.BUDGET_SPENT).exclude(pk=turn.pk).exists()
    return BudgetSpent(told=told)


def record_stream_cards(turn_id: int, cards: list[dict[str, str]]) -> None:
    Turn.objects.filter(pk=turn_id).update(stream_cards=cards)


def record_reply(turn_id: int, reply_ts: str) -> None:
    Turn.objects.filter(pk=turn_id, reply_ts="").update(reply_ts=reply_ts)


def finish_turn(
    turn_id: int,
    *,
    outcome: Turn.Outcome,
    failed: bool,
    now: datetime | None = None,
    slack_calls: list[dict] | None = None,
    agent_events: list[dict] | None = None,
) -> None:
    """Ends a running turn, with the Slack calls of its run (kourier/slack/call_log.py) and the agent's
    events (sessions/agent_log.py) when recorded: the session's timeline shows them (sessions/timeline.py)."""
    now = now or timezone.now()
    kept: dict[str, list[dict]] = {}
    if slack_calls:
        kept["slack_calls"] = slack_calls[: call_log.MAX_CALLS]
    if agent_events:
        kept["agent_events"] = agent_events
    Turn.objects.filter(pk=turn_id, state=Turn.State.RUNNING).update(
        state=Turn.State.FAILED if failed else Turn.State.DONE, outcome=outcome, ended_at=now, **kept
    )


def forget_context(session_id: int) -> None:
    """The agent no longer has the conversation: the next turn starts a fresh context."""
    Session.objects.filter(pk=session_id).update(context_id="")
