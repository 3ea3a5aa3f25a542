"""A sign-in's code exchanged at the real provider (tests/support/oidc_provider/), and the claims it
brings, once its tokens are checked (in a browser: tests/e2e/test_admin_sso.py), made into a Django
user with the roles the settings map."""

import pytest
from django.contrib.auth.models import User
from django.contrib.messages import get_messages
from django.test import RequestFactory
from django.urls import reverse

from interactions.outside import PERMISSION
from kourier.sso import discovery
from kourier.sso.backend import REFUSAL, OIDCBackend, Refused

pytestmark = pytest.mark.django_db


@pytest.fixture
def backend(settings):
    settings.OIDC_USERNAME_CLAIM = "preferred_username"
    settings.OIDC_GROUPS_CLAIM = "roles"
    settings.OIDC_STAFF_GROUPS = ["ops"]
    settings.OIDC_DECIDE_GROUPS = ["approvers"]
    made = OIDCBackend()
    made.request = RequestFactory().get("/admin/sso/callback/")
    return made


def test_the_claims_name_the_user_and_the_mapped_claim_gives_the_roles(backend):
    user = backend._user_for(
        {"sub": "1", "preferred_username": "ada", "email": "ada@example.com", "roles": ["approvers"]}
    )

    assert (user.username, user.email, user.is_staff, user.is_superuser) == (
        "ada",
        "ada@example.com",
        True,
        False,
    )
    assert User.objects.get(pk=user.pk).has_perm(PERMISSION)


def test_claims_without_the_username_claim_are_refused_and_make_nobody(backend):
    with pytest.raises(Refused, match="name no preferred_username"):
        backend._user_for({"sub": "1", "email": "ada@example.com"})

    assert not User.objects.exists()


def test_a_user_deactivated_in_kourier_stays_out_whatever_the_provider_says(backend):
    User.objects.create_user("ada", is_active=False)

    with pytest.raises(Refused, match="'ada' is deactivated"):
        backend._user_for({"sub": "1", "preferred_username": "ada", "roles": ["ops"]})


def test_a_password_is_never_a_sign_in_for_this_backend(backend):
    User.objects.create_user("ada", password="a local password")
    request = RequestFactory().post("/admin/login/")

    assert backend.authenticate(request, username="ada", password="a local password") is None
    assert not hasattr(request, REFUSAL)


CLIENT_ID, CLIENT_SECRET = "kourier", "the client secret of kourier at the test provider"


@pytest.fixture
def signing_in(client, settings, oidc_provider):
    """A sign-in at the real provider up to its way back: the callback's URL (with the code), to open
    with the test client as the browser would (tests/support/oidc_provider/)."""
    settings.OIDC_ISSUER = oidc_provider.issuer
    settings.OIDC_CLIENT_ID, settings.OIDC_CLIENT_SECRET = CLIENT_ID, CLIENT_SECRET
    settings.OIDC_SCOPES = ["openid", "email", "groups"]
    settings.OIDC_STAFF_GROUPS = ["ops"]
    # As the settings make it when OIDC_ISSUER is set at start-up.
    settings.AUTHENTICATION_BACKENDS = [
        "django.contrib.auth.backends.ModelBackend",
        "kourier.sso.backend.OIDCBackend",
    ]
    discovery.forget()
    oidc_provider.client(
        CLIENT_ID, secret=CLIENT_SECRET, redirect_uris=("http://testserver/admin/sso/callback/",)
    )
    oidc_provider.user("ada", password="a provider password", email="ada@example.com", groups=("ops",))
    started = client.get(reverse("sso-sign-in"))
    back = oidc_provider.authorize(started["Location"], username="ada", password="a provider password")
    yield back.removeprefix("http://testserver")
    discovery.forget()


@pytest.mark.slow
def test_a_code_from_the_real_provider_signs_the_person_in(client, signing_in):
    response = client.get(signing_in)

    assert (response.status_code, response["Location"]) == (302, reverse("admin:index"))
    user = User.objects.get(username="ada@example.com")
    assert (user.is_staff, user.is_superuser) == (True, False)
    assert client.session["_auth_user_id"] == str(user.pk)


@pytest.mark.slow
def test_a_code_the_provider_will_not_exchange_signs_nobody_in_and_says_why(client, settings, signing_in):
    settings.OIDC_CLIENT_SECRET = "not the client's secret"

    response = client.get(signing_in)

    assert (response.status_code, response["Location"]) == (302, reverse("admin:login"))
    assert [str(m) for m in get_messages(response.wsgi_request)] == [
        "Single sign-on did not sign you in: the identity provider refused the request (400)."
    ]
    assert not User.objects.filter(username="ada@example.com").exists()
    assert "_auth_user_id" not in client.session


@pytest.mark.slow
def test_a_way_back_opened_again_in_another_session_signs_nobody_in(client, signing_in):
    assert client.get(signing_in)["Location"] == reverse("admin:index")
    client.logout()

    response = client.get(signing_in)

    assert (response.status_code, response["Location"]) == (302, reverse("admin:login"))
    assert [str(m) for m in get_messages(response.wsgi_request)] == [
        "Single sign-on did not sign you in: the sign-in had expired or was started in another browser."
    ]
    assert "_auth_user_id" not in client.session
