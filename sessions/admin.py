"""Sessions and turns in the admin, read-only: what each thread and turn did, and when.

A turn's message text (and the answers and cards it carries) is shown to superusers only: staff
who browse activity see states, times, outcomes and the agent's task id.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import Q, QuerySet
from django.http import HttpRequest
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import mark_safe

from audit.models import AuditEvent
from kourier.admin_site import ReadOnlyAdmin
from kourier.slack.links import thread_url

from . import timeline
from .identity import filed_under
from .models import PostIntent, Session, Turn, held_by_a_runner

TEXT_FIELDS = ["text", "answers", "stream_cards"]
SNIPPET_LENGTH = 60
TURN_SUMMARY = ("kind", "state", "outcome", "task_id", "created_at", "started_at", "ended_at")


class SessionState(admin.SimpleListFilter):
    """Open: within its TTL (whether a runner holds it or not); running: a runner's lease is live."""

    title = "state"
    parameter_name = "state"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("open", "Open"), ("running", "Running"), ("expired", "Expired")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Session]) -> QuerySet[Session]:
        now = timezone.now()
        match self.value():
            case "open":
                return queryset.filter(expires_at__gt=now)
            case "running":
                return queryset.filter(held_by_a_runner(now))
            case "expired":
                return queryset.filter(expires_at__lte=now)
        return queryset


def session_state(session: Session) -> str:
    """Running while a runner holds its live lease; else open within its TTL, expired after."""
    now = timezone.now()
    if session.is_held(now):
        return "running"
    return "open" if session.expires_at > now else "expired"


class TurnInline(admin.TabularInline):
    model = Turn
    fields = TURN_SUMMARY
    readonly_fields = TURN_SUMMARY
    ordering = ["message_ts"]
    show_change_link = True
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Session)
class SessionAdmin(ReadOnlyAdmin):
    list_display = ["__str__", "binding", "kind", "state", "created_at", "last_activity_at", "expires_at"]
    list_filter = [SessionState, "kind", "binding"]
    list_select_related = ["binding"]
    search_fields = ["channel_id", "thread_ts", "context_id"]
    date_hierarchy = "created_at"
    ordering = ["-last_activity_at"]
    fieldsets = [
        (None, {"fields": ["binding", "connection", "kind", "channel_id", "thread_ts", "context_id"]}),
        ("Times", {"fields": ["created_at", "last_activity_at", "expires_at"]}),
        ("Runner", {"fields": ["lease_owner", "lease_expires_at"]}),
    ]
    inlines = [TurnInline]

    @admin.display(description="State")
    def state(self, obj: Session) -> str:
        return session_state(obj)

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: dict | None = None
    ) -> Any:
        session = Session.objects.filter(pk=object_id).first()
        if session is not None:
            extra_context = {**(extra_context or {}), "timeline": session_timeline(session, request)}
        return super().change_view(request, object_id, form_url, extra_context)


def session_timeline(session: Session, request: HttpRequest) -> str:
    """The thread's timeline (sessions/timeline.py) as SVG; message text for superusers only."""
    turns = list(session.turns.order_by("created_at"))
    turn_ids = [turn.pk for turn in turns]
    # interactions.Interaction's related name: the sessions app does not import the interactions app
    interactions = list(session.interactions.all())  # type: ignore[attr-defined]
    feedback = [row for turn in turns for row in turn.feedback.all()]  # type: ignore[attr-defined]
    subjects = [f"turn {pk}" for pk in turn_ids] + [f"interaction {row.pk}" for row in interactions]
    audit_rows = AuditEvent.objects.filter(subject__in=subjects).only("at", "action")
    intents = PostIntent.objects.filter(Q(turn__session=session) | Q(session=session))
    marks = timeline.marks_of(turns, interactions, intents, feedback, audit_rows)
    return mark_safe(timeline.render_svg(marks, with_text=request.user.is_superuser))  # escaped in render_svg


@admin.register(Turn)
class TurnAdmin(ReadOnlyAdmin):
    list_display = [
        "__str__",
        "binding",
        "filed_under",
        "kind",
        "state",
        "outcome",
        "thread",
        "task_id",
        "tokens",
        "created_at",
        "started_at",
        "ended_at",
    ]
    list_filter = ["state", "outcome", "kind", "session__binding"]
    list_select_related = ["session__binding__connection"]
    search_fields = ["=task_id", "channel_id", "message_ts", "user_id"]
    date_hierarchy = "created_at"
    ordering = ["-created_at", "-pk"]
    hidden_fields = TEXT_FIELDS

    @admin.display(description="Tokens in / out")
    def tokens(self, obj: Turn) -> str:
        """What the agent reported; blank for an agent that reports no usage."""
        if obj.input_tokens is None:
            return ""
        return f"{obj.input_tokens} / {obj.output_tokens}"

    def get_fieldsets(self, request: HttpRequest, obj: Turn | None = None) -> Any:
        fieldsets: list[tuple[str | None, dict[str, Any]]] = [
            (
                None,
                {
                    "fields": [
                        "session",
                        "kind",
                        "state",
                        "outcome",
                        "channel_id",
                        "message_ts",
                        "filed_under",
                    ]
                },
            ),
            ("Agent", {"fields": ["task_id", "message_id", "input_tokens", "output_tokens"]}),
            ("Reply", {"fields": ["reply_ts", "acknowledgment", "feedback"]}),
            ("Times", {"fields": ["created_at", "started_at", "ended_at"]}),
        ]
        if request.user.is_superuser:
            fieldsets.append(("Message", {"fields": TEXT_FIELDS}))
        return fieldsets

    @admin.display(description="Filed under", ordering="user_id")
    def filed_under(self, obj: Turn) -> str:
        """A person's Slack ID, or the system identity for what a trigger started (sessions/identity.py)."""
        return filed_under(obj.user_id)

    def get_list_display(self, request: HttpRequest) -> Any:
        shown = list(super().get_list_display(request))
        if request.user.is_superuser:  # the message text, as on the turn's page: superusers only
            shown.insert(shown.index("filed_under") + 1, "snippet")
        return shown

    @admin.display(description="Thread")
    def thread(self, obj: Turn) -> str:
        """The turn's thread in Slack (or the simulator); a link once the Connection's team is known."""
        binding = obj.session.binding
        team_id = binding.connection.team_id if binding is not None else ""
        url = thread_url(team_id, obj.session.channel_id, obj.session.thread_ts)
        return format_html('<a href="{}" target="_blank" rel="noopener">open thread</a>', url) if url else "—"

    @admin.display(description="Binding", ordering="session__binding__name")
    def binding(self, obj: Turn) -> str:
        return str(obj.session.binding or "—")

    @admin.display(description="Message")
    def snippet(self, obj: Turn) -> str:
        text = " ".join(obj.text.split())
        return text if len(text) <= SNIPPET_LENGTH else text[: SNIPPET_LENGTH - 1].rstrip() + "…"

    @admin.display(description="Feedback")
    def feedback(self, obj: Turn) -> str:
        """People's thumbs on the answer (spec.feedback; interactions.Feedback by its related name), no comments."""
        shown = [
            f"{'👍' if each.is_positive else '👎'} {each.user_id}"
            + (f" ({each.issue_type})" if each.issue_type else "")
            + (f" — not sent to kagent: {each.kagent_problem}" if each.kagent_problem else "")
            for each in obj.feedback.order_by("created_at")
        ]
        return ", ".join(shown) or "—"

    @admin.display(description="Acknowledgment")
    def acknowledgment(self, obj: Turn) -> str:
        # The reaction is taken off when the turn ends: its absence then is the acknowledgment done,
        # not a failure (a boolean field would show a red cross).
        if obj.acknowledged:
            return "Reaction on the message"
        if obj.state in (Turn.State.QUEUED, Turn.State.RUNNING):
            return "No reaction yet"
        return "Reaction taken off: the turn ended"
