"""Alerts a trigger delivered: one row per alert thread, the alerts in it, the occurrences that fed
it, its posts, and how many threads each trigger opened in each hour.

An alert thread is known by (Binding, trigger, key): the key is an Alertmanager group's (its
groupKey, with the receiver) or, per alert, the alert's fingerprint. While it fires it has one open
``Alert`` (a partial unique constraint), whose thread takes every later alert and occurrence as a
note; when its last alert resolves it closes, and the next fire opens another that links the
previous one. An occurrence (an alert's start) is recorded once, so a delivery repeated changes
nothing. Past its trigger's ``maxThreadsPerHour``, a new group or alert is held: its row points at
the hour's storm thread (an ``Alert`` of kind storm), which lists it; it opens no thread of its own.
"""

from django.db import models
from django.db.models import Q


class Alert(models.Model):
    """One alert thread (a group's, an alert's, or an hour's storm thread): its root message, the
    Session on it, how often its alerts fired there."""

    class Kind(models.TextChoices):
        GROUP = "group"  # an Alertmanager group
        ALERT = "alert"  # one alert (threadPer: alert, and the generic kind)
        STORM = "storm"  # lists what arrived past the trigger's cap in one hour; no session

    class State(models.TextChoices):
        FIRING = "firing"
        RESOLVED = "resolved"

    binding = models.ForeignKey("bindings.Binding", on_delete=models.CASCADE, related_name="alerts")
    trigger = models.CharField(max_length=63)
    key = models.CharField(
        max_length=200, help_text="The group's key, the alert's fingerprint, or the storm's hour."
    )
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.ALERT)
    state = models.CharField(max_length=16, choices=State.choices, default=State.FIRING)
    title = models.CharField(max_length=200, blank=True)
    channel_id = models.CharField(max_length=32)
    root_ts = models.CharField(max_length=32, blank=True, help_text="The alert message's, once posted.")
    # The thread's session: deleted at the end of its lifetime (sessions' delete-expired-sessions), it
    # takes the alert with it, its alerts, occurrences, posts and their texts; a later notification
    # of the alert opens a new thread, never notes in one Agent Kourier no longer owns.
    session = models.ForeignKey(
        "threads.Session", on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    previous = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="+",
        help_text="The thread of this alert's previous fire, resolved before this one began.",
    )  # fmt: skip
    storm = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="held",
        help_text="Held past the trigger's cap: the storm thread that lists it instead of a thread of its own.",
    )  # fmt: skip
    fires = models.PositiveIntegerField(default=1)
    first_fired_at = models.DateTimeField()
    resolved_at = models.DateTimeField(null=True, blank=True)
    message_text = models.TextField(help_text="The alert message, fixed when the alert arrived.")
    turn_text = models.TextField(blank=True, help_text="What the thread's first turn tells the agent.")
    # Set once the thread's Session was started: it is started once.
    thread_started_at = models.DateTimeField(null=True, blank=True)
    # Who posts the alert's messages: one worker at a time, claimed by conditional update.
    posting_until = models.DateTimeField(null=True, blank=True)
    # Delivery's faults (delivery.deliver): a transient one (rate limit, Slack's 5xx, a timeout) waits
    # until next_delivery_at, doubling each time; a permanent one (channel_not_found, invalid_auth,
    # ...) gives up: delivery_failed, and nothing is tried again until the operator asks for it.
    delivery_failed = models.BooleanField(
        default=False, help_text="Slack refused its posts for good; no sweep tries again."
    )
    delivery_failures = models.PositiveSmallIntegerField(
        default=0, help_text="Transient failures in a row, since the last post that went through."
    )
    next_delivery_at = models.DateTimeField(
        null=True, blank=True, help_text="After a transient failure: not tried again before then."
    )
    last_delivery_error = models.CharField(
        max_length=100, blank=True, help_text="Why its last delivery failed: Slack's error, or the fault."
    )
    last_delivery_failed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["binding", "trigger", "key"],
                condition=Q(state="firing"),
                name="one_open_alert_thread_per_key",
            )
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.trigger}/{self.title or self.key} ({self.state})"

    @property
    def opens_session(self) -> bool:
        """A thread of its own with the agent in it: neither a storm thread nor held in one."""
        return self.kind != Alert.Kind.STORM and self.storm_id is None


class AlertMember(models.Model):
    """One alert of an alert thread (the group's alerts; the one alert of a thread per alert)."""

    class State(models.TextChoices):
        FIRING = "firing"
        RESOLVED = "resolved"

    thread = models.ForeignKey(Alert, on_delete=models.CASCADE, related_name="members")
    fingerprint = models.CharField(max_length=200)
    name = models.CharField(max_length=200, help_text="How the thread's notes name it.")
    state = models.CharField(max_length=16, choices=State.choices, default=State.FIRING)
    occurrence = models.CharField(max_length=200, help_text="The occurrence it fires with (its start).")
    first_fired_at = models.DateTimeField()
    resolved_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["thread", "fingerprint"], name="one_member_per_alert_thread")
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.state})"


class ThreadAllowance(models.Model):
    """How many threads a trigger opened in one hour (UTC), against its ``maxThreadsPerHour``: taken
    by a conditional update, so two deliveries at once cannot both take the last one."""

    binding = models.ForeignKey("bindings.Binding", on_delete=models.CASCADE, related_name="+")
    trigger = models.CharField(max_length=63)
    hour = models.DateTimeField()
    opened = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["binding", "trigger", "hour"], name="one_allowance_per_trigger_hour"
            )
        ]

    def __str__(self) -> str:
        return f"{self.trigger} {self.hour:%Y-%m-%d %H}h: {self.opened}"


class AlertOccurrence(models.Model):
    """One occurrence of an alert (its startsAt, or a delivery), taken once; ``alert`` is its thread."""

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
    """A message an alert thread owes (its root, a note), recorded with the change that owes it and
    delivered in order: posted once through the outbox (its ``PostIntent``, sessions/outbox.py, by the
    same key), and a note filed in the thread's session. Owed until ``delivered_at``."""

    class Kind(models.TextChoices):
        MESSAGE = "message"  # the alert message: the thread's root
        NOTE = "note"  # joined, fired again, resolved, held back

    alert = models.ForeignKey(Alert, on_delete=models.CASCADE, related_name="posts")
    key = models.CharField(max_length=200, unique=True)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    text = models.TextField()
    delivered_at = models.DateTimeField(
        null=True, blank=True, help_text="When it was posted (and a note filed in the thread's session)."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.kind} {self.key} ({'delivered' if self.delivered_at else 'owed'})"
