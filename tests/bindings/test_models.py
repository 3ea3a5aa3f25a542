"""Connections and Bindings as the rest of the product reads them: secrets from the environment, lookups."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from bindings.models import Binding, BindingChannel, MissingSecret
from tests.factories import BindingChannelFactory, BindingFactory, ConnectionFactory

pytestmark = pytest.mark.django_db


def test_a_connection_reads_its_secrets_from_the_environment(monkeypatch):
    monkeypatch.setenv("ACME_BOT_TOKEN", "xoxb-1")
    monkeypatch.setenv("ACME_SIGNING_SECRET", "shh")
    monkeypatch.setenv("ACME_APP_TOKEN", "xapp-1")
    connection = ConnectionFactory(
        name="acme",
        bot_token_env="ACME_BOT_TOKEN",
        signing_secret_env="ACME_SIGNING_SECRET",
        app_token_env="ACME_APP_TOKEN",
    )

    assert connection.bot_token() == "xoxb-1"
    assert connection.signing_secret() == "shh"
    assert connection.app_token() == "xapp-1"
    assert connection.socket_mode


def test_a_connection_without_an_app_token_has_none_and_uses_http():
    connection = ConnectionFactory(app_token_env="")

    assert connection.app_token() is None
    assert not connection.socket_mode


@pytest.mark.parametrize("value", [None, ""])
def test_a_missing_secret_names_the_variable_and_the_connection(monkeypatch, value):
    if value is None:
        monkeypatch.delenv("ACME_BOT_TOKEN", raising=False)
    else:
        monkeypatch.setenv("ACME_BOT_TOKEN", value)
    connection = ConnectionFactory(name="acme", bot_token_env="ACME_BOT_TOKEN")

    with pytest.raises(MissingSecret) as raised:
        connection.bot_token()

    assert str(raised.value) == (
        'Connection "acme": spec.botToken: environment variable ACME_BOT_TOKEN is not set or is empty'
    )
    assert raised.value.variable == "ACME_BOT_TOKEN"


def test_a_binding_resolves_its_agent_headers_from_the_environment(monkeypatch):
    monkeypatch.setenv("OPS_AGENT_TOKEN", "Bearer abc")
    binding = BindingFactory(agent_headers={"Authorization": "OPS_AGENT_TOKEN"})

    assert binding.agent_headers_resolved() == {"Authorization": "Bearer abc"}


def test_a_missing_header_secret_names_the_variable_and_the_binding(monkeypatch):
    monkeypatch.delenv("OPS_AGENT_TOKEN", raising=False)
    binding = BindingFactory(name="ops", agent_headers={"Authorization": "OPS_AGENT_TOKEN"})

    with pytest.raises(
        MissingSecret,
        match=r'^Binding "ops": spec.agent.headers.Authorization: environment variable '
        r"OPS_AGENT_TOKEN is not set or is empty$",
    ):
        binding.agent_headers_resolved()


def test_a_new_binding_has_the_specs_defaults():
    binding = Binding.objects.get(pk=BindingFactory().pk)

    assert (binding.dialect, binding.protocol_version, binding.output) == ("a2a", "auto", "live")
    assert (binding.thread_replies, binding.progress) == ("all", "steps-and-activity")
    assert (binding.acknowledgment_enabled, binding.acknowledgment_emoji) == (True, "hourglass_flowing_sand")
    assert (binding.ask_user, binding.tool_approvals, binding.approver_groups) == (False, False, [])
    assert binding.interaction_timeout.total_seconds() == 30 * 60
    assert binding.thread_ttl.days == 90
    assert binding.agent_headers == {}


def test_the_database_refuses_a_channel_bound_twice_on_one_connection():
    first = BindingFactory(channels=["C0123456789"])
    second = BindingFactory(connection=first.connection, channels=[])

    with pytest.raises(IntegrityError), transaction.atomic():
        BindingChannelFactory(binding=second, channel_id="C0123456789")


def test_the_same_channel_id_may_be_bound_on_two_connections():
    BindingFactory(channels=["C0123456789"])
    BindingFactory(channels=["C0123456789"])

    assert BindingChannel.objects.filter(channel_id="C0123456789").count() == 2
