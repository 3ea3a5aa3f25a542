"""The admin says Agent Kourier, and its index is grouped as an operator looks: Bindings, activity, audit."""

import pytest
from django.urls import reverse

from kourier.admin_site import PASSWORD_LOGIN_OFF
from tests.factories import StaffUserFactory, TurnFactory

pytestmark = pytest.mark.django_db


def index_of(client):
    response = client.get(reverse("admin:index"))
    assert response.status_code == 200
    return response


def sections(response) -> list[tuple[str, list[str]]]:
    return [(app["name"], [model["name"] for model in app["models"]]) for app in response.context["app_list"]]


def test_the_admin_says_agent_kourier_not_django_administration(admin_client):
    content = index_of(admin_client).content.decode()

    assert "<title>Agent Kourier | Agent Kourier</title>" in content
    assert '<a href="/admin/">Agent Kourier</a>' in content
    assert "Django administration" not in content
    assert "Site administration" not in content
    assert "View site" not in content  # the service has no site at "/" to view


def test_the_index_lists_bindings_then_activity_then_the_audit_then_the_rest(admin_client):
    listed = sections(index_of(admin_client))

    assert listed[:3] == [
        ("Bindings", ["Bindings", "Connections"]),
        ("Activity", ["Sessions", "Turns", "Interactions", "Alerts"]),
        ("Audit", ["Audit events"]),
    ]
    assert ("Authentication and Authorization", ["Groups", "Users"]) in listed[3:]


def test_a_section_shows_only_what_the_user_may_see(client):
    client.force_login(StaffUserFactory(permissions=["threads.view_turn", "audit.view_auditevent"]))

    assert sections(index_of(client)) == [("Activity", ["Turns"]), ("Audit", ["Audit events"])]


def test_the_activity_section_spans_apps_so_its_title_is_not_a_link(admin_client):
    content = index_of(admin_client).content.decode()

    assert '<span class="section">Activity</span>' in content
    assert 'href="/admin/bindings/" class="section"' in content


def breadcrumbs(client, url: str) -> str:
    content = client.get(url).content.decode()
    crumbs = content[content.index('<div class="breadcrumbs">') :]
    return " ".join(crumbs[: crumbs.index("</div>")].split())


@pytest.mark.parametrize(
    ("page", "section"),
    [
        ("admin:threads_turn_changelist", '<a href="/admin/">Activity</a> &rsaquo; Turns'),
        ("admin:interactions_interaction_changelist", '<a href="/admin/">Activity</a> &rsaquo; Interactions'),
        ("admin:bindings_binding_changelist", '<a href="/admin/bindings/">Bindings</a> &rsaquo; Bindings'),
        ("admin:audit_auditevent_changelist", '<a href="/admin/audit/">Audit</a> &rsaquo; Audit events'),
        ("admin:auth_user_changelist", '<a href="/admin/auth/">Authentication and Authorization</a>'),
    ],
)
def test_breadcrumbs_name_the_section_the_index_shows_a_model_in(admin_client, page, section):
    assert section in breadcrumbs(admin_client, reverse(page))


def test_a_record_page_leads_back_through_its_section(admin_client):
    turn = TurnFactory()
    crumbs = breadcrumbs(admin_client, reverse("admin:threads_turn_change", args=[turn.pk]))
    assert crumbs.startswith(
        '<div class="breadcrumbs"> <a href="/admin/">Home</a> &rsaquo; <a href="/admin/">Activity</a> &rsaquo; '
        '<a href="/admin/threads/turn/">Turns</a>'
    )


SSO = {
    "OIDC_ISSUER": "https://login.example.com/realms/ops",
    "OIDC_CLIENT_ID": "kourier",
    "OIDC_CLIENT_SECRET": "a client secret",
}


def test_without_single_sign_on_the_login_page_is_djangos(client):
    content = client.get(reverse("admin:login")).content.decode()

    assert 'id="id_password"' in content
    assert "Sign in with" not in content


def test_with_single_sign_on_the_login_page_links_to_the_provider_beside_the_password_form(client, settings):
    for name, value in SSO.items():
        setattr(settings, name, value)

    content = client.get(reverse("admin:login") + "?next=/admin/audit/").content.decode()

    assert 'id="id_password"' in content
    assert (
        '<a class="button" href="/admin/sso/sign-in/?next=/admin/audit/">Sign in with login.example.com</a>'
        in content
    )


def test_with_passwords_off_the_login_page_has_only_the_providers_link(client, settings):
    for name, value in SSO.items():
        setattr(settings, name, value)
    settings.OIDC_PROVIDER_NAME = "Okta"
    settings.ADMIN_PASSWORD_LOGIN = False

    content = client.get(reverse("admin:login")).content.decode()

    assert 'id="login-form"' not in content
    assert 'id="id_password"' not in content
    assert "Sign in with Okta</a>" in content


def test_with_passwords_off_a_password_is_refused_even_a_right_one(client, settings):
    user = StaffUserFactory(username="ops")
    user.set_password("a local password")
    user.save()
    for name, value in SSO.items():
        setattr(settings, name, value)
    settings.OIDC_PROVIDER_NAME = "Okta"
    settings.ADMIN_PASSWORD_LOGIN = False

    response = client.post(reverse("admin:login"), {"username": "ops", "password": "a local password"})

    assert response.status_code == 403
    assert response.content.decode() == PASSWORD_LOGIN_OFF.format(provider="Okta")
    assert "_auth_user_id" not in client.session
