"""Single sign-on for the admin (issue 34, point 1), end to end: headless Chromium (as in
test_admin_browser.py) against the product's web process, signing in at a real OpenID provider
(django-oidc-provider, its own process over HTTP: tests/support/oidc_provider/), which issues every
token, the faulty ones included (an expired one, one made out to another client or from another
issuer).

With passwords off, the login page offers only "Sign in with Test IdP"; a first sign-in makes the user
with the roles their groups are mapped to; logging out ends the session, here and at the provider; a
group the provider no longer names is revoked at the next sign-in; an expired ID token, one meant for
another client or one naming another issuer signs nobody in and says why; a password posted anyway is
refused.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import httpx
import pytest
from django.contrib.auth.models import Group, User
from django.contrib.sessions.models import Session
from django.utils import timezone

from audit.models import AuditEvent
from interactions.outside import PERMISSION as DECIDE
from kourier.admin_site import PASSWORD_LOGIN_OFF
from kourier.sso.accounts import AUDIT_ACTION
from tests.e2e.helpers import BROWSER_TIMEOUT_MS, synchronous_orm_calls
from tests.support.oidc_provider.process import IdentityProvider
from tests.support.stack import Stack

pytestmark = pytest.mark.slow

CLIENT_ID, CLIENT_SECRET = "kourier", "the client secret of kourier at the test provider"
PASSWORD = "a long passphrase at the provider"
PROVIDER_NAME = "Test IdP"
SESSION_SECONDS = 3600  # a signed-in session's length; Django's own is two weeks


def start_kourier(start_stack: Callable[..., Stack], provider: IdentityProvider) -> Stack:
    stack = start_stack(
        workers=0,
        env={
            "OIDC_ISSUER": provider.issuer,
            "OIDC_CLIENT_ID": CLIENT_ID,
            "OIDC_CLIENT_SECRET": CLIENT_SECRET,
            "OIDC_PROVIDER_NAME": PROVIDER_NAME,
            "OIDC_SCOPES": "openid,email,profile,groups",
            "OIDC_STAFF_GROUPS": "kourier-staff",
            "OIDC_SUPERUSER_GROUPS": "kourier-admins",
            "OIDC_DECIDE_GROUPS": "kourier-approvers",
            "ADMIN_PASSWORD_LOGIN": "false",
            "OIDC_SESSION_SECONDS": str(SESSION_SECONDS),
        },
    )
    provider.client(
        CLIENT_ID,
        secret=CLIENT_SECRET,
        redirect_uris=(f"{stack.base_url}/admin/sso/callback/",),
        post_logout_redirect_uris=(f"{stack.base_url}/admin/login/",),
    )
    return stack


def sign_in(page: Any, stack: Stack, username: str) -> bool:
    """From the admin's login page, through the provider's own login form when it asks (whether it
    did: not while the person's session at the provider lasts)."""
    from playwright.sync_api import expect

    page.goto("/admin/")
    expect(page).to_have_url(f"{stack.base_url}/admin/login/?next=/admin/")
    assert page.locator("#id_password").count() == 0
    page.get_by_role("link", name=f"Sign in with {PROVIDER_NAME}").click()
    page.wait_for_url(lambda url: "/accounts/login/" in url or url.startswith(f"{stack.base_url}/admin/"))
    asked = "/accounts/login/" in page.url
    if asked:
        page.fill("#id_username", username)
        page.fill("#id_password", PASSWORD)
        page.click("#provider-login button")
    page.wait_for_url(f"{stack.base_url}/admin/**")
    return asked


def roles_of(username: str) -> tuple[bool, bool, bool, list[str]]:
    with synchronous_orm_calls():
        user = User.objects.get(username=username)
        return (
            user.is_staff,
            user.is_superuser,
            user.has_perm(DECIDE),
            sorted(g.name for g in user.groups.all()),
        )


def test_people_sign_in_with_the_provider_get_their_mapped_roles_and_lose_a_revoked_one(
    oidc_provider: IdentityProvider, start_stack: Callable[..., Stack], chromium: str
) -> None:
    from playwright.sync_api import expect, sync_playwright

    Group.objects.create(name="kourier-approvers")  # a Django group, as a Binding's deciding group is
    User.objects.create_superuser("local-admin", "", "a local password")
    oidc_provider.user(
        "ada", password=PASSWORD, email="ada@example.com", groups=("kourier-admins", "kourier-approvers")
    )
    stack = start_kourier(start_stack, oidc_provider)
    expect.set_options(timeout=BROWSER_TIMEOUT_MS)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, headless=True)
        try:
            page = browser.new_page(base_url=stack.base_url)
            page.set_default_timeout(BROWSER_TIMEOUT_MS)

            assert sign_in(page, stack, "ada")
            expect(page.locator("#site-name")).to_have_text("Agent Kourier")
            expect(page.locator("#user-tools")).to_contain_text("ada@example.com")
            assert roles_of("ada@example.com") == (True, True, True, ["kourier-approvers"])
            with synchronous_orm_calls():
                assert not User.objects.get(username="ada@example.com").has_usable_password()
                [created] = AuditEvent.objects.filter(action=AUDIT_ACTION)
                assert created.details["created"] is True
                assert created.details["granted"] == ["decide", "staff", "superuser"]
                [session] = Session.objects.all()
                assert session.expire_date <= timezone.now() + timedelta(seconds=SESSION_SECONDS)

            # Logging out ends the session here, then at the provider, which sends her back.
            page.click("#logout-form button")
            expect(page).to_have_url(f"{stack.base_url}/admin/login/")
            with synchronous_orm_calls():
                assert Session.objects.count() == 0
            page.goto("/admin/")
            expect(page).to_have_url(f"{stack.base_url}/admin/login/?next=/admin/")

            # The provider drops ada from the admins and the approvers; her next sign-in (which the
            # provider asks her password for again: her session there ended) takes the roles away.
            oidc_provider.user("ada", password=PASSWORD, email="ada@example.com", groups=("kourier-staff",))
            assert sign_in(page, stack, "ada")
            expect(page.locator("#content")).to_contain_text("have permission to view or edit anything")
            assert roles_of("ada@example.com") == (True, False, False, [])
            with synchronous_orm_calls():
                revoked = AuditEvent.objects.filter(action=AUDIT_ACTION).order_by("-pk").first()
                assert revoked.details["revoked"] == ["decide", "superuser"]
                assert revoked.details["groups_left"] == ["kourier-approvers"]
        finally:
            browser.close()

    refused = refused_password(stack, "local-admin", "a local password")
    assert refused.status_code == 403
    assert refused.text == PASSWORD_LOGIN_OFF.format(provider=PROVIDER_NAME)


@pytest.mark.parametrize(
    ("quirk", "why"),
    [
        ("quirk:expired", "the ID token has expired"),
        ("quirk:audience", "the ID token is meant for another client (its audience is not OIDC_CLIENT_ID)"),
        ("quirk:issuer", "the ID token was issued by another issuer than OIDC_ISSUER"),
    ],
)
def test_an_id_token_that_is_expired_meant_for_another_client_or_from_another_issuer_signs_nobody_in(
    oidc_provider: IdentityProvider, start_stack: Callable[..., Stack], chromium: str, quirk: str, why: str
) -> None:
    from playwright.sync_api import expect, sync_playwright

    oidc_provider.user("bea", password=PASSWORD, email="bea@example.com", groups=("kourier-admins", quirk))
    stack = start_kourier(start_stack, oidc_provider)
    expect.set_options(timeout=BROWSER_TIMEOUT_MS)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, headless=True)
        try:
            page = browser.new_page(base_url=stack.base_url)
            page.set_default_timeout(BROWSER_TIMEOUT_MS)
            sign_in(page, stack, "bea")
            expect(page).to_have_url(f"{stack.base_url}/admin/login/")
            expect(page.locator(".messagelist")).to_have_text(f"Single sign-on did not sign you in: {why}.")
            page.goto("/admin/")
            expect(page).to_have_url(f"{stack.base_url}/admin/login/?next=/admin/")
        finally:
            browser.close()
    assert not User.objects.filter(username="bea@example.com").exists()
    assert not AuditEvent.objects.filter(action=AUDIT_ACTION).exists()
    assert "sso.refused" in stack.log_text("web")


def refused_password(stack: Stack, username: str, password: str) -> httpx.Response:
    """A password posted to the login page anyway, with a CSRF token of its own (the page gives none)."""
    token = secrets.token_hex(16)
    return httpx.post(
        f"{stack.base_url}/admin/login/",
        data={"username": username, "password": password, "csrfmiddlewaretoken": token},
        cookies={"csrftoken": token},
    )
