"""The authentication backend of a sign-in: mozilla-django-oidc's code flow, with the provider's
endpoints from discovery and the checks the library leaves out.

The library checks the ID token's signature (against the provider's JWKS) and its nonce; here it is
also checked to be meant for this client (``aud``, and ``azp`` when it names several), from the
configured issuer (``iss``), and not expired (``exp``), RS256 only. Any refusal leaves nobody signed
in, logs ``sso.refused`` with why (never a token or a claim's value), and tells the person on the
login page (``REFUSAL``, read by the callback view).
"""

from __future__ import annotations

import logging
from typing import Any

import jwt
import requests
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import SuspiciousOperation
from django.http import HttpRequest
from mozilla_django_oidc.auth import OIDCAuthenticationBackend

from . import accounts, library
from .discovery import SIGNING_ALGORITHM, DiscoveryFailed
from .roles import groups_in, roles_for

logger = logging.getLogger(__name__)

REFUSAL = "kourier_sso_refusal"  # the request attribute that says why a sign-in was refused
LEEWAY_SECONDS = 30  # for clocks a little apart, the provider's and ours
USERNAME_MAX_LENGTH = 150  # Django's User.username


class Refused(SuspiciousOperation):
    """A sign-in refused, with why in one line."""


class OIDCBackend(OIDCAuthenticationBackend):
    get_settings = staticmethod(library.setting)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # The library reads the provider's endpoints here, but Django makes a backend for every
        # permission check too: they are read at a sign-in only (``authenticate``).
        self.UserModel = get_user_model()

    def authenticate(self, request: HttpRequest | None, **kwargs: Any) -> Any:  # type: ignore[override]
        # Only the callback view's call carries a nonce; a password form's never does.
        if request is None or "nonce" not in kwargs:
            return None
        self.request = request
        try:
            endpoints = library.endpoints()
            self.OIDC_OP_TOKEN_ENDPOINT = endpoints.token_endpoint
            self.OIDC_OP_USER_ENDPOINT = endpoints.userinfo_endpoint
            self.OIDC_OP_JWKS_ENDPOINT = endpoints.jwks_uri
            self.OIDC_RP_CLIENT_ID = settings.OIDC_CLIENT_ID
            self.OIDC_RP_CLIENT_SECRET = settings.OIDC_CLIENT_SECRET
            self.OIDC_RP_SIGN_ALGO = SIGNING_ALGORITHM
            self.OIDC_RP_IDP_SIGN_KEY = None
            user = super().authenticate(request, **kwargs)
        except DiscoveryFailed as failure:
            return self._refused(request, str(failure))
        except Refused as refusal:
            return self._refused(request, str(refusal))
        except SuspiciousOperation as suspicious:  # the library's: a nonce, no matching key
            return self._refused(request, f"the ID token was refused: {suspicious}")
        except requests.HTTPError as error:
            status = error.response.status_code if error.response is not None else "no answer"
            return self._refused(request, f"the identity provider refused the request ({status})")
        except (jwt.PyJWTError, KeyError, TypeError, ValueError) as error:
            # An answer of the wrong shape (no ID token, a JWKS or token header without its fields):
            # refused, never a server error.
            return self._refused(
                request, f"the identity provider's answer could not be read ({type(error).__name__})"
            )
        except requests.RequestException as error:
            return self._refused(request, f"the identity provider cannot be reached ({type(error).__name__})")
        if user is None:
            return self._refused(
                request, getattr(request, REFUSAL, "the identity provider's answer was not a sign-in")
            )
        return user

    def _refused(self, request: HttpRequest, why: str) -> None:
        setattr(request, REFUSAL, why)
        logger.warning("sso.refused", extra={"why": why})
        return None

    def get_payload_data(self, token: bytes | str, key: Any) -> dict[str, Any]:
        try:
            payload = jwt.decode(
                token,
                key,
                algorithms=[SIGNING_ALGORITHM],
                audience=settings.OIDC_CLIENT_ID,
                issuer=settings.OIDC_ISSUER,
                leeway=LEEWAY_SECONDS,
                options={"require": ["iss", "sub", "aud", "exp", "iat"]},
            )
        except jwt.ExpiredSignatureError as error:
            raise Refused("the ID token has expired") from error
        except jwt.InvalidAudienceError as error:
            raise Refused(
                "the ID token is meant for another client (its audience is not OIDC_CLIENT_ID)"
            ) from error
        except jwt.InvalidIssuerError as error:
            raise Refused("the ID token was issued by another issuer than OIDC_ISSUER") from error
        except jwt.InvalidTokenError as error:
            raise Refused(f"the ID token is not valid ({type(error).__name__})") from error
        audiences = payload["aud"] if isinstance(payload["aud"], list) else [payload["aud"]]
        if len(audiences) > 1 and payload.get("azp") != settings.OIDC_CLIENT_ID:
            raise Refused(
                "the ID token names several audiences and another authorized party than OIDC_CLIENT_ID"
            )
        return payload

    def get_userinfo(self, access_token: str, id_token: str, payload: dict[str, Any]) -> dict[str, Any]:
        """The ID token's claims and the userinfo endpoint's together (a provider may put the groups
        in either), once the two are checked to be about the same person."""
        userinfo = super().get_userinfo(access_token, id_token, payload)
        if not isinstance(userinfo, dict) or userinfo.get("sub") != payload.get("sub"):
            raise Refused("the identity provider's userinfo is about another subject than its ID token")
        return {**payload, **userinfo}

    def get_or_create_user(self, access_token: str, id_token: str, payload: dict[str, Any]) -> Any:
        # The library turns a refusal here into None: why is kept on the request first.
        try:
            return self._user_for(self.get_userinfo(access_token, id_token, payload))
        except Refused as refusal:
            setattr(self.request, REFUSAL, str(refusal))
            raise

    def _user_for(self, claims: dict[str, Any]) -> Any:
        username = claims.get(settings.OIDC_USERNAME_CLAIM)
        if not isinstance(username, str) or not username.strip():
            raise Refused(
                f"the identity provider's claims name no {settings.OIDC_USERNAME_CLAIM} (OIDC_USERNAME_CLAIM)"
            )
        if len(username) > USERNAME_MAX_LENGTH:
            raise Refused(
                f"the claim {settings.OIDC_USERNAME_CLAIM} is longer than a username may be ({USERNAME_MAX_LENGTH})"
            )
        groups = groups_in(claims, settings.OIDC_GROUPS_CLAIM)
        roles = roles_for(
            groups,
            staff_groups=settings.OIDC_STAFF_GROUPS,
            superuser_groups=settings.OIDC_SUPERUSER_GROUPS,
            decide_groups=settings.OIDC_DECIDE_GROUPS,
        )
        email = claims.get("email")
        user = accounts.signed_in(
            username=username.strip(),
            email=email if isinstance(email, str) else "",
            roles=roles,
            groups=groups,
        )
        if not user.is_active:
            raise Refused(f"the Django user {user.username!r} is deactivated")
        logger.info("sso.signed_in", extra={"user_id": user.pk, "roles": roles.names()})
        return user
