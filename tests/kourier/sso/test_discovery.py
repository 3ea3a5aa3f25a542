import re

import pytest

from kourier.sso import discovery
from kourier.sso.discovery import DiscoveryFailed, provider_from

ISSUER = "https://login.example.com/realms/ops"
URL = discovery.discovery_url(ISSUER)
DOCUMENT = {
    "issuer": ISSUER,
    "authorization_endpoint": f"{ISSUER}/auth",
    "token_endpoint": f"{ISSUER}/token",
    "userinfo_endpoint": f"{ISSUER}/userinfo",
    "jwks_uri": f"{ISSUER}/certs",
    "end_session_endpoint": f"{ISSUER}/logout",
    "id_token_signing_alg_values_supported": ["RS256", "ES256"],
}


def test_the_document_is_read_under_the_issuer():
    assert discovery.discovery_url(ISSUER) == f"{ISSUER}/.well-known/openid-configuration"
    assert discovery.discovery_url(ISSUER + "/") == f"{ISSUER}/.well-known/openid-configuration"


def test_a_document_gives_the_providers_endpoints():
    found = provider_from(DOCUMENT, issuer=ISSUER, url=URL)

    assert (
        found.authorization_endpoint,
        found.token_endpoint,
        found.jwks_uri,
        found.end_session_endpoint,
    ) == (
        f"{ISSUER}/auth",
        f"{ISSUER}/token",
        f"{ISSUER}/certs",
        f"{ISSUER}/logout",
    )


def test_a_document_that_names_another_issuer_is_refused():
    with pytest.raises(
        DiscoveryFailed, match=re.escape("names the issuer 'https://login.example.com/', not OIDC_ISSUER")
    ):
        provider_from({**DOCUMENT, "issuer": "https://login.example.com/"}, issuer=ISSUER, url=URL)


def test_a_document_without_an_endpoint_is_refused():
    document = {key: value for key, value in DOCUMENT.items() if key != "jwks_uri"}

    with pytest.raises(DiscoveryFailed, match="names no jwks_uri"):
        provider_from(document, issuer=ISSUER, url=URL)


def test_a_provider_that_does_not_sign_with_rs256_is_refused():
    with pytest.raises(DiscoveryFailed, match="does not sign ID tokens with RS256"):
        provider_from(
            {**DOCUMENT, "id_token_signing_alg_values_supported": ["HS256"]}, issuer=ISSUER, url=URL
        )


def test_a_document_that_is_no_object_is_refused():
    with pytest.raises(DiscoveryFailed, match="is not a JSON object"):
        provider_from(["issuer"], issuer=ISSUER, url=URL)


@pytest.mark.slow
def test_the_real_providers_document_is_read_once_then_kept(oidc_provider):
    discovery.forget()
    found = discovery.provider(oidc_provider.issuer)
    assert found.token_endpoint == f"{oidc_provider.issuer}/token"

    oidc_provider.stop()

    assert discovery.provider(oidc_provider.issuer) == found  # kept: not read again
    discovery.forget()
    with pytest.raises(DiscoveryFailed, match="cannot be read"):
        discovery.provider(oidc_provider.issuer)
