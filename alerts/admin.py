"""Alert threads in the admin, read-only: every thread a trigger opened or held, the alerts in it,
and the storm threads that list what arrived past a trigger's cap."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from kourier.admin_site import ReadOnlyAdmin

from .models import Alert, AlertMember

MEMBER_FIELDS = ("name", "fingerprint", "state", "first_fired_at", "resolved_at")


class AlertMemberInline(admin.TabularInline):
    model = AlertMember
    fields = MEMBER_FIELDS
    readonly_fields = MEMBER_FIELDS
    ordering = ["pk"]
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Alert)
class AlertAdmin(ReadOnlyAdmin):
    list_display = ["__str__", "binding", "trigger", "kind", "state", "alerts", "held_in", "created_at"]
    list_filter = ["kind", "state", "binding", "trigger"]
    list_select_related = ["binding", "storm"]
    search_fields = ["title", "key", "trigger"]
    date_hierarchy = "created_at"
    ordering = ["-created_at", "-pk"]
    inlines = [AlertMemberInline]
    fields = [
        "binding", "trigger", "kind", "key", "title", "state", "channel_id", "root_ts", "session",
        "previous", "storm", "fires", "first_fired_at", "resolved_at", "thread_started_at", "created_at",
    ]  # fmt: skip

    @admin.display(description="Alerts")
    def alerts(self, obj: Alert) -> int:
        return obj.members.count()

    @admin.display(description="Held in")
    def held_in(self, obj: Alert) -> str:
        """The storm thread that lists it, for a thread held past its trigger's cap."""
        return str(obj.storm) if obj.storm_id else "—"
