from datetime import datetime

from django.db import models
from django.db.models import Q

from kourier.progress import ThreadKind
from kourier.slack.outbox import PostKind


class Session(models.Model):
    """One Slack thread, mapped to one A2A context of the Binding's agent."""

    connection = models.ForeignKey("bindings.Connection", on_delete=models.CASCADE, related_name="sessions")
    binding = models.ForeignKey(
        "bindings.Binding", on_delete=models.SET_NULL, null=True, related_name="sessions"
    )
    channel_id = models.CharField(max_length=32)
    thread_ts = models.CharField(max_length=32, help_text="The thread's root message.")
    kind = models.CharField(
        max_length=8,
        choices=[(ThreadKind.CHAT.value, "Chat thread"), (ThreadKind.ALERT.value, "Alert thread")],
        default=ThreadKind.CHAT.value,
    )
    context_id = models.CharField(
        max_length=200, blank=True, help_text="Filled from the agent's first response."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    last_activity_at = models.DateTimeField()
    expires_at = models.DateTimeField(db_index=True)
    # The runner's lease: one runner per session; a lease past its time is taken over.
    lease_owner = models.CharField(max_length=100, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["connection", "channel_id", "thread_ts"], name="one_session_per_thread"
            )
        ]

    def __str__(self) -> str:
        return f"{self.channel_id}/{self.thread_ts}"

    def is_held(self, now: datetime) -> bool:
        """Whether a runner's live lease holds the session (``held_by_a_runner`` for a query)."""
        return bool(self.lease_owner) and self.lease_expires_at is not None and self.lease_expires_at > now


def held_by_a_runner(now: datetime) -> Q:
    """The sessions a runner's live lease holds at ``now`` (sessions/turns.claim_lease takes it)."""
    return Q(lease_expires_at__gt=now) & ~Q(lease_owner="")


class Turn(models.Model):
    """One Slack message sent to the agent, and what the agent did with it."""

    class State(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"
        EXPIRED = "expired"  # arrived after the session's TTL: answered with the expiry notice

    class Kind(models.TextChoices):
        """What the turn carries to the agent."""

        MESSAGE = "message"  # a person's message (or an alert), sent as text
        ANSWER = "answer"  # the answers a Submit press gave to the agent's question
        TYPED_ANSWER = "typed-answer"  # a reply typed in the thread that answers the agent's question

    class Outcome(models.TextChoices):
        """How a turn ended, as its runner (or the expiry notice) settled it."""

        COMPLETED = "completed"  # the agent's task completed
        FAILED = "failed"  # the task's own end states
        REJECTED = "rejected"
        CANCELED = "canceled"
        AUTH_REQUIRED = "auth-required"
        ASKED = "asked"  # the task paused to ask the channel: its answer is a turn of its own
        QUESTION_CANCELED = "question-canceled"  # the agent asked; askUser is off, so it was cancelled
        QUESTION_UNUSABLE = "question-unusable"  # the agent paused in a way no one can answer: cancelled
        GONE = "gone"  # the agent no longer has the task or conversation
        GARBLED = "garbled"  # the agent's output could not be read
        UNREACHABLE = "unreachable"  # the agent could not be reached, after bounded retries
        LOST = "lost"  # nobody can tell whether the agent has the request; it is not sent twice
        CRASHED = "crashed"  # the runner failed unexpectedly
        EXPIRED = "expired"  # the thread's session was past its TTL: told so, not sent
        BUDGET_SPENT = "budget-spent"  # the channel's daily token budget was used up: not sent
        STOPPED = "stopped"  # a person pressed Stop while it ran: its task was cancelled

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="turns")
    # The turn key (invariant 1): the chat message itself.
    connection = models.ForeignKey("bindings.Connection", on_delete=models.CASCADE, related_name="+")
    channel_id = models.CharField(max_length=32)
    message_ts = models.CharField(
        max_length=32, help_text="The Slack message's ts; for a pressed answer, a key of its own."
    )
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.MESSAGE)
    user_id = models.CharField(max_length=32, blank=True, help_text="Empty for a trigger's turn.")
    text = models.TextField()
    # The files its message shares, as Slack named them (kourier/slack/files.SharedFile.as_json: id,
    # name, media type, size, private URL), downloaded and sent to the agent when the turn runs.
    files = models.JSONField(default=list, blank=True)
    answers = models.JSONField(
        null=True, blank=True, help_text="An answer turn's answers: one list of strings per question."
    )
    state = models.CharField(max_length=16, choices=State.choices, default=State.QUEUED, db_index=True)
    outcome = models.CharField(max_length=32, choices=Outcome.choices, blank=True)
    message_id = models.CharField(max_length=64, help_text="The A2A messageId, derived from the turn key.")
    task_id = models.CharField(max_length=200, blank=True)
    # The model tokens the agent reported for this turn (kourier/a2a/usage.py); null: it reported none.
    input_tokens = models.PositiveBigIntegerField(null=True, blank=True)
    output_tokens = models.PositiveBigIntegerField(null=True, blank=True)
    acknowledged = models.BooleanField(default=False, help_text="The acknowledgment reaction was added.")
    reply_ts = models.CharField(max_length=32, blank=True)
    stream_cards = models.JSONField(
        default=list,
        blank=True,
        help_text="The cards the reply's stream shows under way ([{id, title}]), for a runner that takes "
        "the reply over and has to stop the stream without the turn's events.",
    )
    # Who pressed Stop, and when (sessions/stops.py): set once, while the turn runs, by a conditional
    # UPDATE, so a second press or one after the end changes nothing; the runner reads it.
    stopped_by = models.CharField(max_length=32, blank=True)
    stop_requested_at = models.DateTimeField(null=True, blank=True)
    # The W3C traceparent of the span that stored the turn (Slack's event, the alert, the press), so
    # the worker's turn continues that trace whenever it runs (kourier/tracing.py); empty: traces off.
    traceparent = models.CharField(max_length=55, blank=True, default="")
    # The Slack calls the turn's runner made (kourier/slack/call_log.py: method, outcome, start,
    # duration, retries; bounded), for the session's timeline in the admin (sessions/timeline.py).
    slack_calls = models.JSONField(default=list, blank=True)
    # What the agent did in the turn's run (sessions/agent_log.py: text runs, tool calls and results by
    # name, questions, approvals, the task's start and end; bounded), for the same timeline.
    agent_events = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["connection", "channel_id", "message_ts"], name="one_turn_per_message"
            )
        ]
        indexes = [
            models.Index(fields=["session", "state", "message_ts"]),
            # A Binding's live page charts the last hour (kourier/live_state.py): turns ended, and
            # turns taken, in it; without these it would read every turn of the Binding's sessions.
            models.Index(fields=["ended_at"], name="turn_ended_at"),
            models.Index(fields=["created_at"], name="turn_created_at"),
        ]

    def __str__(self) -> str:
        return f"turn {self.channel_id}/{self.message_ts}"


# A turn in these states waits for or holds the session's runner; any other state is over.
OPEN_TURN_STATES = (Turn.State.QUEUED, Turn.State.RUNNING)


class ThreadNote(models.Model):
    """A reply that was not a turn (threadReplies: mention), carried to the next turn as context."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="notes")
    connection = models.ForeignKey("bindings.Connection", on_delete=models.CASCADE, related_name="+")
    channel_id = models.CharField(max_length=32)
    message_ts = models.CharField(max_length=32)
    user_id = models.CharField(max_length=32)
    text = models.TextField()
    carried_by = models.ForeignKey(
        Turn, on_delete=models.SET_NULL, null=True, blank=True, related_name="notes"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["connection", "channel_id", "message_ts"], name="one_note_per_message"
            )
        ]
        indexes = [
            models.Index(
                fields=["session", "message_ts"], condition=Q(carried_by=None), name="uncarried_notes"
            )
        ]

    def __str__(self) -> str:
        return f"note {self.channel_id}/{self.message_ts}"


class PostIntent(models.Model):
    """A message the product means to post, recorded before it is sent and confirmed with its ts after
    (design invariant 3): a restarted process posts only what was never confirmed, after looking for
    it in Slack by the key its metadata carries. A turn's posts belong to the turn; an alert thread's
    (its root message, its notes: no turn posts them) to the thread's session once it has one."""

    class State(models.TextChoices):
        INTENDED = "intended"
        CONFIRMED = "confirmed"

    key = models.CharField(
        max_length=200, unique=True, help_text="The product's key, kept in the post's metadata."
    )
    turn = models.ForeignKey(
        Turn, on_delete=models.CASCADE, null=True, blank=True, related_name="post_intents"
    )
    session = models.ForeignKey(
        Session,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="+",
        help_text="The thread's session, for a post no turn makes (an alert's message and notes).",
    )
    kind = models.CharField(
        max_length=8,
        choices=[
            (PostKind.REPLY.value, "Reply"),
            (PostKind.NOTICE.value, "Notice"),
            (PostKind.PART.value, "Part of a long answer"),
            (PostKind.PROMPT.value, "Prompt"),
            (PostKind.ALERT.value, "Alert message"),
            (PostKind.NOTE.value, "Note"),
            (PostKind.FILE.value, "File uploaded"),
        ],
    )
    state = models.CharField(max_length=16, choices=State.choices, default=State.INTENDED)
    ts = models.CharField(max_length=32, blank=True, help_text="The post's, once confirmed.")
    text = models.TextField(
        blank=True,
        help_text="A notice's fixed text (never an answer), so that beat's sweep can post a notice its "
        "turn could not.",
    )
    # A file's upload (sessions/files_out.py): the Slack file id its ticket gave, recorded before its
    # bytes are sent, so that a restarted runner looks for that file in the thread before uploading.
    file_id = models.CharField(max_length=32, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    confirmed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            # The notices owed (sessions/outbox.py, read by every scrape of /metrics and by the sweep):
            # the few notices never confirmed, among every post ever confirmed (docs/performance.md).
            models.Index(
                fields=["created_at"],
                name="postintent_owed_notices",
                condition=Q(kind=PostKind.NOTICE.value, state="intended"),
            )
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.key} ({self.state})"
