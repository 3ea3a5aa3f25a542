"""Connections and Bindings in the admin: the same checks as ``manage.py apply``, and no secret values.

A secret is only ever shown as the name of its environment variable, and whether that variable is set.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db.models import Count, QuerySet
from django.db.models.constants import LOOKUP_SEP
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.html import format_html_join
from django.utils.safestring import mark_safe

from bindings import services
from bindings.files_form import FILES_FIELDS
from bindings.forms import BindingForm, ConnectionForm, ManifestForm
from bindings.models import Binding, Connection
from bindings.thread_context_form import THREAD_CONTEXT_FIELDS

# What the live page shows: a Binding's threads are the apps above bindings, which bindings may not
# import (the layers in pyproject.toml); the project hands the reader in at start-up (kourier/apps.py).
_read_live_state: Callable[[int], Any] | None = None


# How often the live page reloads itself (a meta refresh: no script), unless paused.
LIVE_REFRESH_SECONDS = 30


def hand_in_live_state(reader: Callable[[int], Any]) -> None:
    global _read_live_state
    _read_live_state = reader


def _variables_status(variables: list[tuple[str, str]]) -> str:
    """``label: NAME (set)`` per variable; the value itself is never read beyond "is it empty"."""
    if not variables:
        return "—"
    return format_html_join(
        mark_safe("<br>"),
        "{}: <code>{}</code> ({})",
        ((label, name, "set" if os.environ.get(name) else "not set") for label, name in variables),
    )


def _warn_once(request: HttpRequest, warnings: list[Any]) -> None:
    """Adds the warnings the page does not show already (a save just before may have said them)."""
    shown = {str(message) for message in messages.get_messages(request)}
    for warning in warnings:
        if str(warning) not in shown:
            messages.warning(request, str(warning))


class ManifestAdmin(admin.ModelAdmin):
    """Saves through the service that ``apply`` uses, with the spec the form validated."""

    form: type[ManifestForm]

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        # The form writes nothing to the instance but its name; the service writes the rest.
        kwargs["fields"] = self.form._meta.fields
        return super().get_form(request, obj, change, **kwargs)

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        self.save_spec(form.spec, obj, request)
        for warning in form.warnings:
            messages.warning(request, str(warning))

    def save_spec(self, spec: Any, obj: Any, request: HttpRequest) -> None:
        raise NotImplementedError

    def warnings_of(self, obj: Any) -> list[Any]:
        """What the change page warns of before anything is saved (a variable not set here)."""
        return []

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        if request.method == "GET":
            obj = self.get_object(request, object_id)
            if obj is not None:
                _warn_once(request, self.warnings_of(obj))
        return super().change_view(request, object_id, form_url, extra_context)


@admin.register(Connection)
class ConnectionAdmin(ManifestAdmin):
    form = ConnectionForm
    list_display = ["name", "bot_token_env", "signing_secret_env", "socket_mode", "team_id", "binding_count"]
    search_fields = ["name", "team_id"]
    readonly_fields = ["secrets", "team_id", "bot_user_id", "created_at", "updated_at"]
    fieldsets = [
        (None, {"fields": ["name"]}),
        (
            "Secrets",
            {
                "description": "Names of environment variables. The values are read from the environment "
                "when needed; they are never stored or shown.",
                "fields": ["bot_token_env", "signing_secret_env", "app_token_env", "secrets"],
            },
        ),
        ("Slack app", {"fields": ["slash_command", "agent_sessions"]}),
        ("Learned from Slack", {"fields": ["team_id", "bot_user_id"]}),
        ("History", {"fields": ["created_at", "updated_at"]}),
    ]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Connection]:
        return super().get_queryset(request).annotate(binding_count=Count("bindings"))

    @admin.display(boolean=True, description="Socket Mode")
    def socket_mode(self, obj: Connection) -> bool:
        return obj.socket_mode

    @admin.display(description="Bindings", ordering="binding_count")
    def binding_count(self, obj: Connection) -> int:
        return getattr(obj, "binding_count", 0)

    @admin.display(description="Environment")
    def secrets(self, obj: Connection) -> str:
        variables = [("botToken", obj.bot_token_env), ("signingSecret", obj.signing_secret_env)]
        if obj.app_token_env:
            variables.append(("appToken", obj.app_token_env))
        return _variables_status([(label, name) for label, name in variables if name])

    def save_spec(self, spec: Any, obj: Connection, request: HttpRequest) -> None:
        services.save_connection(spec, obj)

    def get_urls(self) -> list[URLPattern]:
        # Ahead of Django's own: its "<object_id>/" catch-all would take ".../test-token/" too.
        test_token = path(
            "<path:object_id>/test-token/",
            self.admin_site.admin_view(self.test_token_view),
            name=f"{self.opts.app_label}_{self.opts.model_name}_test_token",
        )
        return [test_token, *super().get_urls()]

    def test_token_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """POST: asks Slack whom the bot token belongs to (auth.test) and says so on the change page."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        connection = self.get_object(request, unquote(object_id))
        if connection is None:
            raise Http404(f"No Connection has the id {object_id!r}.")
        if not self.has_change_permission(request, connection):
            raise PermissionDenied
        tested = services.try_bot_token(connection, actor=f"admin:{request.user.get_username()}")
        messages.add_message(request, messages.SUCCESS if tested.ok else messages.ERROR, str(tested))
        return HttpResponseRedirect(reverse("admin:bindings_connection_change", args=[connection.pk]))

    def warnings_of(self, obj: Connection) -> list[Any]:
        return services.connection_warnings(obj)


# Where a Binding's turns go (bindings/agent_route.py): shown disabled to staff, refused by the form's
# check and by the save whatever is posted.
SUPERUSER_ONLY_FIELDS = (
    "agent_url",
    "kagent_controller",
    "kagent_namespace",
    "kagent_name",
    "dialect",
    "agent_headers",
)
# URLs that may carry credentials (https://user:password@host): the pages show them masked, and no
# search or filter in the query string (?agent_url__contains=…) reaches them, so that none answers
# yes or no about a password the pages hide.
URLS_WITH_CREDENTIALS = ("agent_url", "kagent_controller")


@admin.register(Binding)
class BindingAdmin(ManifestAdmin):
    form = BindingForm
    list_display = ["name", "connection", "channel_list", "agent", "dialect", "output", "tool_approvals"]
    list_filter = ["connection", "dialect", "output", "tool_approvals"]
    search_fields = ["name", "channels__channel_id"]
    list_select_related = ["connection"]
    readonly_fields = ["agent", "header_variables", "created_at", "updated_at"]
    fieldsets = [
        (None, {"fields": ["name", "connection", "channels"]}),
        (
            "Agent",
            {
                "fields": [
                    "agent",
                    "agent_url",
                    "kagent_controller",
                    "kagent_namespace",
                    "kagent_name",
                    "dialect",
                    "protocol_version",
                    "agent_headers",
                    "header_variables",
                    "user_identity",
                ]
            },
        ),
        (
            "Chat",
            {
                "fields": [
                    "output",
                    "thread_replies",
                    "acknowledgment_enabled",
                    "acknowledgment_emoji",
                    "progress",
                    *THREAD_CONTEXT_FIELDS,
                    *FILES_FIELDS,
                ]
            },
        ),
        (
            "Interactions",
            {
                "fields": [
                    "ask_user",
                    "tool_approvals",
                    "approver_groups",
                    "separate_approver",
                    "tool_rules",
                    "interaction_timeout",
                    "remind_before",
                    "deny_reasons",
                    "allow_for_thread",
                ]
            },
        ),
        ("Feedback", {"fields": ["feedback"]}),
        ("Stop", {"fields": ["stop_by"]}),
        ("Session", {"fields": ["thread_ttl"]}),
        ("Replies", {"fields": ["allow_mentions", "max_messages"]}),
        ("Triggers", {"fields": ["triggers"]}),
        ("Budget", {"fields": ["daily_token_budget"]}),
        ("History", {"fields": ["created_at", "updated_at"]}),
    ]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Binding]:
        return super().get_queryset(request).prefetch_related("channels")

    def lookup_allowed(self, lookup: str, value: str, request: HttpRequest | None = None) -> bool:
        if lookup.split(LOOKUP_SEP)[0] in URLS_WITH_CREDENTIALS:
            return False
        return super().lookup_allowed(lookup, value, request)

    @admin.display(description="Channels")
    def channel_list(self, obj: Binding) -> str:
        return ", ".join(obj.channel_ids())

    @admin.display(description="Reached as")
    def agent(self, obj: Binding) -> str:
        """The URL, or for a kagent agent by name the line and address its controller serves it at."""
        return services.describe_agent(services.binding_spec(obj).agent) if obj.pk else ""

    @admin.display(description="Header variables")
    def header_variables(self, obj: Binding) -> str:
        return _variables_status(sorted(obj.agent_headers.items()))

    def has_add_permission(self, request: HttpRequest) -> bool:
        # A new Binding's agent decides where its turns go, which only a superuser chooses.
        return request.user.is_superuser and super().has_add_permission(request)

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        form = super().get_form(request, obj, change, **kwargs)
        if request.user.is_superuser:
            return form

        class AgentAddressLocked(form):  # type: ignore[misc, valid-type]
            """Staff may edit a Binding but not where its turns go or what the agent is sent: the
            headers carry the service's identity, so only a superuser points them somewhere."""

            may_change_agent = False

            def __init__(self, *args: Any, **form_kwargs: Any) -> None:
                super().__init__(*args, **form_kwargs)
                for name in SUPERUSER_ONLY_FIELDS:
                    self.fields[name].disabled = True
                    self.fields[name].help_text += " (Only a superuser may change it.)"

        return AgentAddressLocked

    def save_spec(self, spec: Any, obj: Binding, request: HttpRequest) -> None:
        services.save_binding(
            spec,
            obj,
            actor=f"admin:{request.user.get_username()}",
            may_change_agent=request.user.is_superuser,
        )

    def get_urls(self) -> list[URLPattern]:
        # Ahead of Django's own: its "<object_id>/" catch-all would take ".../live/" too.
        live = path(
            "<path:object_id>/live/",
            self.admin_site.admin_view(self.live_view),
            name=f"{self.opts.app_label}_{self.opts.model_name}_live",
        )
        return [live, *super().get_urls()]

    def live_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """What the Binding's threads are doing now: read-only, for anyone who may view the Binding."""
        binding = self.get_object(request, unquote(object_id))
        if binding is None:
            raise Http404(f"No Binding has the id {object_id!r}.")
        if not self.has_view_permission(request, binding):
            raise PermissionDenied
        if _read_live_state is None:
            raise Http404("This process shows no live state.")
        context = {
            **self.admin_site.each_context(request),
            "title": f"{binding.name}: live state",
            "subtitle": None,
            "opts": self.opts,
            "original": binding,
            "state": _read_live_state(binding.pk),
            "as_of": timezone.now(),
            # Paused (?refresh=off), the page stays as it is while the operator reads it.
            "refresh_seconds": None if request.GET.get("refresh") == "off" else LIVE_REFRESH_SECONDS,
        }
        return TemplateResponse(request, "admin/bindings/binding/live.html", context)

    def warnings_of(self, obj: Binding) -> list[Any]:
        return services.binding_warnings(obj)
