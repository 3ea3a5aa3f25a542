from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.messages import get_messages
from django.contrib.sessions.models import Session
from django.urls import reverse

from kourier.sso import discovery
from tests.support.private_redis import free_port

pytestmark = pytest.mark.django_db


@pytest.fixture
def single_sign_on(settings):
    def configure(issuer: str) -> None:
        settings.OIDC_ISSUER = issuer
        settings.OIDC_CLIENT_ID = "kourier"
        settings.OIDC_CLIENT_SECRET = "a client secret"
        settings.OIDC_SCOPES = ["openid", "email", "groups"]
        discovery.forget()

    yield configure
    discovery.forget()


def messages_of(response) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]


@pytest.mark.parametrize("name", ["sso-sign-in", "sso-callback", "sso-sign-out"])
def test_while_single_sign_on_is_off_its_pages_are_not_found(client, name):
    assert client.get(reverse(name)).status_code == 404


def test_a_provider_that_cannot_be_reached_sends_the_person_back_to_the_login_page_saying_so(
    client, single_sign_on
):
    issuer = f"http://127.0.0.1:{free_port()}/openid"
    single_sign_on(issuer)

    response = client.get(reverse("sso-sign-in"))

    assert (response.status_code, response["Location"]) == (302, reverse("admin:login"))
    [message] = messages_of(response)
    assert message.startswith(
        f"Single sign-on did not sign you in: The identity provider's discovery document {issuer}/.well-known/"
    )


@pytest.mark.slow
def test_a_sign_in_goes_to_the_providers_authorization_endpoint_with_state_nonce_and_pkce(
    client, single_sign_on, oidc_provider
):
    single_sign_on(oidc_provider.issuer)

    response = client.get(reverse("sso-sign-in") + "?next=/admin/audit/")

    assert response.status_code == 302
    location = urlsplit(response["Location"])
    assert f"{location.scheme}://{location.netloc}{location.path}" == f"{oidc_provider.issuer}/authorize"
    query = {name: values[0] for name, values in parse_qs(location.query).items()}
    assert query["client_id"] == "kourier"
    assert query["response_type"] == "code"
    assert query["scope"] == "openid email groups"
    assert query["redirect_uri"] == "http://testserver/admin/sso/callback/"
    assert query["code_challenge_method"] == "S256"
    assert all(query[name] for name in ("nonce", "state", "code_challenge"))
    assert client.session["oidc_login_next"] == "/admin/audit/"


def test_a_provider_that_answers_an_error_signs_nobody_in_and_says_so(client, settings):
    settings.OIDC_ISSUER = "https://login.example.com"

    response = client.get(reverse("sso-callback") + "?error=access_denied&state=x")

    assert (response.status_code, response["Location"]) == (302, reverse("admin:login"))
    assert messages_of(response) == [
        "Single sign-on did not sign you in: the identity provider answered access_denied."
    ]
    assert "_auth_user_id" not in client.session


def test_logging_out_after_a_password_sign_in_ends_as_django_does(admin_client, settings):
    settings.OIDC_ISSUER = "https://login.example.com"

    response = admin_client.post(reverse("admin:logout"))

    assert response.status_code == 200
    assert "Logged out" in response.content.decode()
    assert "_auth_user_id" not in admin_client.session


def test_logging_out_after_a_single_sign_on_goes_on_to_the_sign_out_page(admin_client, settings):
    settings.OIDC_ISSUER = "https://login.example.com"
    session = admin_client.session
    session["oidc_id_token"] = "the id token"
    session.save()

    response = admin_client.post(reverse("admin:logout"))

    assert (response.status_code, response["Location"]) == (302, reverse("sso-sign-out"))
    assert "_auth_user_id" not in admin_client.session
    assert dict(admin_client.session) == {"kourier_sso_sign_out": "the id token"}


@pytest.mark.slow
def test_the_sign_out_page_sends_the_id_token_to_the_providers_end_session_endpoint_and_keeps_nothing(
    client, single_sign_on, oidc_provider
):
    single_sign_on(oidc_provider.issuer)
    session = client.session
    session["kourier_sso_sign_out"] = "the id token"
    session.save()

    response = client.get(reverse("sso-sign-out"))

    location = urlsplit(response["Location"])
    assert f"{location.scheme}://{location.netloc}{location.path}" == f"{oidc_provider.issuer}/end-session"
    assert parse_qs(location.query) == {
        "id_token_hint": ["the id token"],
        "post_logout_redirect_uri": ["http://testserver/admin/login/"],
        "client_id": ["kourier"],
    }
    assert not Session.objects.exists()


def test_the_sign_out_page_without_a_sign_in_to_end_goes_to_the_login_page(client, settings):
    settings.OIDC_ISSUER = "https://login.example.com"

    response = client.get(reverse("sso-sign-out"))

    assert (response.status_code, response["Location"]) == (302, reverse("admin:login"))
