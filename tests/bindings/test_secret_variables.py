"""A Connection's tokens and signing secret and a trigger's token read only a variable fit to hold a
secret: named as one (``_TOKEN``, ``_SECRET``), not the service's own, not an agent header's, not
another kind of secret's. Refused by apply and the admin with the field and why, nothing written; a row
written around them is read as not set."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from bindings import secret_variables, services
from bindings.models import Binding, Connection, RefusedSecret
from bindings.secret_variables import (
    A_CONNECTIONS_SECRET,
    A_SERVICE_SECRET,
    A_TRIGGERS_TOKEN,
    AN_AGENT_HEADERS,
    NOT_NAMED_AS_A_SECRET,
)
from tests.factories import BindingFactory, ConnectionFactory

from .manifests import CONNECTION, MINIMAL_BINDING, as_yaml, binding, varied

pytestmark = pytest.mark.django_db

UNFIT = [
    ("PATH", NOT_NAMED_AS_A_SECRET),
    ("HOME", NOT_NAMED_AS_A_SECRET),
    ("HOSTNAME", NOT_NAMED_AS_A_SECRET),
    ("DATABASE_URL", A_SERVICE_SECRET),
    ("SECRET_KEY", A_SERVICE_SECRET),
    ("METRICS_TOKEN", A_SERVICE_SECRET),  # named as a secret, but Prometheus holds it
    ("AUDIT_KEY", A_SERVICE_SECRET),
    ("OIDC_CLIENT_SECRET", A_SERVICE_SECRET),  # named as a secret, but the admin's single sign-on reads it
    ("KUBERNETES_SERVICE_HOST", NOT_NAMED_AS_A_SECRET),
    ("OPS_AGENT_TOKEN", AN_AGENT_HEADERS),  # tests/bindings/conftest.py lists it for agent headers
    ("TRIAGE_SLACK_TOKEN", AN_AGENT_HEADERS),  # and the prefix TRIAGE_*
]
FIT = ["SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_APP_TOKEN", "OPS_TRIGGER_TOKEN", "ACME_SECRET"]


@pytest.mark.parametrize(("variable", "why"), UNFIT)
def test_an_unfit_variable_says_why(variable, why):
    assert secret_variables.why_unfit(variable) == why


@pytest.mark.parametrize("variable", FIT)
def test_a_variable_named_as_a_secret_is_fit(variable):
    assert secret_variables.why_unfit(variable) is None


@pytest.mark.parametrize(("variable", "why"), UNFIT)
@pytest.mark.parametrize("field", ["botToken", "signingSecret", "appToken"])
def test_apply_refuses_a_connection_secret_read_from_an_unfit_variable_and_writes_nothing(
    field, variable, why
):
    document = varied(CONNECTION, f"spec.{field}", {"fromEnv": variable})

    result = services.apply_manifests(as_yaml(document))

    assert [str(error) for error in result.errors] == [
        f'Connection "acme": spec.{field}.fromEnv: {variable} {why}'
    ]
    assert not Connection.objects.exists()


@pytest.mark.parametrize(("variable", "why"), UNFIT)
def test_apply_refuses_a_trigger_token_read_from_an_unfit_variable_and_writes_nothing(variable, why):
    ConnectionFactory(name="acme")
    document = binding(triggers=[{"name": "hooks", "kind": "generic", "token": {"fromEnv": variable}}])

    result = services.apply_manifests(as_yaml(document))

    assert [str(error) for error in result.errors] == [
        f'Binding "ops": spec.triggers[0].token.fromEnv: {variable} {why}'
    ]
    assert not Binding.objects.exists()


def hooks(token: str) -> dict[str, Any]:
    return binding(triggers=[{"name": "hooks", "kind": "generic", "token": {"fromEnv": token}}])


def test_a_signing_secret_may_not_be_a_triggers_token_whose_alert_source_knows_it():
    ConnectionFactory(name="other")
    assert services.apply_manifests(as_yaml(CONNECTION, hooks("OPS_TRIGGER_TOKEN"))).ok
    document = {**varied(CONNECTION, "spec.signingSecret", {"fromEnv": "OPS_TRIGGER_TOKEN"})}
    document["metadata"] = {"name": "other"}

    result = services.apply_manifests(as_yaml(document))

    assert [str(error) for error in result.errors] == [
        f'Connection "other": spec.signingSecret.fromEnv: OPS_TRIGGER_TOKEN {A_TRIGGERS_TOKEN}'
    ]


def test_a_trigger_token_may_not_be_a_connections_secret_in_the_same_input_or_the_database():
    ConnectionFactory(name="other", signing_secret_env="OTHER_SIGNING_SECRET")

    in_the_input = services.apply_manifests(as_yaml(CONNECTION, hooks("SLACK_SIGNING_SECRET")))
    in_the_database = services.apply_manifests(as_yaml(CONNECTION, hooks("OTHER_SIGNING_SECRET")))

    assert [str(error) for error in in_the_input.errors] == [
        f'Connection "acme": spec.signingSecret.fromEnv: SLACK_SIGNING_SECRET {A_TRIGGERS_TOKEN}',
        f'Binding "ops": spec.triggers[0].token.fromEnv: SLACK_SIGNING_SECRET {A_CONNECTIONS_SECRET}',
    ]
    assert [str(error) for error in in_the_database.errors] == [
        f'Binding "ops": spec.triggers[0].token.fromEnv: OTHER_SIGNING_SECRET {A_CONNECTIONS_SECRET}'
    ]


def test_a_binding_reapplied_keeps_its_own_trigger_token():
    assert services.apply_manifests(as_yaml(CONNECTION, hooks("OPS_TRIGGER_TOKEN"))).ok
    assert services.apply_manifests(
        as_yaml(CONNECTION, varied(hooks("OPS_TRIGGER_TOKEN"), "spec.output", "final"))
    ).ok


def test_the_admin_refuses_a_signing_secret_read_from_a_public_variable_on_its_field(admin_client):
    acme = ConnectionFactory(name="acme", signing_secret_env="SLACK_SIGNING_SECRET")

    response = admin_client.post(
        reverse("admin:bindings_connection_change", args=[acme.pk]),
        {
            "name": "acme",
            "bot_token_env": "SLACK_BOT_TOKEN",
            "signing_secret_env": "PATH",
            "app_token_env": "",
        },
    )

    assert response.status_code == 200
    assert response.context["adminform"].form.errors["signing_secret_env"] == [
        f'Connection "acme": spec.signingSecret.fromEnv: PATH {NOT_NAMED_AS_A_SECRET}'
    ]
    acme.refresh_from_db()
    assert acme.signing_secret_env == "SLACK_SIGNING_SECRET"


def test_the_admin_refuses_a_trigger_token_read_from_a_public_variable_on_its_field(admin_client):
    acme = ConnectionFactory(name="acme")
    existing = BindingFactory(name="ops", connection=acme, channels=["C0123456789"])
    form = {
        "name": "ops",
        "connection": "acme",
        "channels": "C0123456789",
        "agent_url": existing.agent_url,
        "dialect": "a2a",
        "protocol_version": "auto",
        "output": "live",
        "thread_replies": "all",
        "progress": "steps-and-activity",
        "interaction_timeout": "30m",
        "thread_ttl": "90d",
        "triggers": "hooks generic HOME",
    }

    response = admin_client.post(reverse("admin:bindings_binding_change", args=[existing.pk]), form)

    assert response.status_code == 200
    assert response.context["adminform"].form.errors["triggers"] == [
        f'Binding "ops": spec.triggers[0].token.fromEnv: HOME {NOT_NAMED_AS_A_SECRET}'
    ]
    existing.refresh_from_db()
    assert existing.triggers == []


@pytest.mark.parametrize(
    ("read", "path"),
    [
        (lambda connection, binding: connection.bot_token(), "spec.botToken"),
        (lambda connection, binding: connection.signing_secret(), "spec.signingSecret"),
        (lambda connection, binding: connection.app_token(), "spec.appToken"),
        (
            lambda connection, binding: binding.trigger_token(binding.trigger("hooks")),
            "spec.triggers[0].token",
        ),
    ],
)
def test_a_row_written_around_apply_is_checked_again_at_every_read(read, path, monkeypatch):
    monkeypatch.setenv("HOME", "/home/someone")
    connection = ConnectionFactory(bot_token_env="HOME", signing_secret_env="HOME", app_token_env="HOME")
    binding_row = BindingFactory(
        connection=connection, triggers=[{"name": "hooks", "kind": "generic", "token_env": "HOME"}]
    )

    with pytest.raises(RefusedSecret) as refused:
        read(connection, binding_row)

    assert str(refused.value).endswith(f"{path}: environment variable HOME {NOT_NAMED_AS_A_SECRET}")
    assert "/home/someone" not in str(refused.value)


def test_the_readmes_and_the_simulators_variables_are_fit():
    ConnectionFactory(name="unrelated")
    document = varied(MINIMAL_BINDING, "spec.triggers", [
        {"name": "prometheus", "kind": "alertmanager", "token": {"fromEnv": "OPS_TRIGGER_TOKEN"}},
        {"name": "hooks", "kind": "generic", "token": {"fromEnv": "HOOKS_TRIGGER_TOKEN"}},
    ])  # fmt: skip
    simulator = {**varied(varied(CONNECTION, "spec.botToken", {"fromEnv": "SIMULATOR_BOT_TOKEN"}),
                          "spec.signingSecret", {"fromEnv": "SIMULATOR_SIGNING_SECRET"})}  # fmt: skip
    simulator["metadata"] = {"name": "simulator"}

    assert services.apply_manifests(as_yaml(CONNECTION, simulator, document)).ok
