"""The pages of single sign-on: the one that sends the browser to the provider (the admin's login page
links to it), the one it comes back to, and the one logging out ends at, which ends the session at the
provider too. All answer 404 while single sign-on is off."""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.views import View
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from kourier.admin_site import SSO_SIGN_OUT_HINT

from . import library
from .backend import REFUSAL
from .discovery import DiscoveryFailed

logger = logging.getLogger(__name__)

NOT_SIGNED_IN = "Single sign-on did not sign you in: {why}."


def _refuse_when_off() -> None:
    if not settings.OIDC_ISSUER:
        raise Http404("Single sign-on is off.")


class SignInView(OIDCAuthenticationRequestView):
    get_settings = staticmethod(library.setting)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # The library reads the authorization endpoint here; it is read when a sign-in starts (``get``).
        super(OIDCAuthenticationRequestView, self).__init__(*args, **kwargs)

    def get(self, request: HttpRequest) -> HttpResponse:
        _refuse_when_off()
        try:
            self.OIDC_OP_AUTH_ENDPOINT = library.endpoints().authorization_endpoint
        except DiscoveryFailed as failure:
            logger.warning("sso.unavailable", extra={"why": str(failure)})
            messages.error(request, NOT_SIGNED_IN.format(why=str(failure).rstrip(".")))
            return HttpResponseRedirect(reverse("admin:login"))
        self.OIDC_RP_CLIENT_ID = settings.OIDC_CLIENT_ID
        return super().get(request)


class CallbackView(OIDCAuthenticationCallbackView):
    get_settings = staticmethod(library.setting)

    def get(self, request: HttpRequest) -> HttpResponse:
        _refuse_when_off()
        return super().get(request)

    def login_success(self) -> HttpResponse:
        response = super().login_success()
        # A role the provider revokes is revoked at the next sign-in: this bounds how long that takes.
        self.request.session.set_expiry(settings.OIDC_SESSION_SECONDS)
        return response

    def login_failure(self) -> HttpResponse:
        if self.request.GET.get("error"):
            why = f"the identity provider answered {self.request.GET['error']}"
            logger.warning("sso.refused", extra={"why": why})
        else:
            why = getattr(self.request, REFUSAL, "the sign-in had expired or was started in another browser")
        messages.error(self.request, NOT_SIGNED_IN.format(why=why))
        return super().login_failure()


class SignOutView(View):
    """Where the admin's logout sends someone who signed in with single sign-on (kourier/admin_site.py):
    on to the provider's end-session endpoint (OpenID Connect RP-Initiated Logout) with their ID token
    as the hint, and back to the login page from there. Kourier's session has already ended."""

    def get(self, request: HttpRequest) -> HttpResponse:
        _refuse_when_off()
        id_token = request.session.get(SSO_SIGN_OUT_HINT)
        request.session.flush()
        login_page = reverse("admin:login")
        if not id_token:
            return HttpResponseRedirect(login_page)
        try:
            end_session = library.endpoints().end_session_endpoint
        except DiscoveryFailed as failure:
            logger.warning("sso.unavailable", extra={"why": str(failure)})
            end_session = ""
        if not end_session:
            return HttpResponseRedirect(login_page)
        query = urlencode(
            {
                "id_token_hint": id_token,
                "post_logout_redirect_uri": request.build_absolute_uri(login_page),
                "client_id": settings.OIDC_CLIENT_ID,
            }
        )
        return HttpResponseRedirect(f"{end_session}{'&' if '?' in end_session else '?'}{query}")
