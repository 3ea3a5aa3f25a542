"""What mozilla-django-oidc reads from Django's settings, answered from Kourier's own (``OIDC_ISSUER``,
``OIDC_CLIENT_ID``, ...) and from the provider's discovery document, so that the operator sets an
issuer, not five endpoints."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.urls import reverse
from mozilla_django_oidc.utils import import_from_settings

from . import discovery

CALLBACK_URL_NAME = "sso-callback"


def endpoints() -> discovery.Provider:
    return discovery.provider(settings.OIDC_ISSUER)


def setting(name: str, *default: Any) -> Any:
    if name == "OIDC_OP_AUTHORIZATION_ENDPOINT":
        return endpoints().authorization_endpoint
    ours = {
        "OIDC_RP_CLIENT_ID": lambda: settings.OIDC_CLIENT_ID,
        "OIDC_RP_CLIENT_SECRET": lambda: settings.OIDC_CLIENT_SECRET,
        "OIDC_RP_SIGN_ALGO": lambda: discovery.SIGNING_ALGORITHM,
        "OIDC_RP_SCOPES": lambda: " ".join(settings.OIDC_SCOPES),
        "OIDC_USE_PKCE": lambda: True,
        "OIDC_USE_NONCE": lambda: True,
        "OIDC_CREATE_USER": lambda: True,
        # Kept in the session (kourier/admin_site.py, SSO_ID_TOKEN) for the provider's end-session endpoint.
        "OIDC_STORE_ID_TOKEN": lambda: True,
        "OIDC_TIMEOUT": lambda: discovery.TIMEOUT_SECONDS,
        "OIDC_AUTHENTICATION_CALLBACK_URL": lambda: CALLBACK_URL_NAME,
        "LOGIN_REDIRECT_URL": lambda: "admin:index",
        "LOGIN_REDIRECT_URL_FAILURE": lambda: reverse("admin:login"),
    }
    if name in ours:
        return ours[name]()
    return import_from_settings(name, *default)
