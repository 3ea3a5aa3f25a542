from typing import Any

from django.db import models


class AppendOnly(Exception):
    """An audit row was to be changed or deleted: the log only grows."""


class AuditQuerySet(models.QuerySet):
    def update(self, **kwargs: Any) -> int:
        raise AppendOnly("audit rows are never updated")

    def delete(self) -> tuple[int, dict[str, int]]:
        raise AppendOnly("audit rows are never deleted")


class AuditEvent(models.Model):
    """One decision or sweep, recorded append-only: the model refuses updates and deletes.

    ``details`` holds shapes and counts (how many tools, which verdicts), never message text, answer
    text, tool arguments or rejection text.
    """

    at = models.DateTimeField(auto_now_add=True, db_index=True)
    action = models.CharField(max_length=64, db_index=True)
    binding_name = models.CharField(max_length=100, blank=True, db_index=True)
    actor_kind = models.CharField(
        max_length=16, choices=[("user", "Slack user"), ("system", "System"), ("policy", "Policy")]
    )
    actor_id = models.CharField(max_length=64, blank=True)
    # A decision's: whose message started the turn (a Slack user, or the system identity), and the
    # approval rules it was decided under ("binding", or the rule that matched: "tools[0] match=db_*").
    requester = models.CharField(max_length=64, blank=True)
    policy = models.CharField(max_length=500, blank=True)
    subject = models.CharField(max_length=200, blank=True, help_text="What the event is about, by id.")
    details = models.JSONField(default=dict, blank=True)

    objects = AuditQuerySet.as_manager()

    class Meta:
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.action} {self.subject}".strip()

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise AppendOnly("audit rows are never updated")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        raise AppendOnly("audit rows are never deleted")
