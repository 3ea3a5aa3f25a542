"""Where a Binding's turns go (its agent's URL, kagent agent, dialect and headers): a change by someone
who may not make it is refused before anything is fetched with the Binding's headers, and refused
again by the save; a change by someone who may is audited, whatever field it is."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from audit.models import AuditEvent
from bindings import agent_route, manifest, services
from bindings.models import Binding
from tests.factories import BindingFactory, ConnectionFactory

from .manifests import CONNECTION, MINIMAL_BINDING, as_yaml, varied

pytestmark = pytest.mark.django_db


def kagent_binding(controller: str, namespace: str = "ops", name: str = "k8s-agent") -> dict[str, Any]:
    return varied(
        MINIMAL_BINDING,
        "spec.agent",
        {
            "kagent": {"controller": controller, "namespace": namespace, "name": name},
            "headers": {"Authorization": {"fromEnv": "OPS_AGENT_TOKEN"}},
        },
    )


@pytest.fixture
def existing(kagent_controller, a2a_agent, monkeypatch):
    """ops, a kagent agent by name with the service's identity in its Authorization header."""
    monkeypatch.setenv("OPS_AGENT_TOKEN", "Bearer the-service-identity")
    kagent_controller.add("1.0", "ops", "k8s-agent", a2a_agent.url)
    assert services.apply_manifests(as_yaml(CONNECTION, kagent_binding(kagent_controller.url))).ok
    return Binding.objects.get(name="ops")


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({"controller": "http://attacker.example:9/"}, "spec.agent.kagent"),
        ({"namespace": "evil"}, "spec.agent.kagent"),
        ({"name": "stolen"}, "spec.agent.kagent"),
    ],
)
def test_a_kagent_change_checked_for_someone_who_may_not_make_it_is_refused_before_any_lookup(
    existing, kagent_controller, change, path
):
    asked = len(kagent_controller.requests)
    fields = {"controller": kagent_controller.url, "namespace": "ops", "name": "k8s-agent", **change}

    validation = services.check_binding(kagent_binding(**fields), binding=existing, may_change_agent=False)

    assert [str(error) for error in validation.errors] == [f'Binding "ops": {path}: {agent_route.REFUSED}']
    assert len(kagent_controller.requests) == asked  # nothing fetched, anywhere


@pytest.mark.parametrize(
    ("agent", "paths"),
    [
        ({"url": "http://127.0.0.1:8083/", "dialect": "a2a"}, []),
        ({"url": "http://127.0.0.1:8084/", "dialect": "a2a"}, ["spec.agent.url"]),
        ({"url": "http://127.0.0.1:8083/", "dialect": "kagent-v1"}, ["spec.agent.dialect"]),
        (
            {"url": "http://127.0.0.1:8083/", "headers": {"Authorization": {"fromEnv": "OPS_AGENT_TOKEN"}}},
            ["spec.agent.headers"],
        ),
    ],
)
def test_only_the_fields_that_decide_where_turns_go_are_refused(agent, paths):
    binding = BindingFactory(name="ops", connection=ConnectionFactory(name="acme"), channels=["C0123456789"])

    document = varied(varied(MINIMAL_BINDING, "spec.agent", agent), "spec.output", "final")
    validation = services.check_binding(document, binding=binding, may_change_agent=False)

    assert [error.path for error in validation.errors] == paths


def test_a_new_binding_is_refused_to_someone_who_may_not_choose_its_agent():
    ConnectionFactory(name="acme")

    validation = services.check_binding(MINIMAL_BINDING, may_change_agent=False)

    assert [str(error) for error in validation.errors] == [
        f'Binding "ops": spec.agent.url: {agent_route.REFUSED_NEW}'
    ]


def test_the_save_refuses_a_route_change_whatever_form_called_it_and_writes_nothing(existing):
    spec = services.binding_spec(existing)
    moved = replace(spec, agent=replace(spec.agent, url="http://attacker.example/", kagent=None))

    with pytest.raises(agent_route.AgentChangeRefused):
        services.save_binding(moved, existing, actor="admin:staff", may_change_agent=False)

    existing.refresh_from_db()
    assert existing.agent_url == spec.agent.url
    assert AuditEvent.objects.filter(actor_id="admin:staff").count() == 0


def test_apply_audits_a_kagent_or_dialect_change_with_the_route_before_and_after(
    existing, kagent_controller, a2a_agent
):
    kagent_controller.add("1.0", "ops", "other-agent", a2a_agent.url)

    result = services.apply_manifests(
        as_yaml(CONNECTION, kagent_binding(kagent_controller.url, name="other-agent"))
    )

    assert result.ok
    event = AuditEvent.objects.filter(action="binding.agent_changed").latest("id")
    assert event.actor_id == services.apply_actor()
    assert event.details["changed"] == ["spec.agent.kagent"]
    assert (event.details["previous_kagent"]["name"], event.details["kagent"]["name"]) == (
        "k8s-agent",
        "other-agent",
    )
    assert (event.details["previous_url"], event.details["url"]) == (
        f"{kagent_controller.url}/agents/ops/k8s-agent",
        f"{kagent_controller.url}/agents/ops/other-agent",
    )
    assert (
        event.details["header_variables"] == event.details["previous_header_variables"] == ["OPS_AGENT_TOKEN"]
    )


def test_a_dialect_change_alone_is_audited():
    ConnectionFactory(name="acme")
    assert services.apply_manifests(as_yaml(CONNECTION, MINIMAL_BINDING)).ok
    dialect = varied(MINIMAL_BINDING, "spec.agent.dialect", manifest.Dialect.KAGENT_V1.value)

    assert services.apply_manifests(as_yaml(CONNECTION, dialect)).ok

    event = AuditEvent.objects.filter(action="binding.agent_changed").latest("id")
    assert event.details["changed"] == ["spec.agent.dialect"]
    assert (event.details["previous_dialect"], event.details["dialect"]) == ("a2a", "kagent-v1")
