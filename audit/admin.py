from django.contrib import admin
from django.http import HttpRequest

from .models import AuditEvent


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    """Read-only: the audit log is append-only, so the admin browses it and nothing else."""

    list_display = ["at", "action", "binding_name", "actor_kind", "actor_id", "subject"]
    list_filter = ["action", "actor_kind", "binding_name"]
    search_fields = ["subject", "actor_id", "binding_name"]
    date_hierarchy = "at"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: AuditEvent | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: AuditEvent | None = None) -> bool:
        return False
