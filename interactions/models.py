"""An Interaction: a pause of the agent's task that waits for people (a question or a tool approval)."""

from django.db import models
from django.db.models import Q


class Interaction(models.Model):
    """One pause of a turn's task, put to the channel as a prompt, until it is answered or closed.

    ``pause`` is the pause as the agent sent it, normalized (``kourier.a2a.events.Question.to_dict``),
    so that the answer can be built for the agent after a restart. At most one Interaction of a
    session is open at a time: its task is paused, so nothing else of the session can run.
    """

    class Kind(models.TextChoices):
        QUESTION = "question"
        APPROVAL = "approval"

    class State(models.TextChoices):
        OPEN = "open"  # the prompt waits for an answer
        ANSWERED = "answered"  # the first complete answer (or decision) won; its turn carries it to the agent
        # The deadline passed: a question's task is cancelled; an approval's tools are all denied
        # (its answer turn carries the denial). The thread is told either way.
        TIMED_OUT = "timed_out"
        # Nobody can answer it: its prompt could not be shown or posted (refused), or the pause was
        # never put to people (askUser or toolApprovals off) and its task could not be cancelled yet.
        CANCELLED = "cancelled"

    turn = models.ForeignKey("threads.Turn", on_delete=models.CASCADE, related_name="interactions")
    session = models.ForeignKey("threads.Session", on_delete=models.CASCADE, related_name="interactions")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    pause = models.JSONField(help_text="The pause as the agent sent it (questions, ids), normalized.")
    typed_replies = models.BooleanField(
        default=False, help_text="A reply typed in the thread answers it (the a2a dialect's text question)."
    )
    state = models.CharField(max_length=16, choices=State.choices, default=State.OPEN, db_index=True)
    deadline = models.DateTimeField(db_index=True)
    channel_id = models.CharField(max_length=32)
    prompt_ts = models.CharField(max_length=32, blank=True, help_text="The prompt's message, once posted.")
    # A direct message's approval is also put to its Binding's directMessages.approvalsChannel (approvers
    # outside the conversation cannot see the prompt): the copy is decided there under the same rules.
    copy_channel_id = models.CharField(max_length=32, blank=True)
    copy_ts = models.CharField(max_length=32, blank=True, help_text="The prompt's copy, once posted.")
    answered_by = models.CharField(max_length=32, blank=True)
    answered_by = models.CharField(
        max_length=150,
        blank=True,
        help_text="A Slack user's ID, or a Django username when decided_in is set.",
    )
    decided_in = models.CharField(
        max_length=8,
        blank=True,
        choices=[("admin", "the admin"), ("cli", "the command line")],
        help_text="Where an approval was decided outside Slack (interactions/outside.py); empty: in Slack.",
    )
    requested_by = models.CharField(
        max_length=64,
        blank=True,
        help_text="Whose message started the task that paused: a Slack user, or the system identity.",
    )
    denied_by_policy = models.JSONField(
        default=list,
        blank=True,
        help_text="The tools (by index) an approval's rules denied at once: nobody asked (unattended: deny).",
    )
    answered_at = models.DateTimeField(null=True, blank=True)
    # A denial's reason (spec.interactions.denyReasons), redacted: the model reads it with the denial.
    deny_reason = models.TextField(blank=True)
    answer_turn = models.OneToOneField(
        "threads.Turn", on_delete=models.SET_NULL, null=True, blank=True, related_name="answered_interaction"
    )
    closed_at = models.DateTimeField(
        null=True, blank=True, help_text="When the prompt was last rewritten to say how it ended."
    )
    task_cancelled_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When the paused task's cancellation was settled, after its pause ended unanswered (interactions/cancellations.py).",
    )
    # Each set by a conditional update in the transaction that writes its audit row, so that sweeps
    # racing each other (and a person's decision racing them) write each row once (approvals.py).
    timeout_audited_at = models.DateTimeField(
        null=True, blank=True, help_text="When the approval's timed_out audit row was written."
    )
    timeout_superseded_at = models.DateTimeField(
        null=True, blank=True, help_text="When a person's decision superseded that timeout in the audit."
    )
    reminded_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When the approvers were reminded (interactions.remindBefore), claimed once by a conditional update.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        permissions = [("decide_interaction", "Can decide pending tool approvals outside Slack")]
        constraints = [
            models.UniqueConstraint(
                fields=["session"], condition=Q(state="open"), name="one_open_interaction_per_session"
            ),
            models.UniqueConstraint(fields=["turn"], name="one_interaction_per_turn"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.pk} ({self.state})"


class KeptPress(models.Model):
    """A press on an approval prompt whose approver groups Slack could not read for now, kept until a
    try decides it (interactions/kept_presses.py).

    The retry message carries the row's id and the try it is for; the row says when that try should
    have started, so beat's sweep sends it again when a worker died with it (a SIGKILL leaves the
    broker's copy invisible for an hour). A message for a try already taken is stale and does nothing.
    """

    interaction = models.ForeignKey(Interaction, on_delete=models.CASCADE, related_name="kept_presses")
    connection = models.ForeignKey("bindings.Connection", on_delete=models.CASCADE, related_name="+")
    press = models.JSONField(
        help_text="The press as the listener read it (kourier.slack.incoming.SubmitPress)."
    )
    attempt = models.PositiveIntegerField(
        default=0, help_text="The try the next retry message is for; a message for another is stale."
    )
    due_at = models.DateTimeField(
        db_index=True,
        help_text="When the next try should have started or ended; past it, the sweep sends it again.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"kept press {self.pk} of interaction {self.interaction_id} (try {self.attempt})"


class PromptClosing(models.Model):
    """A prompt owed a rewrite that says how its Interaction stands (decided, answered, waiting to be
    delivered), kept until one is made (interactions/closings.py).

    Written in the transaction that changed the Interaction, so the rewrite cannot be lost with a
    Celery message: the message carries the Interaction's id and the try it is for, and beat's sweep
    sends a try again once the row says it is overdue (a SIGKILL leaves the broker's copy invisible for
    an hour; a Redis that lost its data has none). A message for a try already taken does nothing.
    """

    interaction = models.OneToOneField(
        Interaction, on_delete=models.CASCADE, primary_key=True, related_name="closing"
    )
    attempt = models.PositiveIntegerField(
        default=0, help_text="The try the next message is for; a message for another is stale."
    )
    due_at = models.DateTimeField(
        db_index=True,
        help_text="When the next try should have started or ended; past it, the sweep sends it again.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"closing of interaction {self.interaction_id} (try {self.attempt})"


class KeptAnswer(models.Model):
    """A person's answer or decision the agent could not be reached to take, kept until it takes it or
    the Interaction's deadline passes (interactions/kept_answers.py).

    Its answer turn waits, queued, until ``due_at`` (or a reply in the thread), and holds the replies
    behind it: the agent's task is still paused on it. Past the deadline the turn is ended, the
    Interaction timed out and its task cancelled, the thread told once, as for a timeout.
    """

    interaction = models.OneToOneField(
        Interaction, on_delete=models.CASCADE, primary_key=True, related_name="kept_answer"
    )
    session = models.ForeignKey("threads.Session", on_delete=models.CASCADE, related_name="+")
    tries = models.PositiveIntegerField(default=1, help_text="How many times it failed to reach the agent.")
    tried_at = models.DateTimeField(help_text="When the last try failed; a reply after it sends it again.")
    due_at = models.DateTimeField(db_index=True, help_text="When it is sent again.")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"kept answer of interaction {self.interaction_id} ({self.tries} tries)"


class Feedback(models.Model):
    """A person's thumbs up or down on an answer (``spec.feedback``, beyond the spec and opt-in): one
    per person and answer, a second press changes it. The comment is redacted; the audit never has it."""

    class IssueType(models.TextChoices):  # kagent's FeedbackIssueType
        INSTRUCTIONS = "instructions", "Did not follow instructions"
        FACTUAL = "factual", "Not factually correct"
        INCOMPLETE = "incomplete", "Incomplete answer"
        TOOL = "tool", "Should have run a tool"

    turn = models.ForeignKey("threads.Turn", on_delete=models.CASCADE, related_name="feedback")
    user_id = models.CharField(max_length=32)
    is_positive = models.BooleanField()
    comment = models.TextField(blank=True)
    issue_type = models.CharField(max_length=16, choices=IssueType.choices, blank=True)
    # Each change counts up; the send to kagent takes a version once (sent_version), so it is safe twice.
    version = models.PositiveIntegerField(default=1)
    sent_version = models.PositiveIntegerField(default=0)
    # Why kagent's controller did not take it for good (neither its gRPC FeedbackService nor its REST
    # API answered, or it refused it): shown in the admin; empty once a version is taken.
    kagent_problem = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["turn", "user_id"], name="one_feedback_per_person_and_answer")
        ]

    def __str__(self) -> str:
        return f"{'up' if self.is_positive else 'down'} by {self.user_id} on turn {self.turn_id}"


class DecidingGroup(models.Model):
    """A Django group whose members may decide a Binding's tool approvals outside Slack (the admin,
    ``manage.py interactions decide``; interactions/outside.py).

    The ``interactions.decide_interaction`` permission lets its holder decide outside Slack; a Binding
    with deciding groups limits that to the holders in one of them (a superuser always may). A Binding
    with none leaves it to every holder of the permission.
    """

    binding = models.ForeignKey("bindings.Binding", on_delete=models.CASCADE, related_name="+")
    group = models.ForeignKey("auth.Group", on_delete=models.CASCADE, related_name="+")

    class Meta:
        verbose_name = "deciding group"
        constraints = [
            models.UniqueConstraint(fields=["binding", "group"], name="one_deciding_group_per_binding")
        ]

    def __str__(self) -> str:
        return f"{self.group} decides {self.binding}'s approvals outside Slack"


class ThreadGrant(models.Model):
    """A tool an approver allowed for the rest of a thread ("Allow for this thread", issue 33, opt-in
    per Binding: ``spec.interactions.allowForThread``): the tool's later calls in the session run
    without a prompt while the session lives, unless a rule now denies the tool or sends it to other
    approver groups (interactions/thread_grants.py). Written in the decision's own transaction."""

    session = models.ForeignKey("threads.Session", on_delete=models.CASCADE, related_name="thread_grants")
    tool_name = models.CharField(max_length=200)
    granted_in = models.ForeignKey(
        Interaction,
        on_delete=models.CASCADE,
        related_name="thread_grants",
        help_text="The approval whose decision allowed the tool for the thread.",
    )
    decision = models.ForeignKey(
        "audit.AuditEvent",
        on_delete=models.PROTECT,
        related_name="+",
        help_text="The decision's audit row, which each call run under this grant names.",
    )
    granted_by = models.CharField(max_length=64, help_text="The approver's Slack user ID.")
    approver_groups = models.JSONField(
        default=list,
        blank=True,
        help_text="The approver groups the tool was decided under when it was allowed.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["session", "tool_name"], name="one_thread_grant_per_tool")
        ]

    def __str__(self) -> str:
        return f"{self.tool_name} allowed in session {self.session_id}"
