"""The admin lists and edits Connections and Bindings with the loader's checks, and shows no secret."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse
from django.utils import timezone
from django.utils.formats import date_format

from alerts.models import Alert
from audit.models import AuditEvent
from bindings import forms, manifest
from bindings.models import Binding, Connection
from kourier.slack import failures
from kourier.slack.clients import connection_workspace
from sessions.models import Turn
from simulator import defaults
from tests.bindings.helpers import binding_form
from tests.factories import (
    AlertFactory,
    BindingFactory,
    ConnectionFactory,
    InteractionFactory,
    SessionFactory,
    StaffUserFactory,
    TurnFactory,
)
from tests.fakes.kagent_controller import KagentController

from .manifests import binding, documents, errors_of

pytestmark = pytest.mark.django_db

WARNING = (
    'Binding "ops": spec.interactions.toolApprovals is true but approverGroups is empty: '
    "any non-bot member of the channel may decide approvals"
)


@pytest.fixture
def acme():
    return ConnectionFactory(name="acme")


def form_errors(response) -> list[str]:
    form = response.context["adminform"].form
    return [str(error) for errors in form.errors.values() for error in errors]


def messages_of(response) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]


# --- Connections -------------------------------------------------------------------------------------


def test_the_connection_list_shows_names_variables_and_binding_counts(admin_client, acme):
    BindingFactory(connection=acme)

    response = admin_client.get(reverse("admin:bindings_connection_changelist"))

    assert response.status_code == 200
    content = response.content.decode()
    assert "acme" in content
    assert "SLACK_BOT_TOKEN" in content


def test_a_connection_is_added_from_variable_names(admin_client):
    response = admin_client.post(
        reverse("admin:bindings_connection_add"),
        {
            "name": "acme",
            "bot_token_env": "ACME_BOT_TOKEN",
            "signing_secret_env": "ACME_SIGNING_SECRET",
            "app_token_env": "",
        },
    )

    assert response.status_code == 302
    assert Connection.objects.filter(
        name="acme",
        bot_token_env="ACME_BOT_TOKEN",
        signing_secret_env="ACME_SIGNING_SECRET",
        app_token_env="",
    ).exists()


def test_a_connection_takes_slacks_agent_sessions_when_ticked_and_leaves_them_off_otherwise(admin_client):
    fields = {
        "bot_token_env": "ACME_BOT_TOKEN",
        "signing_secret_env": "ACME_SIGNING_SECRET",
        "app_token_env": "",
    }
    add = reverse("admin:bindings_connection_add")

    assert admin_client.post(add, {"name": "acme", **fields, "agent_sessions": "on"}).status_code == 302
    assert admin_client.post(add, {"name": "umbrella", **fields}).status_code == 302

    assert dict(Connection.objects.values_list("name", "agent_sessions")) == {"acme": True, "umbrella": False}


def test_a_connection_form_refuses_with_the_loaders_words(admin_client):
    response = admin_client.post(
        reverse("admin:bindings_connection_add"),
        {"name": "acme", "bot_token_env": "xoxb-not-a-name", "signing_secret_env": "", "app_token_env": ""},
    )

    assert response.status_code == 200
    form = response.context["adminform"].form
    assert form.errors["bot_token_env"] == [
        'Connection "acme": spec.botToken.fromEnv: must be an environment variable name: letters, digits '
        "and underscores, not starting with a digit, at most 255 characters"
    ]
    assert form.errors["signing_secret_env"] == ['Connection "acme": spec.signingSecret: is required']
    assert not Connection.objects.exists()


def test_editing_a_connection_keeps_what_was_learned_from_slack(admin_client, acme):
    Connection.objects.filter(pk=acme.pk).update(team_id="T01", bot_user_id="U01")

    response = admin_client.post(
        reverse("admin:bindings_connection_change", args=[acme.pk]),
        {
            "name": "acme",
            "bot_token_env": "NEW_BOT_TOKEN",
            "signing_secret_env": "NEW_SIGNING_SECRET",
            "app_token_env": "NEW_APP_TOKEN",
        },
    )

    assert response.status_code == 302
    assert Connection.objects.filter(
        pk=acme.pk, bot_token_env="NEW_BOT_TOKEN", app_token_env="NEW_APP_TOKEN", team_id="T01"
    )


def test_the_connection_page_shows_whether_each_variable_is_set_but_never_its_value(
    admin_client, monkeypatch
):
    monkeypatch.setenv("ACME_BOT_TOKEN", "xoxb-very-secret-token")
    monkeypatch.delenv("ACME_SIGNING_SECRET", raising=False)
    connection = ConnectionFactory(
        name="acme", bot_token_env="ACME_BOT_TOKEN", signing_secret_env="ACME_SIGNING_SECRET"
    )

    change = admin_client.get(
        reverse("admin:bindings_connection_change", args=[connection.pk])
    ).content.decode()
    listing = admin_client.get(reverse("admin:bindings_connection_changelist")).content.decode()

    assert "botToken: <code>ACME_BOT_TOKEN</code> (set)" in change
    assert "signingSecret: <code>ACME_SIGNING_SECRET</code> (not set)" in change
    assert "xoxb-very-secret-token" not in change
    assert "xoxb-very-secret-token" not in listing


# --- Bindings ----------------------------------------------------------------------------------------


def test_the_binding_list_shows_channels_and_agents(admin_client):
    BindingFactory(name="ops", channels=["C0123456789", "C0987654321"])

    content = admin_client.get(reverse("admin:bindings_binding_changelist")).content.decode()

    assert "C0123456789, C0987654321" in content
    assert "http://127.0.0.1:8083/" in content


def test_a_binding_is_added_with_its_channels(admin_client, acme):
    response = admin_client.post(
        reverse("admin:bindings_binding_add"),
        binding_form(channels="C0123456789, C0987654321", agent_headers="Authorization: OPS_AGENT_TOKEN"),
    )

    assert response.status_code == 302
    saved = Binding.objects.get(name="ops")
    assert saved.connection == acme
    assert saved.channel_ids() == ["C0123456789", "C0987654321"]
    assert saved.agent_headers == {"Authorization": "OPS_AGENT_TOKEN"}
    assert saved.interaction_timeout.total_seconds() == 1800


def test_a_bindings_triggers_are_saved_by_the_admin_and_shown_again(admin_client, acme):
    from bindings.models import Binding

    admin_client.post(
        reverse("admin:bindings_binding_add"), binding_form(triggers="prometheus alertmanager OPS_TOKEN")
    )
    saved = Binding.objects.get(name="ops")
    page = admin_client.get(reverse("admin:bindings_binding_change", args=[saved.pk]))

    assert saved.triggers == [{"name": "prometheus", "kind": "alertmanager", "token_env": "OPS_TOKEN"}]
    assert "prometheus alertmanager OPS_TOKEN" in page.content.decode()


def test_a_triggers_thread_options_are_saved_by_the_admin_and_shown_again(admin_client, acme):
    from bindings.models import Binding

    line = "prometheus alertmanager OPS_TOKEN threadPer=alert maxThreadsPerHour=5"
    admin_client.post(reverse("admin:bindings_binding_add"), binding_form(triggers=line))
    saved = Binding.objects.get(name="ops")
    page = admin_client.get(reverse("admin:bindings_binding_change", args=[saved.pk]))

    [trigger] = saved.triggers
    assert (trigger["thread_per"], trigger["max_threads_per_hour"]) == ("alert", 5)
    assert line in page.content.decode()


def test_the_thread_so_far_is_on_by_default_and_its_switch_and_bounds_are_saved_by_the_admin(
    admin_client, acme
):
    from bindings.models import Binding

    admin_client.post(reverse("admin:bindings_binding_add"), binding_form())
    default = Binding.objects.get(name="ops")
    assert (default.thread_context_enabled, default.thread_context_max_messages) == (True, 50)

    admin_client.post(
        reverse("admin:bindings_binding_add"),
        binding_form(
            name="quiet",
            channels="C0123456788",
            thread_context_enabled=None,
            thread_context_max_messages="5",
            thread_context_max_characters="900",
        ),
    )
    saved = Binding.objects.get(name="quiet")
    page = admin_client.get(reverse("admin:bindings_binding_change", args=[saved.pk])).content.decode()

    assert (saved.thread_context_enabled, saved.thread_context_max_messages) == (False, 5)
    assert saved.thread_context_max_characters == 900
    assert 'name="thread_context_max_characters" value="900"' in page


def test_a_thread_so_far_bound_past_its_limit_is_refused_on_its_field(admin_client, acme):
    from bindings.models import Binding

    response = admin_client.post(
        reverse("admin:bindings_binding_add"), binding_form(thread_context_max_messages="0")
    )

    assert response.context["adminform"].form.errors["thread_context_max_messages"] == [
        'Binding "ops": spec.chat.threadContext.maxMessages: must be a whole number from 1 to 1000 (got 0)'
    ]
    assert not Binding.objects.exists()


def test_approval_rules_are_saved_by_the_admin_and_shown_again(admin_client, acme):
    lines = "db_* approverGroups=S0DBA separateApprover=true\ncheck_status unattended=deny"
    admin_client.post(
        reverse("admin:bindings_binding_add"),
        binding_form(dialect="kagent-v1", tool_approvals="on", separate_approver="on", tool_rules=lines),
    )
    saved = Binding.objects.get(name="ops")
    page = admin_client.get(reverse("admin:bindings_binding_change", args=[saved.pk]))

    assert saved.separate_approver is True
    assert saved.tool_rules == [
        {"match": "db_*", "approverGroups": ["S0DBA"], "separateApprover": True},
        {"match": "check_status", "unattended": "deny"},
    ]
    assert lines in page.content.decode()


def test_a_trigger_line_without_its_token_variable_is_refused_in_the_form(admin_client, acme):
    response = admin_client.post(
        reverse("admin:bindings_binding_add"), binding_form(triggers="prometheus alertmanager")
    )

    assert "line 1: write each trigger as NAME KIND TOKEN_ENV_VAR" in " ".join(form_errors(response))


def test_a_binding_saved_by_the_admin_exports_like_one_applied(admin_client, acme):
    from bindings import services

    admin_client.post(reverse("admin:bindings_binding_add"), binding_form())
    exported = services.export_manifests()

    assert [str(o) for o in services.apply_manifests(exported).resources] == [
        "connection/acme unchanged",
        "binding/ops unchanged",
    ]


@pytest.mark.parametrize(
    ("fields", "document", "field"),
    [
        pytest.param(
            {"interaction_timeout": "30 minutes"},
            binding(interactions={"timeout": "30 minutes"}),
            "interaction_timeout",
            id="bad duration",
        ),
        pytest.param(
            {"acknowledgment_emoji": ":eyes:"},
            binding(chat={"acknowledgment": {"emoji": ":eyes:"}}),
            "acknowledgment_emoji",
            id="emoji with colons",
        ),
        pytest.param(
            {
                "tool_approvals": "on",
                "dialect": "kagent-v1",
                "approver_groups": ",".join(f"S{i:02d}" for i in range(11)),
            },
            binding(
                agent={"url": "http://127.0.0.1:8083/", "dialect": "kagent-v1"},
                interactions={"toolApprovals": True, "approverGroups": [f"S{i:02d}" for i in range(11)]},
            ),
            "approver_groups",
            id="more than 10 approver groups",
        ),
        pytest.param(
            {"tool_approvals": "on", "dialect": "kagent-v1", "approver_groups": "S01, , S02, S01"},
            binding(
                agent={"url": "http://127.0.0.1:8083/", "dialect": "kagent-v1"},
                interactions={"toolApprovals": True, "approverGroups": ["S01", "", "S02", "S01"]},
            ),
            "approver_groups",
            id="empty and duplicate approver groups",
        ),
        pytest.param(
            {"approver_groups": "S01"},
            binding(interactions={"approverGroups": ["S01"]}),
            "approver_groups",
            id="approver groups without toolApprovals",
        ),
        pytest.param(
            {"tool_approvals": "on", "dialect": "kagent-v1", "tool_rules": "approverGroups=S01"},
            binding(
                agent={"url": "http://127.0.0.1:8083/", "dialect": "kagent-v1"},
                interactions={"toolApprovals": True, "tools": [{"approverGroups": ["S01"]}]},
            ),
            "tool_rules",
            id="a tool rule without match",
        ),
        pytest.param(
            {"tool_approvals": "on", "dialect": "kagent-v1", "tool_rules": "db_* approvers=S01"},
            binding(
                agent={"url": "http://127.0.0.1:8083/", "dialect": "kagent-v1"},
                interactions={"toolApprovals": True, "tools": [{"match": "db_*", "approvers": "S01"}]},
            ),
            "tool_rules",
            id="a tool rule with an unknown key",
        ),
        pytest.param(
            {
                "tool_approvals": "on",
                "dialect": "kagent-v1",
                "tool_rules": "db_* approverGroups=" + ",".join(f"S{i:02d}" for i in range(11)),
            },
            binding(
                agent={"url": "http://127.0.0.1:8083/", "dialect": "kagent-v1"},
                interactions={
                    "toolApprovals": True,
                    "tools": [{"match": "db_*", "approverGroups": [f"S{i:02d}" for i in range(11)]}],
                },
            ),
            "tool_rules",
            id="a tool rule with more than 10 groups",
        ),
        pytest.param(
            {"tool_approvals": "on"},
            binding(interactions={"toolApprovals": True}),
            "tool_approvals",
            id="toolApprovals on a2a",
        ),
        pytest.param(
            {"triggers": "prometheus alertmanager OPS_TOKEN\nprometheus generic OPS_TOKEN"},
            binding(
                triggers=[
                    {"name": "prometheus", "kind": "alertmanager", "token": {"fromEnv": "OPS_TOKEN"}},
                    {"name": "prometheus", "kind": "generic", "token": {"fromEnv": "OPS_TOKEN"}},
                ]
            ),
            "triggers",
            id="duplicate trigger",
        ),
        pytest.param(
            {"triggers": "prometheus nagios OPS_TOKEN"},
            binding(triggers=[{"name": "prometheus", "kind": "nagios", "token": {"fromEnv": "OPS_TOKEN"}}]),
            "triggers",
            id="unknown trigger kind",
        ),
        pytest.param(
            {"connection": "globex"},
            binding(connection="globex"),
            "connection",
            id="unknown connection",
        ),
        pytest.param(
            {"channels": "C0123456789, general"},
            binding(channels=["C0123456789", "general"]),
            "channels",
            id="bad channel",
        ),
        pytest.param(
            {"output": "stream"},
            binding(output="stream"),
            "output",
            id="value outside the choices",
        ),
        pytest.param(
            {"agent_url": ""},
            binding(agent={"dialect": "a2a", "protocolVersion": "auto"}),
            "agent_url",
            id="missing agent url",
        ),
    ],
)
def test_the_binding_form_refuses_with_the_loaders_words_on_the_right_field(
    admin_client, acme, fields, document, field
):
    response = admin_client.post(reverse("admin:bindings_binding_add"), binding_form(**fields))

    assert response.status_code == 200
    form = response.context["adminform"].form
    expected = errors_of(document)
    assert expected
    assert form.errors[field] == expected
    assert form_errors(response) == expected
    assert not Binding.objects.exists()


def test_the_binding_form_refuses_a_channel_bound_to_another_binding(admin_client, acme):
    BindingFactory(name="other", connection=acme, channels=["C0123456789"])

    response = admin_client.post(reverse("admin:bindings_binding_add"), binding_form())

    assert response.context["adminform"].form.errors["channels"] == [
        'Binding "ops": spec.channels[0]: channel C0123456789 is already bound to Binding "other" '
        'on Connection "acme"'
    ]


def test_a_binding_keeps_its_own_channels_when_edited(admin_client, acme):
    existing = BindingFactory(name="ops", connection=acme, channels=["C0123456789"])

    response = admin_client.post(
        reverse("admin:bindings_binding_change", args=[existing.pk]),
        binding_form(channels="C0123456789, C0000000001", output="final"),
    )

    assert response.status_code == 302
    existing.refresh_from_db()
    assert existing.output == "final"
    assert existing.channel_ids() == ["C0000000001", "C0123456789"]


def test_a_renamed_binding_keeps_its_channels(admin_client, acme):
    existing = BindingFactory(name="ops", connection=acme, channels=["C0123456789"])

    response = admin_client.post(
        reverse("admin:bindings_binding_change", args=[existing.pk]), binding_form(name="ops-renamed")
    )

    assert response.status_code == 302
    assert Binding.objects.get(pk=existing.pk).name == "ops-renamed"


def test_a_binding_name_already_taken_is_refused(admin_client, acme):
    BindingFactory(name="ops", connection=acme, channels=["C0000000001"])

    response = admin_client.post(reverse("admin:bindings_binding_add"), binding_form())

    assert response.context["adminform"].form.errors["name"] == ["Binding with this Name already exists."]


def test_a_header_line_without_a_colon_is_refused(admin_client, acme):
    response = admin_client.post(
        reverse("admin:bindings_binding_add"), binding_form(agent_headers="Authorization")
    )

    assert response.context["adminform"].form.errors["agent_headers"] == [
        "line 1: write each header as Header-Name: ENV_VAR_NAME"
    ]


def test_the_change_page_shows_the_binding_as_it_is(admin_client, acme):
    existing = BindingFactory(
        name="ops",
        connection=acme,
        channels=["C0123456789"],
        dialect="kagent-v1",
        tool_approvals=True,
        approver_groups=["S0000000001", "S0000000002"],
        agent_headers={"Authorization": "OPS_AGENT_TOKEN"},
    )

    response = admin_client.get(reverse("admin:bindings_binding_change", args=[existing.pk]))

    initial = response.context["adminform"].form.initial
    assert initial["channels"] == "C0123456789"
    assert initial["approver_groups"] == "S0000000001, S0000000002"
    assert initial["agent_headers"] == "Authorization: OPS_AGENT_TOKEN"
    assert initial["interaction_timeout"] == "30m"
    assert initial["thread_ttl"] == "90d"
    assert initial["connection"] == "acme"


# --- The warning -------------------------------------------------------------------------------------


def test_tool_approvals_without_groups_is_saved_with_the_loaders_warning(admin_client, acme):
    response = admin_client.post(
        reverse("admin:bindings_binding_add"),
        binding_form(dialect="kagent-v1", tool_approvals="on"),
        follow=True,
    )

    loaders = manifest.validate(
        documents(
            binding(agent={"url": "http://a/", "dialect": "kagent-v1"}, interactions={"toolApprovals": True})
        ),
        connections=["acme"],
    ).warnings
    assert Binding.objects.get(name="ops").tool_approvals
    assert [str(w) for w in loaders] == [WARNING]
    assert WARNING in messages_of(response)


def test_the_change_page_of_such_a_binding_shows_the_warning_once(admin_client, acme):
    response = admin_client.post(
        reverse("admin:bindings_binding_add"),
        binding_form(dialect="kagent-v1", tool_approvals="on", _continue="1"),
        follow=True,
    )

    assert messages_of(response).count(WARNING) == 1
    assert response.content.decode().count("any non-bot member of the channel may decide approvals") == 1

    again = admin_client.get(
        reverse("admin:bindings_binding_change", args=[Binding.objects.get(name="ops").pk])
    )
    assert messages_of(again).count(WARNING) == 1


def test_a_binding_with_approver_groups_has_no_warning(admin_client, acme):
    existing = BindingFactory(
        connection=acme, dialect="kagent-v1", tool_approvals=True, approver_groups=["S01"]
    )

    response = admin_client.get(reverse("admin:bindings_binding_change", args=[existing.pk]))

    assert messages_of(response) == []


def test_saving_a_binding_warns_of_an_unset_header_variable_and_an_agent_card_it_cannot_fetch(
    admin_client, acme, monkeypatch
):
    monkeypatch.delenv("OPS_AGENT_TOKEN", raising=False)

    response = admin_client.post(
        reverse("admin:bindings_binding_add"),
        binding_form(agent_headers="Authorization: OPS_AGENT_TOKEN"),
        follow=True,
    )

    assert Binding.objects.filter(name="ops").exists()
    assert messages_of(response)[:2] == [
        'Binding "ops": spec.agent.headers.Authorization.fromEnv: OPS_AGENT_TOKEN is not set in this process',
        'Binding "ops": spec.agent.url: the agent card cannot be fetched (GET agent card: cannot connect '
        "(ConnectError)); turns fail until it can",
    ]


def test_a_connections_page_warns_of_each_variable_unset_in_this_process(admin_client, acme, monkeypatch):
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-set")
    monkeypatch.delenv("SLACK_SIGNING_SECRET", raising=False)

    response = admin_client.get(reverse("admin:bindings_connection_change", args=[acme.pk]))

    assert messages_of(response) == [
        'Connection "acme": spec.signingSecret.fromEnv: SLACK_SIGNING_SECRET is not set in this process'
    ]


# --- Test token ----------------------------------------------------------------------------------------


@pytest.fixture
def slack_connection(acme, slack_fake, settings, monkeypatch):
    settings.SLACK_API_URL = slack_fake.url
    monkeypatch.setenv("SLACK_BOT_TOKEN", slack_fake.bot_token)
    monkeypatch.setenv("SLACK_SIGNING_SECRET", defaults.SIGNING_SECRET)
    return acme


def test_testing_a_token_shows_its_workspace_keeps_it_and_audits_the_test_not_the_token(
    admin_client, slack_connection, slack_fake
):
    page = admin_client.get(reverse("admin:bindings_connection_change", args=[slack_connection.pk]))
    test_token = reverse("admin:bindings_connection_test_token", args=[slack_connection.pk])

    response = admin_client.post(test_token, follow=True)

    assert f'action="{test_token}"' in page.content.decode()
    assert messages_of(response) == ["The bot token works: workspace Kourier Test (T0001), bot user U0BOT."]
    assert slack_fake.bot_token not in response.content.decode()
    slack_connection.refresh_from_db()
    assert (slack_connection.team_id, slack_connection.bot_user_id) == ("T0001", "U0BOT")
    event = AuditEvent.objects.get(action="connection.token_tested")
    assert (event.actor_id, event.subject, event.details) == (
        "admin:admin",
        'Connection "acme"',
        {"ok": True, "team_id": "T0001", "error": ""},
    )


@pytest.mark.parametrize("error", ["invalid_auth", "token_revoked"])
def test_a_token_slack_refuses_is_said_with_slacks_error(admin_client, slack_connection, slack_fake, error):
    slack_fake.fail("auth.test", error)

    response = admin_client.post(
        reverse("admin:bindings_connection_test_token", args=[slack_connection.pk]), follow=True
    )

    assert messages_of(response) == [f"The bot token does not work: Slack answered {error}."]
    assert AuditEvent.objects.get(action="connection.token_tested").details["ok"] is False


def test_a_token_whose_variable_is_not_set_is_said_without_calling_slack(admin_client, acme, monkeypatch):
    monkeypatch.delenv("SLACK_BOT_TOKEN", raising=False)

    response = admin_client.post(reverse("admin:bindings_connection_test_token", args=[acme.pk]), follow=True)

    assert "The bot token does not work: SLACK_BOT_TOKEN is not set in this process." in messages_of(response)


def test_testing_a_token_is_a_post_by_someone_who_may_change_the_connection(client, admin_client, acme):
    test_token = reverse("admin:bindings_connection_test_token", args=[acme.pk])
    client.force_login(StaffUserFactory(permissions=["bindings.view_connection"]))

    assert admin_client.get(test_token).status_code == 405
    assert client.post(test_token).status_code == 403
    assert not AuditEvent.objects.filter(action="connection.token_tested").exists()


# --- Secrets -----------------------------------------------------------------------------------------


def test_no_page_renders_a_header_secret(admin_client, acme, monkeypatch):
    monkeypatch.setenv("OPS_AGENT_TOKEN", "Bearer very-secret-agent-token")
    existing = BindingFactory(name="ops", connection=acme, agent_headers={"Authorization": "OPS_AGENT_TOKEN"})

    pages = [
        admin_client.get(reverse("admin:bindings_binding_change", args=[existing.pk])),
        admin_client.get(reverse("admin:bindings_binding_changelist")),
        admin_client.get(reverse("admin:bindings_binding_add")),
    ]

    for page in pages:
        assert page.status_code == 200
        assert "very-secret-agent-token" not in page.content.decode()
    assert "Authorization: <code>OPS_AGENT_TOKEN</code> (set)" in pages[0].content.decode()


AGENT_WITH_PASSWORD = "https://kourier:s3cret-pass@agents.example/ops/"
CONTROLLER_WITH_TOKEN = "https://ghp-token-123@kagent.example/"


@pytest.mark.parametrize("superuser", [True, False], ids=["superuser", "staff"])
def test_no_page_shows_the_credentials_of_an_agents_url_or_a_kagent_controller(client, acme, superuser):
    with_url = BindingFactory(name="ops", connection=acme, agent_url=AGENT_WITH_PASSWORD)
    with_controller = BindingFactory(
        name="k8s",
        connection=acme,
        agent_url="https://kagent.example/api/a2a/ops/k8s/",
        kagent_controller=CONTROLLER_WITH_TOKEN,
        kagent_namespace="ops",
        kagent_name="k8s",
    )
    user = StaffUserFactory(permissions=["bindings.view_binding", "bindings.change_binding"])
    user.is_superuser = superuser
    user.save()
    client.force_login(user)

    pages = [
        client.get(reverse("admin:bindings_binding_changelist")),
        client.get(reverse("admin:bindings_binding_change", args=[with_url.pk])),
        client.get(reverse("admin:bindings_binding_change", args=[with_controller.pk])),
    ]

    for page in pages:
        assert page.status_code == 200
        assert "s3cret-pass" not in page.content.decode()
        assert "ghp-token-123" not in page.content.decode()
    assert "https://***@agents.example/ops/" in pages[1].content.decode()
    assert "https://***@kagent.example/" in pages[2].content.decode()


@pytest.mark.parametrize(
    "lookup", ["agent_url__contains=s3cret", "agent_url__startswith=https://kourier:s", "kagent_controller=x"]
)
def test_no_filter_answers_about_a_urls_credentials(admin_client, acme, lookup):
    BindingFactory(name="ops", connection=acme, agent_url=AGENT_WITH_PASSWORD)

    response = admin_client.get(reverse("admin:bindings_binding_changelist") + "?" + lookup)

    assert response.status_code == 400


def test_no_search_finds_a_binding_by_its_urls_credentials(admin_client, acme):
    BindingFactory(name="ops", connection=acme, agent_url=AGENT_WITH_PASSWORD)

    response = admin_client.get(reverse("admin:bindings_binding_changelist") + "?q=s3cret")

    assert response.context["cl"].result_count == 0


def test_a_url_sent_back_as_the_form_shows_it_is_the_stored_one_never_its_mask(admin_client, acme):
    existing = BindingFactory(
        name="ops", connection=acme, channels=["C0123456789"], agent_url=AGENT_WITH_PASSWORD
    )
    change = reverse("admin:bindings_binding_change", args=[existing.pk])

    unchanged = admin_client.post(change, binding_form(agent_url="https://***@agents.example/ops/"))
    elsewhere = admin_client.post(change, binding_form(agent_url="https://***@elsewhere.example/"))

    # Saved with the stored credentials, or refused as a URL with credentials: never saved as shown.
    existing.refresh_from_db()
    assert existing.agent_url == AGENT_WITH_PASSWORD
    assert unchanged.status_code in (200, 302)
    assert forms.CREDENTIALS_NOT_SHOWN in form_errors(elsewhere)
    for page in (unchanged, elsewhere):
        assert "s3cret-pass" not in page.content.decode()
    assert not AuditEvent.objects.filter(action="binding.agent_changed").exists()


def test_the_audit_of_an_agent_moved_from_a_url_with_credentials_shows_none(admin_client, acme):
    existing = BindingFactory(
        name="ops", connection=acme, channels=["C0123456789"], agent_url=AGENT_WITH_PASSWORD
    )

    moved = admin_client.post(
        reverse("admin:bindings_binding_change", args=[existing.pk]),
        binding_form(agent_url="https://elsewhere.example/"),
    )

    assert moved.status_code == 302
    [event] = AuditEvent.objects.filter(action="binding.agent_changed")
    assert (event.details["url"], event.details["previous_url"]) == (
        "https://elsewhere.example/",
        "https://***@agents.example/ops/",
    )


# --- A Binding's live page ---------------------------------------------------------------------------


def live_url(binding: Binding) -> str:
    return reverse("admin:bindings_binding_live", args=[binding.pk])


def test_a_bindings_page_links_to_its_live_state(admin_client):
    existing = BindingFactory(name="ops")

    page = admin_client.get(reverse("admin:bindings_binding_change", args=[existing.pk]))

    assert f'href="{live_url(existing)}"' in page.content.decode()


def test_the_live_page_shows_sessions_turns_pending_interactions_and_the_last_failure(admin_client):
    existing = BindingFactory(name="ops")
    session = SessionFactory(binding=existing)
    TurnFactory(session=session, state=Turn.State.RUNNING)
    TurnFactory(
        session=session,
        state=Turn.State.FAILED,
        outcome=Turn.Outcome.UNREACHABLE,
        ended_at=timezone.now() - timedelta(minutes=4),
    )
    pending = InteractionFactory(turn__session__binding=existing, channel_id="C0PENDING")

    response = admin_client.get(live_url(existing))

    assert response.status_code == 200
    state = response.context["state"]
    assert (state.sessions_open, state.turns_queued, state.turns_running, state.pending_count) == (2, 0, 1, 1)
    content = response.content.decode()
    assert "ops: live state" in content
    assert "C0PENDING" in content
    assert date_format(timezone.localtime(pending.deadline), "DATETIME_FORMAT") in content
    assert "unreachable" in content
    assert "4\xa0minutes ago" in content


def test_the_live_page_shows_slack_and_alert_failures_a_chart_of_the_hour_and_reloads_until_paused(
    admin_client,
):
    existing = BindingFactory(name="ops")
    now = timezone.now()
    failures.remember(connection_workspace(existing.connection_id), "chat.postMessage", "not_in_channel")
    alert = AlertFactory(binding=existing)
    Alert.objects.filter(pk=alert.pk).update(
        delivery_failed=True, last_delivery_error="channel_not_found", last_delivery_failed_at=now
    )
    TurnFactory(session__binding=existing, state=Turn.State.DONE, outcome="completed", ended_at=now)

    page = admin_client.get(live_url(existing)).content.decode()
    paused = admin_client.get(live_url(existing) + "?refresh=off").content.decode()

    assert "not_in_channel (chat.postMessage)" in page
    assert f'<a href="/admin/alerts/alert/{alert.pk}/change/">channel_not_found</a>' in page
    assert "(given up)" in page
    assert f"{timezone.localtime(now):%H:%M} completed: 1</title></rect>" in page
    assert '<meta http-equiv="refresh" content="30">' in page
    assert 'http-equiv="refresh"' not in paused
    assert '<a href="?">Resume</a>' in paused


def test_the_live_page_of_a_binding_that_is_gone_is_not_found(admin_client):
    assert admin_client.get(reverse("admin:bindings_binding_live", args=[999])).status_code == 404


def test_the_live_page_is_for_those_who_may_view_the_binding(client):
    existing = BindingFactory(name="ops")
    client.force_login(StaffUserFactory(permissions=["threads.view_turn"]))

    assert client.get(live_url(existing)).status_code == 403


# --- Only a superuser points a Binding's agent somewhere else ----------------------------------------


STAFF_EDITOR = ["bindings.view_binding", "bindings.change_binding", "bindings.add_binding"]


@pytest.mark.parametrize(
    "change",
    [
        {"agent_url": "https://attacker.example/"},
        {"agent_headers": "Authorization: OPS_AGENT_TOKEN"},
        {"dialect": "kagent-v1"},
    ],
)
def test_staff_who_may_change_a_binding_cannot_change_its_agents_address_dialect_or_headers(
    client, acme, change
):
    existing = BindingFactory(
        name="ops", connection=acme, channels=["C0123456789"], agent_url="http://127.0.0.1:8083/"
    )
    client.force_login(StaffUserFactory(permissions=STAFF_EDITOR))

    response = client.post(
        reverse("admin:bindings_binding_change", args=[existing.pk]), binding_form(output="final", **change)
    )

    assert response.status_code == 302
    existing.refresh_from_db()
    assert existing.output == "final"  # the rest of the form was saved
    assert (existing.agent_url, existing.agent_headers, existing.dialect) == (
        "http://127.0.0.1:8083/",
        {},
        "a2a",
    )
    assert not AuditEvent.objects.filter(action="binding.agent_changed").exists()


@pytest.fixture
def other_controller():
    controller = KagentController()
    yield controller
    controller.stop()


@pytest.mark.parametrize(
    "change",
    [{"kagent_controller": "other"}, {"kagent_namespace": "evil"}, {"kagent_name": "stolen"}],
    ids=["controller", "namespace", "name"],
)
def test_staff_cannot_repoint_a_kagent_agent_and_no_card_is_fetched_with_its_headers_elsewhere(
    client, acme, kagent_controller, other_controller, a2a_agent, monkeypatch, change
):
    monkeypatch.setenv("OPS_AGENT_TOKEN", "Bearer the-service-identity")
    address = kagent_controller.add("1.0", "ops", "k8s-agent", a2a_agent.url)
    # What staff would point it at serves a valid card: every turn would move there.
    for namespace, name in (("ops", "k8s-agent"), ("evil", "k8s-agent"), ("ops", "stolen")):
        other_controller.add("1.0", namespace, name, a2a_agent.url)
    kagent_controller.add("1.0", "evil", "k8s-agent", a2a_agent.url)
    kagent_controller.add("1.0", "ops", "stolen", a2a_agent.url)
    existing = BindingFactory(
        name="ops",
        connection=acme,
        channels=["C0123456789"],
        agent_url=address,
        dialect="kagent-v1",
        protocol_version="1.0",
        kagent_controller=kagent_controller.url,
        kagent_namespace="ops",
        kagent_name="k8s-agent",
        agent_headers={"Authorization": "OPS_AGENT_TOKEN"},
    )
    kagent = {
        "agent_url": "",
        "dialect": "kagent-v1",
        "kagent_controller": kagent_controller.url,
        "kagent_namespace": "ops",
        "kagent_name": "k8s-agent",
        "agent_headers": "Authorization: OPS_AGENT_TOKEN",
    }
    posted = {**kagent, **change}
    if posted["kagent_controller"] == "other":
        posted["kagent_controller"] = other_controller.url
    client.force_login(StaffUserFactory(permissions=STAFF_EDITOR))
    looked_up = len(kagent_controller.requests)

    response = client.post(
        reverse("admin:bindings_binding_change", args=[existing.pk]), binding_form(output="final", **posted)
    )

    assert response.status_code == 302
    existing.refresh_from_db()
    assert existing.output == "final"
    assert (
        existing.kagent_controller,
        existing.kagent_namespace,
        existing.kagent_name,
        existing.agent_url,
    ) == (
        kagent_controller.url,
        "ops",
        "k8s-agent",
        address,
    )
    assert other_controller.requests == []
    asked = [path for _, path, _ in kagent_controller.requests[looked_up:]]
    assert asked == ["/agents/ops/k8s-agent/.well-known/agent-card.json"]  # its own agent, found again


def test_only_a_superuser_adds_a_binding(client, admin_client, acme):
    client.force_login(StaffUserFactory(permissions=STAFF_EDITOR))

    assert client.get(reverse("admin:bindings_binding_add")).status_code == 403
    assert client.post(reverse("admin:bindings_binding_add"), binding_form()).status_code == 403
    assert admin_client.get(reverse("admin:bindings_binding_add")).status_code == 200
    assert not Binding.objects.exists()


def test_an_agent_url_with_credentials_is_refused_in_the_admin_and_nothing_changes(admin_client, acme):
    existing = BindingFactory(
        name="ops", connection=acme, channels=["C0123456789"], agent_url="http://127.0.0.1:8083/"
    )

    response = admin_client.post(
        reverse("admin:bindings_binding_change", args=[existing.pk]),
        binding_form(agent_url="https://agent:s3cr3t@agents.example/", output="final"),
    )

    assert response.status_code == 200
    [error] = form_errors(response)
    assert error.startswith('Binding "ops": spec.agent.url: must be an address without credentials')
    assert "s3cr3t" not in error
    existing.refresh_from_db()
    assert (existing.agent_url, existing.output) == ("http://127.0.0.1:8083/", "live")


def test_a_superuser_changes_the_agents_address_and_the_audit_says_who(admin_client, admin_user, acme):
    existing = BindingFactory(
        name="ops", connection=acme, channels=["C0123456789"], agent_url="http://127.0.0.1:8083/"
    )

    response = admin_client.post(
        reverse("admin:bindings_binding_change", args=[existing.pk]),
        binding_form(agent_url="https://agents.example/", agent_headers="Authorization: OPS_AGENT_TOKEN"),
    )

    assert response.status_code == 302
    existing.refresh_from_db()
    assert (existing.agent_url, existing.agent_headers) == (
        "https://agents.example/",
        {"Authorization": "OPS_AGENT_TOKEN"},
    )
    [event] = AuditEvent.objects.filter(action="binding.agent_changed")
    assert (event.actor_kind, event.actor_id) == ("django-user", f"admin:{admin_user.get_username()}")
    assert (event.details["url"], event.details["previous_url"]) == (
        "https://agents.example/",
        "http://127.0.0.1:8083/",
    )


def test_an_approval_rule_changed_in_the_admin_is_audited_with_who_and_old_and_new(
    admin_client, admin_user, acme
):
    from audit.models import AuditEvent

    existing = BindingFactory(
        name="ops", connection=acme, channels=["C0123456789"], interaction_timeout=timedelta(minutes=30)
    )

    response = admin_client.post(
        reverse("admin:bindings_binding_change", args=[existing.pk]), binding_form(interaction_timeout="2h")
    )

    assert response.status_code == 302
    [event] = AuditEvent.objects.filter(action="binding.approval_rule_changed")
    assert event.actor_id == f"admin:{admin_user.get_username()}"
    assert event.details == {"field": "spec.interactions.timeout", "old": "30m", "new": "2h"}


def test_the_admin_form_refuses_a_header_variable_the_operator_did_not_list(admin_client, acme):
    response = admin_client.post(
        reverse("admin:bindings_binding_add"), binding_form(agent_headers="Authorization: SECRET_KEY")
    )

    assert response.status_code == 200
    assert "SECRET_KEY is one of the service&#x27;s own secrets" in response.content.decode() or any(
        "SECRET_KEY is one of the service's own secrets" in error for error in form_errors(response)
    )
    assert not Binding.objects.exists()


def test_the_triggers_help_text_shows_the_path_a_trigger_is_served_at(admin_client):
    response = admin_client.get(reverse("admin:bindings_binding_add"))
    assert "POST /triggers/&lt;binding&gt;/&lt;name&gt; with the token" in response.content.decode()


def test_a_binding_taking_direct_messages_keeps_them_when_edited(admin_client, acme):
    existing = BindingFactory(
        name="ops", connection=acme, channels=[], direct_messages={"allowed_users": ["U0ADA"]}
    )

    response = admin_client.post(
        reverse("admin:bindings_binding_change", args=[existing.pk]),
        binding_form(channels="", output="final"),
    )

    assert response.status_code == 302
    existing.refresh_from_db()
    assert existing.output == "final"
    assert existing.direct_messages_spec().allowed_users == ("U0ADA",)
    assert existing.channel_ids() == []


def test_a_reminder_before_the_deadline_is_saved_by_the_admin_and_shown_again(admin_client, acme):
    from datetime import timedelta

    from bindings.models import Binding

    admin_client.post(
        reverse("admin:bindings_binding_add"),
        binding_form(dialect="kagent-v1", tool_approvals="on", approver_groups="S01", remind_before="10m"),
    )
    saved = Binding.objects.get(name="ops")
    page = admin_client.get(reverse("admin:bindings_binding_change", args=[saved.pk]))

    assert saved.remind_before == timedelta(minutes=10)
    assert 'name="remind_before" value="10m"' in page.content.decode()
