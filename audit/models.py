from django.db import models


class AuditEvent(models.Model):
    """One decision or sweep, recorded append-only.

    ``details`` holds shapes and counts (how many tools, which verdicts), never message text, answer
    text, tool arguments or rejection text.
    """

    at = models.DateTimeField(auto_now_add=True, db_index=True)
    action = models.CharField(max_length=64, db_index=True)
    binding_name = models.CharField(max_length=100, blank=True, db_index=True)
    actor_kind = models.CharField(max_length=16, choices=[("user", "Slack user"), ("system", "System")])
    actor_id = models.CharField(max_length=64, blank=True)
    subject = models.CharField(max_length=200, blank=True, help_text="What the event is about, by id.")
    details = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.action} {self.subject}".strip()
