from django.contrib import admin

from kourier.admin_site import ReadOnlyAdmin

from .models import Interaction


@admin.register(Interaction)
class InteractionAdmin(ReadOnlyAdmin):
    """Read-only: the questions and approvals people were asked, the pending ones with their deadlines
    (filter on state ``open``). What they ask is not shown: the pause's arguments stay in the row."""

    list_display = [
        "id",
        "kind",
        "state",
        "deadline",
        "channel_id",
        "answered_by",
        "answered_at",
        "created_at",
    ]
    list_filter = ["state", "kind", "session__binding"]
    search_fields = ["=id", "answered_by", "channel_id"]
    ordering = ["deadline"]
    exclude = ["pause"]
    hidden_fields = ["pause"]
