"""Alert threads in the admin, read-only: every thread a trigger opened or held, the alerts in it,
the storm threads that list what arrived past a trigger's cap, a link to each thread in Slack, and
how its delivery fails. "Deliver again" (for those who may change alerts) clears a failure once the
operator fixed its cause (invited the bot, renewed the token)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone
from django.utils.html import format_html

from kourier.admin_site import ReadOnlyAdmin
from kourier.slack.links import thread_url

from . import delivery
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
    list_display = [
        "__str__", "binding", "trigger", "kind", "state", "alerts", "held_in", "created_at", "thread",
        "delivery",
    ]  # fmt: skip
    list_filter = ["kind", "state", "delivery_failed", "binding", "trigger"]
    list_select_related = ["binding__connection", "storm"]
    actions = ["deliver_again"]
    search_fields = ["title", "key", "trigger"]
    date_hierarchy = "created_at"
    ordering = ["-created_at", "-pk"]
    inlines = [AlertMemberInline]
    fields = [
        "binding", "trigger", "kind", "key", "title", "state", "channel_id", "root_ts", "session",
        "previous", "storm", "fires", "first_fired_at", "resolved_at", "thread_started_at", "created_at",
        "thread", "delivery", "delivery_failed", "delivery_failures", "next_delivery_at",
        "last_delivery_error", "last_delivery_failed_at",
    ]  # fmt: skip

    @admin.display(description="Alerts")
    def alerts(self, obj: Alert) -> int:
        return obj.members.count()

    @admin.display(description="Held in")
    def held_in(self, obj: Alert) -> str:
        """The storm thread that lists it, for a thread held past its trigger's cap."""
        return str(obj.storm) if obj.storm_id else "—"

    @admin.display(description="Thread")
    def thread(self, obj: Alert) -> str:
        """The alert's thread in Slack (or the simulator), once its message is posted (a held one's is its
        storm's)."""
        url = thread_url(obj.binding.connection.team_id, obj.channel_id, obj.root_ts)
        return format_html('<a href="{}" target="_blank" rel="noopener">open thread</a>', url) if url else "—"

    @admin.display(description="Delivery")
    def delivery(self, obj: Alert) -> str:
        """Given up (and why), retrying (how often, and when next), or the last failure since passed."""
        if obj.delivery_failed:
            return format_html('<span class="delivery-failed">failed: {}</span>', obj.last_delivery_error)
        if obj.next_delivery_at is not None:
            return format_html(
                "retrying ({} failed: {}), next at {:%H:%M:%S}",
                obj.delivery_failures,
                obj.last_delivery_error,
                timezone.localtime(obj.next_delivery_at),
            )
        if obj.last_delivery_error and obj.last_delivery_failed_at is not None:
            at = timezone.localtime(obj.last_delivery_failed_at)
            return f"ok (last failure {at:%Y-%m-%d %H:%M}: {obj.last_delivery_error})"
        return "ok"

    def has_deliver_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("alerts.change_alert")

    @admin.action(description="Deliver again", permissions=["deliver"])
    def deliver_again(self, request: HttpRequest, queryset: QuerySet[Alert]) -> None:
        count = delivery.deliver_again(list(queryset.values_list("pk", flat=True)))
        messages.info(request, f"{count} alert{'s' if count != 1 else ''} to deliver again.")
