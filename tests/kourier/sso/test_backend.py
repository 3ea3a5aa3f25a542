"""The claims a sign-in brings, once its tokens are checked (end to end: tests/e2e/test_admin_sso.py),
made into a Django user with the roles the settings map."""

import pytest
from django.contrib.auth.models import User
from django.test import RequestFactory

from interactions.outside import PERMISSION
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
