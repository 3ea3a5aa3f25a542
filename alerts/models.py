"""Alerts a trigger delivered: one row per alert thread, the occurrences that fed it, and its posts.

An alert is known by (Binding, trigger, fingerprint). While it fires it has one open ``Alert`` (a
partial unique constraint), whose thread takes every new occurrence as a note; a resolve closes it,
and the next fire opens another that links the previous one. An occurrence (its start) is recorded
once, so a delivery repeated changes nothing.
"""

from django.db import models
from django.db.models import Q


class Alert(models.Model):
    """One alert thread: its root message, the Session on it, how often the alert fired there."""

    class State(models.TextChoices):
        FIRING = "firing"
        RESOLVED = "resolved"

    binding = models.ForeignKey("bindings.Binding", on_delete=models.CASCADE, related_name="alerts")
    trigger = models.CharField(max_length=63)
    fingerprint = models.CharField(max_length=200)
    state = models.CharField(max_length=16, choices=State.choices, default=State.FIRING)
    title = models.CharField(max_length=200, blank=True)
    channel_id = models.CharField(max_length=32)
    root_ts = models.CharField(max_length=32, blank=True, help_text="The alert message's, once posted.")
    session = models.ForeignKey(
        "threads.Session", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    previous = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="+",
        help_text="The thread of this alert's previous fire, resolved before this one began.",
    )  # fmt: skip
    fires = models.PositiveIntegerField(default=1)
    first_fired_at = models.DateTimeField()
    resolved_at = models.DateTimeField(null=True, blank=True)
    message_text = models.TextField(help_text="The alert message, fixed when the alert arrived.")
    turn_text = models.TextField(help_text="What the thread's first turn tells the agent.")
    # Who posts the alert's messages: one worker at a time, claimed by conditional update.
    posting_until = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["binding", "trigger", "fingerprint"],
                condition=Q(state="firing"),
                name="one_open_alert_per_fingerprint",
            )
        ]

    def __str__(self) -> str:
        return f"alert {self.trigger}/{self.fingerprint} ({self.state})"


class AlertOccurrence(models.Model):
    """One occurrence of an alert (its startsAt, or a delivery), taken once."""

    binding = models.ForeignKey("bindings.Binding", on_delete=models.CASCADE, related_name="+")
    trigger = models.CharField(max_length=63)
    fingerprint = models.CharField(max_length=200)
    key = models.CharField(max_length=200)
    alert = models.ForeignKey(Alert, on_delete=models.CASCADE, related_name="occurrences")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["binding", "trigger", "fingerprint", "key"], name="one_row_per_occurrence"
            )
        ]

    def __str__(self) -> str:
        return f"occurrence {self.key} of {self.trigger}/{self.fingerprint}"


class AlertPost(models.Model):
    """A message an alert thread owes (its root, a note), recorded before it is sent and confirmed with
    its ts after; the post carries its key in its metadata, so it is looked for before it is sent again."""

    class Kind(models.TextChoices):
        MESSAGE = "message"  # the alert message: the thread's root
        NOTE = "note"  # fired again, resolved

    class State(models.TextChoices):
        INTENDED = "intended"
        CONFIRMED = "confirmed"

    alert = models.ForeignKey(Alert, on_delete=models.CASCADE, related_name="posts")
    key = models.CharField(max_length=200, unique=True)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    text = models.TextField()
    state = models.CharField(max_length=16, choices=State.choices, default=State.INTENDED)
    attempted_at = models.DateTimeField(null=True, blank=True, help_text="When a worker first sent it.")
    ts = models.CharField(max_length=32, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.kind} {self.key} ({self.state})"
