from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from kourier.admin_site import ReadOnlyAdmin

from . import outside
from .models import DecidingGroup, Interaction

APPROVE, DENY = "approve", "deny"


@admin.register(Interaction)
class InteractionAdmin(ReadOnlyAdmin):
    """Read-only: the questions and approvals people were asked, the pending ones with their deadlines
    (filter on state ``open``). What they ask is not shown: the pause's arguments stay in the row.

    A pending tool approval's page offers Approve and Deny per tool to a user with the
    ``interactions.decide_interaction`` permission (interactions/outside.py): a POST to ``decide/``,
    the same first-decision-wins path as a press in Slack."""

    list_display = [
        "id",
        "kind",
        "state",
        "deadline",
        "channel_id",
        "answered_by",
        "decided_in",
        "answered_at",
        "created_at",
    ]
    list_filter = ["state", "kind", "session__binding"]
    search_fields = ["=id", "answered_by", "channel_id"]
    ordering = ["deadline"]
    exclude = ["pause"]
    hidden_fields = ["pause"]

    def get_urls(self) -> list[URLPattern]:
        decide = path(
            "<path:object_id>/decide/",
            self.admin_site.admin_view(require_POST(self.decide_view)),
            name=f"{self.opts.app_label}_{self.opts.model_name}_decide",
        )
        return [decide, *super().get_urls()]

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        interaction = Interaction.objects.filter(pk=_int(unquote(object_id))).first()
        extra: dict[str, Any] = {}
        if (
            interaction is not None
            and interaction.kind == Interaction.Kind.APPROVAL
            and interaction.state == Interaction.State.OPEN
            and interaction.deadline > timezone.now()
        ):
            extra = {
                "decide_tools": list(enumerate(outside.tools_to_decide(interaction))),
                "stands_in_for": outside.STANDS_IN_FOR,
                "decide_url": reverse(
                    f"{self.admin_site.name}:{self.opts.app_label}_{self.opts.model_name}_decide",
                    args=[interaction.pk],
                ),
                "why_not": outside.why_not_allowed(request.user, interaction.session.binding),
            }
        return super().change_view(request, object_id, form_url, {**(extra_context or {}), **extra})

    def decide_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """Approve all, Deny all, or each tool as its choice says; the outcome as a message on the page."""
        interaction_id = _int(object_id)
        back = reverse(
            f"{self.admin_site.name}:{self.opts.app_label}_{self.opts.model_name}_change", args=[object_id]
        )
        try:
            outside.decide(
                interaction_id, request.user, where=outside.ADMIN, **self._choices(request, interaction_id)
            )
        except outside.NotDecided as exc:
            messages.error(request, str(exc))
        else:
            messages.success(
                request, f"Interaction {interaction_id} decided: the agent is sent the decision."
            )
        return HttpResponseRedirect(back)

    def _choices(self, request: HttpRequest, interaction_id: int) -> dict[str, Any]:
        action = request.POST.get("decide", "")
        if action == "approve-all":
            return {"approve_all": True}
        if action == "deny-all":
            return {"deny_all": True}
        interaction = Interaction.objects.filter(pk=interaction_id, kind=Interaction.Kind.APPROVAL).first()
        tools = _unique_tools(interaction) if interaction is not None else []
        chosen: dict[str, list[str]] = {APPROVE: [], DENY: []}
        for index, name in enumerate(tools):
            verdict = request.POST.get(f"verdict-{index}")
            if verdict in chosen:
                chosen[verdict].append(name)
        return {"approve": chosen[APPROVE], "deny": chosen[DENY]}


def _unique_tools(interaction: Interaction) -> list[str]:
    return list(dict.fromkeys(outside.tool_names(interaction)))


def _int(value: str) -> int:
    return int(value) if value.isascii() and value.isdigit() else 0


@admin.register(DecidingGroup)
class DecidingGroupAdmin(admin.ModelAdmin):
    """Who may decide a Binding's tool approvals outside Slack: the holders of the
    ``interactions.decide_interaction`` permission in one of its deciding groups (interactions/outside.py)."""

    list_display = ["binding", "group"]
    list_filter = ["binding"]
    list_select_related = ["binding", "group"]
