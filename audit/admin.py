from django.contrib import admin
from django.http import HttpRequest

from .models import AuditEvent


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    """Read-only: the audit log is append-only, so the admin browses it and nothing else.

    Filters by Binding, action, Slack user and date (``?at__gte=…&at__lt=…`` for any range); search
    by interaction (``interaction 12``), actor or Binding; each row has its detail page."""

    list_display = ["at", "action", "binding_name", "actor_kind", "actor_id", "subject"]
    list_filter = ["action", "binding_name", "actor_id", ("at", admin.DateFieldListFilter), "actor_kind"]
    search_fields = ["subject", "actor_id", "binding_name"]
    date_hierarchy = "at"
    readonly_fields = ["at", "action", "binding_name", "actor_kind", "actor_id", "subject", "details"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: AuditEvent | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: AuditEvent | None = None) -> bool:
        return False
