"""The identity provider's endpoints, read from its discovery document
(``<OIDC_ISSUER>/.well-known/openid-configuration``) when a first sign-in needs them, and again an hour
later, so that a provider that moves an endpoint or rotates its keys' address is followed without a
restart. A document that cannot be read is not kept: the next sign-in tries again.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import httpx

DISCOVERY_PATH = "/.well-known/openid-configuration"
KEEP_SECONDS = 3600.0
TIMEOUT_SECONDS = 10.0
# RS256 is the one algorithm every OpenID provider must offer, and Kourier accepts no other.
SIGNING_ALGORITHM = "RS256"
REQUIRED = ("authorization_endpoint", "token_endpoint", "userinfo_endpoint", "jwks_uri")


class DiscoveryFailed(Exception):
    """Why the provider's endpoints are not known, in one line for the operator."""


@dataclass(frozen=True)
class Provider:
    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    userinfo_endpoint: str
    jwks_uri: str
    end_session_endpoint: str = ""


_lock = threading.Lock()
_kept: dict[str, tuple[float, Provider]] = {}


def discovery_url(issuer: str) -> str:
    return issuer.rstrip("/") + DISCOVERY_PATH


def provider(issuer: str) -> Provider:
    """The endpoints of ``issuer``, from its discovery document (read at most once an hour)."""
    now = time.monotonic()
    with _lock:
        kept = _kept.get(issuer)
    if kept is not None and now - kept[0] < KEEP_SECONDS:
        return kept[1]
    found = _read(issuer)
    with _lock:
        _kept[issuer] = (now, found)
    return found


def forget() -> None:
    """Reads every provider's document afresh at its next use."""
    with _lock:
        _kept.clear()


def _read(issuer: str) -> Provider:
    url = discovery_url(issuer)
    try:
        response = httpx.get(url, timeout=TIMEOUT_SECONDS, follow_redirects=False)
    except httpx.HTTPError as error:
        raise DiscoveryFailed(
            f"The identity provider's discovery document {url} cannot be read: {error}."
        ) from error
    if response.status_code != 200:
        raise DiscoveryFailed(f"The identity provider answered {response.status_code} for {url}.")
    try:
        document = response.json()
    except ValueError as error:
        raise DiscoveryFailed(f"The identity provider's discovery document {url} is not JSON.") from error
    return provider_from(document, issuer=issuer, url=url)


def provider_from(document: object, *, issuer: str, url: str) -> Provider:
    """The endpoints a discovery document names, once it is checked to be ``issuer``'s (OpenID Connect
    Discovery 1.0, section 4.3: the issuer it names must be the one asked, exactly)."""
    if not isinstance(document, dict):
        raise DiscoveryFailed(f"The identity provider's discovery document {url} is not a JSON object.")
    if document.get("issuer") != issuer:
        raise DiscoveryFailed(
            f"The identity provider's discovery document names the issuer {document.get('issuer')!r}, "
            f"not OIDC_ISSUER {issuer!r}: set OIDC_ISSUER to exactly the provider's issuer."
        )
    missing = [key for key in REQUIRED if not isinstance(document.get(key), str) or not document[key]]
    if missing:
        raise DiscoveryFailed(
            f"The identity provider's discovery document {url} names no {', '.join(missing)}."
        )
    algorithms = document.get("id_token_signing_alg_values_supported")
    if isinstance(algorithms, list) and SIGNING_ALGORITHM not in algorithms:
        raise DiscoveryFailed(
            f"The identity provider does not sign ID tokens with {SIGNING_ALGORITHM} "
            f"(it offers {', '.join(map(str, algorithms))}), the one algorithm Kourier accepts."
        )
    end_session = document.get("end_session_endpoint")
    return Provider(
        issuer=issuer,
        **{key: document[key] for key in REQUIRED},
        end_session_endpoint=end_session if isinstance(end_session, str) else "",
    )
