"""A Binding that names a kagent agent (``spec.agent.kagent``): checked as a manifest, found on its
controller when applied (a stand-in controller, tests/fakes/kagent_controller.py, serving the scripted
A2A agent at kagent 1.0's and 0.10's addresses), shown in ``apply`` and the admin, refused when it cannot
be found; and ``url:`` as before."""

from __future__ import annotations

import socket
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from bindings import services
from bindings.models import Binding
from tests.bindings.helpers import binding_form
from tests.factories import ConnectionFactory

from .manifests import CONNECTION, MINIMAL_BINDING, as_yaml, binding, errors_of, varied

pytestmark = pytest.mark.django_db

B = 'Binding "ops"'


def by_name(controller: str, namespace: str = "ops", name: str = "k8s-agent", **agent: Any) -> dict[str, Any]:
    return varied(
        MINIMAL_BINDING,
        "spec.agent",
        {"kagent": {"controller": controller, "namespace": namespace, "name": name}, **agent},
    )


# --- the manifest -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("agent", "expected"),
    [
        pytest.param(
            {"url": "http://a/", "kagent": {"controller": "http://c", "namespace": "ops", "name": "a"}},
            [f"{B}: spec.agent.kagent: give either spec.agent.url or spec.agent.kagent, not both"],
            id="both",
        ),
        pytest.param(
            {"kagent": {"namespace": "ops"}},
            [f"{B}: spec.agent.kagent.controller: is required", f"{B}: spec.agent.kagent.name: is required"],
            id="missing fields",
        ),
        pytest.param(
            {"kagent": {"controller": "ftp://c", "namespace": "Ops", "name": "k8s_agent"}},
            [
                f'{B}: spec.agent.kagent.controller: must be an http:// or https:// URL of at most 500 characters (got "ftp://c")',
                f'{B}: spec.agent.kagent.namespace: must be a Kubernetes namespace: lower-case letters, digits and hyphens (got "Ops")',
                f'{B}: spec.agent.kagent.name: must be a Kubernetes name: lower-case letters, digits and hyphens (got "k8s_agent")',
            ],
            id="bad values",
        ),
        pytest.param(
            {"kagent": {"controller": "http://c", "namespace": "ops", "name": "a", "port": 80}},
            [f"{B}: spec.agent.kagent.port: unknown field (expected one of: controller, namespace, name)"],
            id="unknown field",
        ),
        pytest.param(
            {"kagent": {"controller": "http://c", "namespace": "ops", "name": "a"}, "dialect": "a2a"},
            [f'{B}: spec.agent.dialect: a kagent agent speaks kagent-v1 (got "a2a")'],
            id="another dialect",
        ),
        pytest.param(
            {"kagent": {"controller": "http://c", "namespace": "ops", "name": "a"}, "protocolVersion": "0.3"},
            [
                f"{B}: spec.agent.protocolVersion: is read from the agent card for a kagent agent: leave it out, "
                'or set it to auto (got "0.3")'
            ],
            id="a pinned version",
        ),
        pytest.param(
            {"kagent": "ops/k8s-agent"},
            [f'{B}: spec.agent.kagent: must be a mapping (got "ops/k8s-agent")'],
            id="a string",
        ),
    ],
)
def test_a_kagent_agent_by_name_is_refused_naming_the_field(agent, expected):
    assert errors_of(varied(MINIMAL_BINDING, "spec.agent", agent)) == expected


# --- applying ---------------------------------------------------------------------------------------


def test_applying_finds_a_kagent_1_0_agent_and_keeps_its_address_and_version(kagent_controller, a2a_agent):
    address = kagent_controller.add("1.0", "ops", "k8s-agent", a2a_agent.url)

    result = services.apply_manifests(as_yaml(CONNECTION, by_name(kagent_controller.url)))

    assert result.ok, result.errors
    found = f"kagent agent ops/k8s-agent on {kagent_controller.url}: kagent 1.0 at {address} (A2A 1.0)"
    assert [str(applied) for applied in result.resources] == [
        "connection/acme created",
        f"binding/ops created [{found}]",
    ]
    row = Binding.objects.get(name="ops")
    assert (row.agent_url, row.protocol_version, row.dialect) == (address, "1.0", "kagent-v1")
    assert (row.kagent_controller, row.kagent_namespace, row.kagent_name) == (
        kagent_controller.url,
        "ops",
        "k8s-agent",
    )


def test_applying_finds_a_kagent_0_10_agent_speaking_a2a_0_3(kagent_controller, a2a_agent_v03):
    address = kagent_controller.add("0.10", "ops", "k8s-agent", a2a_agent_v03.url)

    result = services.apply_manifests(as_yaml(CONNECTION, by_name(kagent_controller.url)))

    assert result.ok, result.errors
    row = Binding.objects.get(name="ops")
    assert (row.agent_url, row.protocol_version) == (address, "0.3")
    assert services.describe_agent(services.binding_spec(row).agent).endswith(
        f"kagent 0.10 at {address} (A2A 0.3)"
    )


def test_a_dry_run_says_what_it_found_and_writes_nothing(kagent_controller, a2a_agent, capsys, tmp_path):
    address = kagent_controller.add("1.0", "ops", "k8s-agent", a2a_agent.url)
    path = tmp_path / "kourier.yaml"
    path.write_text(as_yaml(CONNECTION, by_name(kagent_controller.url)))

    call_command("apply", "-f", str(path), "--dry-run")

    assert (
        f"binding/ops created (dry run) [kagent agent ops/k8s-agent on {kagent_controller.url}: kagent 1.0 at {address} (A2A 1.0)]"
        in (capsys.readouterr().out)
    )
    assert not Binding.objects.exists()


@pytest.mark.parametrize("dry_run", [False, True], ids=["apply", "dry run"])
def test_a_wrong_name_is_refused_at_apply_and_nothing_is_written(
    kagent_controller, a2a_agent, capsys, tmp_path, dry_run
):
    kagent_controller.add("1.0", "ops", "k8s-agent", a2a_agent.url)
    path = tmp_path / "kourier.yaml"
    path.write_text(as_yaml(CONNECTION, by_name(kagent_controller.url, name="k8s-agnet")))

    with pytest.raises(CommandError, match=r"Refused: 1 error; nothing was written\."):
        call_command("apply", "-f", str(path), *(["--dry-run"] if dry_run else []))

    assert (
        f'{B}: spec.agent.kagent: the kagent controller at {kagent_controller.url} has no agent "ops/k8s-agnet"'
        in (capsys.readouterr().err)
    )
    assert not Binding.objects.exists()


def test_an_unreachable_controller_is_refused_and_the_binding_keeps_its_agent(kagent_controller, a2a_agent):
    services.apply_manifests(as_yaml(CONNECTION, MINIMAL_BINDING))
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        nobody = f"http://127.0.0.1:{closed.getsockname()[1]}"

    result = services.apply_manifests(as_yaml(CONNECTION, by_name(nobody)))

    assert [str(error) for error in result.errors] == [
        f"{B}: spec.agent.kagent: cannot reach the kagent controller at {nobody} (ConnectError)"
    ]
    assert Binding.objects.get(name="ops").agent_url == "http://127.0.0.1:8083/"


def test_a_card_that_is_neither_lines_is_refused_at_apply(kagent_controller):
    kagent_controller.serve_card(
        "1.0", "ops", "k8s-agent", b'{"url": "http://x/", "protocolVersion": "0.3.0"}'
    )

    result = services.apply_manifests(as_yaml(CONNECTION, by_name(kagent_controller.url)))

    [error] = result.errors
    assert str(error).endswith("it is neither kagent 1.0's nor kagent 0.10's")
    assert not Binding.objects.exists()


def test_the_export_names_the_agent_and_applying_it_again_changes_nothing(kagent_controller, a2a_agent):
    kagent_controller.add("1.0", "ops", "k8s-agent", a2a_agent.url)
    services.apply_manifests(as_yaml(CONNECTION, by_name(kagent_controller.url)))

    exported = services.export_manifests()
    again = services.apply_manifests(exported)

    assert f"kagent: {{controller: '{kagent_controller.url}', namespace: ops, name: k8s-agent}}" in exported
    assert "url:" not in exported
    assert [str(applied).partition(" [")[0] for applied in again.resources] == [
        "connection/acme unchanged",
        "binding/ops unchanged",
    ]


def test_an_agent_its_controller_now_serves_on_the_other_line_is_configured(
    kagent_controller, a2a_agent, a2a_agent_v03
):
    kagent_controller.add("0.10", "ops", "k8s-agent", a2a_agent_v03.url)
    services.apply_manifests(as_yaml(CONNECTION, by_name(kagent_controller.url)))
    address = kagent_controller.add("1.0", "ops", "k8s-agent", a2a_agent.url)  # the cluster moved to 1.0

    result = services.apply_manifests(as_yaml(CONNECTION, by_name(kagent_controller.url)))

    assert str(result.resources[1]).startswith("binding/ops configured: spec.agent.kagent [")
    assert Binding.objects.get(name="ops").agent_url == address


def test_a_url_keeps_working_without_any_lookup(kagent_controller):
    result = services.apply_manifests(as_yaml(CONNECTION, binding(agent={"url": "http://127.0.0.1:8083/"})))

    assert [str(applied) for applied in result.resources] == [
        "connection/acme created",
        "binding/ops created",
    ]
    assert kagent_controller.requests == []


# --- the admin --------------------------------------------------------------------------------------


def test_the_admin_adds_a_kagent_agent_by_name_and_shows_where_it_was_found(
    admin_client, kagent_controller, a2a_agent
):
    ConnectionFactory(name="acme")
    address = kagent_controller.add("1.0", "ops", "k8s-agent", a2a_agent.url)

    response = admin_client.post(
        reverse("admin:bindings_binding_add"),
        binding_form(
            agent_url="",
            dialect="kagent-v1",
            kagent_controller=kagent_controller.url,
            kagent_namespace="ops",
            kagent_name="k8s-agent",
        ),
    )

    assert response.status_code == 302
    saved = Binding.objects.get(name="ops")
    assert (saved.agent_url, saved.protocol_version) == (address, "1.0")
    page = admin_client.get(reverse("admin:bindings_binding_change", args=[saved.pk])).content.decode()
    assert f"kagent 1.0 at {address} (A2A 1.0)" in page
    listing = admin_client.get(reverse("admin:bindings_binding_changelist")).content.decode()
    assert f"kagent 1.0 at {address} (A2A 1.0)" in listing


def test_the_admin_refuses_a_name_its_controller_does_not_know_on_the_controller_field(
    admin_client, kagent_controller
):
    ConnectionFactory(name="acme")

    response = admin_client.post(
        reverse("admin:bindings_binding_add"),
        binding_form(
            agent_url="",
            dialect="kagent-v1",
            kagent_controller=kagent_controller.url,
            kagent_namespace="ops",
            kagent_name="nobody",
        ),
    )

    assert response.status_code == 200
    form = response.context["adminform"].form
    assert form.errors["kagent_controller"][0].startswith(f"{B}: spec.agent.kagent: the kagent controller at")
    assert not Binding.objects.exists()


# --- who a turn sends as the user (spec.agent.userIdentity) ---------------------------------------------


def test_the_user_identity_is_applied_and_an_unknown_one_refused():
    result = services.apply_manifests(as_yaml(CONNECTION, binding(**{"agent.userIdentity": "email"})))

    assert result.ok
    assert Binding.objects.get(name="ops").user_identity == "email"
    assert errors_of(binding(**{"agent.userIdentity": "everyone"})) == [
        f'{B}: spec.agent.userIdentity: must be one of none, slack-user-id, email (got "everyone")'
    ]
