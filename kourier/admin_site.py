"""The admin as operators use it: it says Agent Kourier, and its index is grouped by what an operator
looks for (what is configured, what is going on, what was decided), not by Django app."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib import admin
from django.db.models.constants import LOOKUP_SEP
from django.http import HttpRequest, HttpResponse, HttpResponseForbidden, HttpResponseRedirect
from django.urls import reverse

PASSWORD_LOGIN_OFF = "Signing in with a password is off (ADMIN_PASSWORD_LOGIN): sign in with {provider}."
# Where mozilla-django-oidc keeps a single sign-on's ID token in the session (kourier/sso/), and where
# logging out hands it to the sign-out page, which ends the session at the provider too.
SSO_ID_TOKEN = "oidc_id_token"
SSO_SIGN_OUT_HINT = "kourier_sso_sign_out"

# (section, its app index or "" when it spans apps, the models in the order shown as app_label.model)
INDEX_SECTIONS: list[tuple[str, str, list[str]]] = [
    ("Bindings", "bindings", ["bindings.binding", "bindings.connection"]),
    ("Activity", "", ["threads.session", "threads.turn", "interactions.interaction", "alerts.alert"]),
    ("Audit", "audit", ["audit.auditevent"]),
]


class ReadOnlyAdmin(admin.ModelAdmin):
    """For what the product alone writes (activity, the audit): the admin browses it and nothing else.

    ``hidden_fields`` hold what people wrote or were asked (message text, answers, a pause): shown to
    superusers only. For anyone else no filter in the query string (``?text__contains=…``, which
    Django allows on a model's own fields), search or ordering reaches them, so that none of them
    answers yes or no about a text the page hides; such a filter is a 400.
    """

    hidden_fields: Sequence[str] = ()

    def fields_hidden_from(self, request: HttpRequest) -> frozenset[str]:
        return frozenset() if request.user.is_superuser else frozenset(self.hidden_fields)

    def lookup_allowed(self, lookup: str, value: str, request: HttpRequest | None = None) -> bool:
        hidden = frozenset(self.hidden_fields) if request is None else self.fields_hidden_from(request)
        if lookup.split(LOOKUP_SEP)[0] in hidden:
            return False
        return super().lookup_allowed(lookup, value, request)

    def get_search_fields(self, request: HttpRequest) -> list[str]:
        hidden = self.fields_hidden_from(request)
        return [
            f
            for f in super().get_search_fields(request)
            if f.lstrip("^=@").split(LOOKUP_SEP)[0] not in hidden
        ]

    def get_sortable_by(self, request: HttpRequest) -> list[Any]:
        hidden = self.fields_hidden_from(request)
        return [f for f in super().get_sortable_by(request) if f not in hidden]

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class KourierAdminSite(admin.AdminSite):
    site_header = "Agent Kourier"
    site_title = "Agent Kourier"
    index_title = "Agent Kourier"
    site_url = None  # the service has no page of its own at "/": no "View site" link

    def login(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        """Django's login page, with a link to single sign-on when it is on (kourier/sso/), and without
        the password form when ``ADMIN_PASSWORD_LOGIN`` is off: a password posted anyway is refused
        here (no authentication backend would take it either)."""
        provider = single_sign_on_provider_name()
        if not settings.ADMIN_PASSWORD_LOGIN and provider and request.method == "POST":
            return HttpResponseForbidden(PASSWORD_LOGIN_OFF.format(provider=provider))
        context = {
            "sso_provider": provider,
            "password_login": settings.ADMIN_PASSWORD_LOGIN or not provider,
            **(extra_context or {}),
        }
        return super().login(request, context)

    # Django types it as a TemplateResponse; a redirect is an answer Django serves as well.
    def logout(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:  # type: ignore[override]
        """Django's logout; for someone who signed in with single sign-on, then on to the sign-out page
        (kourier/sso/views.py), which ends their session at the provider as well."""
        id_token = request.session.get(SSO_ID_TOKEN) if settings.OIDC_ISSUER else None
        response = super().logout(request, extra_context)
        if id_token and request.method == "POST":
            request.session[SSO_SIGN_OUT_HINT] = id_token  # the session is a new, empty one by now
            return HttpResponseRedirect(reverse("sso-sign-out"))
        return response

    def get_app_list(self, request: HttpRequest, app_label: str | None = None) -> list[dict[str, Any]]:
        apps = super().get_app_list(request, app_label)
        if app_label is not None:
            return apps  # one app's own page keeps Django's grouping
        return grouped_for_operators(apps)


def single_sign_on_provider_name() -> str:
    """What the login page calls the identity provider, or "" while single sign-on is off."""
    if not settings.OIDC_ISSUER:
        return ""
    return settings.OIDC_PROVIDER_NAME or urlsplit(settings.OIDC_ISSUER).hostname or settings.OIDC_ISSUER


def grouped_for_operators(apps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The sections of ``INDEX_SECTIONS`` first, each with the models this user may see; then every
    other app as Django lists it, without the models a section already took."""
    models_by_key = {
        f"{app['app_label']}.{model['object_name'].lower()}": (app, model)
        for app in apps
        for model in app["models"]
    }
    taken: set[str] = set()
    sections = []
    for name, app_label, keys in INDEX_SECTIONS:
        present = [key for key in keys if key in models_by_key]
        if not present:
            continue
        taken.update(present)
        first_app = models_by_key[present[0]][0]
        sections.append(
            {
                "name": name,
                "app_label": app_label or name.lower(),
                "app_url": first_app["app_url"] if app_label else "",
                "has_module_perms": True,
                "models": [models_by_key[key][1] for key in present],
            }
        )
    rest = []
    for app in apps:
        models = [m for m in app["models"] if f"{app['app_label']}.{m['object_name'].lower()}" not in taken]
        if models:
            rest.append({**app, "models": models})
    return sections + rest
