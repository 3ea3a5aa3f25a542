"""Applying and exporting manifests: all or nothing, idempotent, and round-tripping."""

from __future__ import annotations

import os
from datetime import timedelta
from typing import Any

import pytest
import yaml
from django.core.management import call_command
from django.core.management.base import CommandError

from bindings import manifest, services
from bindings.manifest import audited_rules
from bindings.models import Binding, BindingChannel, Connection
from tests.factories import BindingFactory, ConnectionFactory

from .manifests import CONNECTION, EXAMPLE, MINIMAL_BINDING, as_yaml, binding, every_field, varied

pytestmark = pytest.mark.django_db


def snapshot() -> dict[str, Any]:
    """Every row of the bindings app, timestamps included: equal snapshots mean nothing was written."""
    return {
        "connections": list(Connection.objects.order_by("pk").values()),
        "bindings": list(Binding.objects.order_by("pk").values()),
        "channels": list(BindingChannel.objects.order_by("pk").values()),
    }


def lines(result: services.ApplyResult) -> list[str]:
    return [str(applied) for applied in result.resources]


# --- apply -------------------------------------------------------------------------------------------


def test_applying_the_example_creates_the_connection_then_the_binding():
    result = services.apply_manifests(EXAMPLE)

    assert result.ok
    assert lines(result) == ["connection/acme created", "binding/ops created"]
    assert result.summary() == "Applied: 2 created, 0 configured, 0 unchanged."
    binding = Binding.objects.get(name="ops")
    assert binding.connection == Connection.objects.get(name="acme", app_token_env="SLACK_APP_TOKEN")
    assert binding.channel_ids() == ["C0123456789"]
    assert binding.agent_headers == {"Authorization": "OPS_AGENT_TOKEN"}
    assert (binding.dialect, binding.interaction_timeout, binding.thread_ttl) == (
        "kagent-v1",
        timedelta(minutes=30),
        timedelta(days=90),
    )


def test_applying_the_same_manifests_twice_changes_nothing_and_says_so():
    services.apply_manifests(EXAMPLE)
    before = snapshot()

    result = services.apply_manifests(EXAMPLE)

    assert lines(result) == ["connection/acme unchanged", "binding/ops unchanged"]
    assert not result.changed
    assert result.summary() == "Nothing changed: 2 unchanged."
    assert snapshot() == before


def test_a_changed_field_configures_only_that_resource_and_names_the_field():
    services.apply_manifests(EXAMPLE)
    connection_before = Connection.objects.values().get(name="acme")

    result = services.apply_manifests(EXAMPLE.replace("output: live", "output: final"))

    assert lines(result) == ["connection/acme unchanged", "binding/ops configured: spec.output"]
    assert Binding.objects.get(name="ops").output == "final"
    assert Connection.objects.values().get(name="acme") == connection_before


def test_an_omitted_field_is_set_back_to_its_default():
    services.apply_manifests(as_yaml(CONNECTION, binding(output="final", chat={"progress": "steps"})))

    result = services.apply_manifests(as_yaml(CONNECTION, MINIMAL_BINDING))

    assert lines(result) == [
        "connection/acme unchanged",
        "binding/ops configured: spec.output, spec.chat.progress",
    ]
    assert Binding.objects.filter(name="ops", output="live", progress="steps-and-activity").exists()


def test_a_dry_run_reports_what_would_change_and_writes_nothing():
    services.apply_manifests(as_yaml(CONNECTION))
    before = snapshot()

    result = services.apply_manifests(EXAMPLE, dry_run=True)

    assert lines(result) == [
        "connection/acme configured (dry run): spec.appToken",
        "binding/ops created (dry run)",
    ]
    assert result.summary() == "Dry run, nothing was written: 1 to create, 1 to configure, 0 unchanged."
    assert snapshot() == before


def test_one_refusal_writes_nothing_at_all():
    services.apply_manifests(as_yaml(CONNECTION))
    before = snapshot()
    good = varied(binding(channels=["C0000000001"]), "metadata.name", "good")

    result = services.apply_manifests(as_yaml(CONNECTION, good, binding(output="stream")))

    assert [str(e) for e in result.errors] == [
        'Binding "ops": spec.output: must be one of live, final (got "stream")'
    ]
    assert result.resources == []
    assert result.summary() == "Refused: 1 error; nothing was written."
    assert snapshot() == before


def test_a_channel_held_by_a_binding_outside_the_input_is_refused():
    BindingFactory(name="other", connection=ConnectionFactory(name="acme"), channels=["C0123456789"])

    result = services.apply_manifests(as_yaml(MINIMAL_BINDING))

    assert [str(e) for e in result.errors] == [
        'Binding "ops": spec.channels[0]: channel C0123456789 is already bound to Binding "other" '
        'on Connection "acme"'
    ]


def test_a_channel_may_move_between_two_bindings_of_one_input():
    services.apply_manifests(
        as_yaml(
            CONNECTION,
            binding(channels=["C0000000001", "C0000000002"]),
            varied(binding(channels=["C0000000003"]), "metadata.name", "other"),
        )
    )

    result = services.apply_manifests(
        as_yaml(
            binding(channels=["C0000000001"]),
            varied(binding(channels=["C0000000002", "C0000000003"]), "metadata.name", "other"),
        )
    )

    assert lines(result) == [
        "binding/ops configured: spec.channels",
        "binding/other configured: spec.channels",
    ]
    assert Binding.objects.get(name="ops").channel_ids() == ["C0000000001"]
    assert Binding.objects.get(name="other").channel_ids() == ["C0000000002", "C0000000003"]


def test_moving_a_binding_to_another_connection_moves_its_channels():
    globex = varied(CONNECTION, "metadata.name", "globex")
    services.apply_manifests(as_yaml(CONNECTION, globex, MINIMAL_BINDING))

    result = services.apply_manifests(as_yaml(binding(connection="globex")))

    assert lines(result) == ["binding/ops configured: spec.connection"]
    channel = BindingChannel.objects.get()
    assert (channel.connection.name, channel.binding.connection.name) == ("globex", "globex")


def test_applying_leaves_what_was_learned_from_slack_alone():
    services.apply_manifests(as_yaml(CONNECTION))
    Connection.objects.filter(name="acme").update(team_id="T01", bot_user_id="U01")

    services.apply_manifests(as_yaml(varied(CONNECTION, "spec.appToken", {"fromEnv": "SLACK_APP_TOKEN"})))

    assert Connection.objects.filter(
        name="acme", team_id="T01", bot_user_id="U01", app_token_env="SLACK_APP_TOKEN"
    )


def test_resources_the_input_does_not_name_are_left_alone():
    BindingFactory(name="kept")

    services.apply_manifests(EXAMPLE)

    assert Binding.objects.filter(name="kept").exists()


def test_an_input_without_manifests_is_refused():
    assert [str(e) for e in services.apply_manifests("# nothing\n").errors] == [
        "input: there are no manifests to apply"
    ]


# --- export ------------------------------------------------------------------------------------------


def test_export_writes_back_what_was_applied():
    services.apply_manifests(EXAMPLE)

    exported = services.export_manifests()

    assert exported.startswith("apiVersion: kourier/v1\nkind: Connection\nmetadata: {name: acme}\n")
    assert "  channels: [C0123456789]\n" in exported
    assert "      Authorization: {fromEnv: OPS_AGENT_TOKEN}\n" in exported


def test_exported_manifests_apply_back_unchanged_and_export_the_same_text():
    globex = ConnectionFactory(name="globex", app_token_env="GLOBEX_APP_TOKEN")
    BindingFactory(
        name="triage",
        connection=globex,
        channels=["C0000000002", "C0000000001"],
        dialect="kagent-v1",
        protocol_version="0.3",
        agent_headers={"X-Tenant": "TRIAGE_TENANT", "Authorization": "TRIAGE_TOKEN"},
        output="final",
        thread_replies="mention",
        acknowledgment_enabled=False,
        acknowledgment_emoji="eyes",
        progress="activity",
        ask_user=True,
        tool_approvals=True,
        approver_groups=["S0000000002", "S0000000001"],
        interaction_timeout=timedelta(hours=1, minutes=30),
        thread_ttl=timedelta(days=7),
        triggers=[
            {
                "name": "prometheus",
                "kind": "alertmanager",
                "token_env": "OPS_TOKEN",
                "channel": "C0000000002",
            },
            {"name": "hooks", "kind": "generic", "token_env": "HOOKS_TOKEN", "channel": "C0000000001"},
        ],
    )
    BindingFactory(name="plain", connection=globex)
    exported = services.export_manifests()
    before = snapshot()

    result = services.apply_manifests(exported)

    assert lines(result) == [
        "connection/globex unchanged",
        "binding/plain unchanged",
        "binding/triage unchanged",
    ]
    assert snapshot() == before
    assert services.export_manifests() == exported


def test_every_field_applied_is_exported_as_written_and_applies_back_unchanged(kagent_controller, a2a_agent):
    kagent_controller.add("1.0", "ops", "k8s-agent", a2a_agent.url)
    written = every_field(agent_url=a2a_agent.url, controller=kagent_controller.url)
    assert services.apply_manifests(as_yaml(*written)).ok

    exported = services.export_manifests()

    def by_name(documents):
        return {(document["kind"], document["metadata"]["name"]): document for document in documents}

    assert by_name(yaml.safe_load_all(exported)) == by_name(written)
    again = services.apply_manifests(exported)
    assert [(applied.name, applied.action) for applied in again.resources] == [
        ("acme", services.Action.UNCHANGED),
        ("desk", services.Action.UNCHANGED),
        ("ops", services.Action.UNCHANGED),
    ]


def test_an_empty_database_exports_nothing():
    assert services.export_manifests() == ""


# --- the commands ------------------------------------------------------------------------------------


def test_the_apply_command_prints_one_line_per_resource(tmp_path, capsys):
    path = tmp_path / "example.yaml"
    path.write_text(EXAMPLE)

    call_command("apply", "-f", str(path))
    call_command("apply", "-f", str(path))

    assert capsys.readouterr().out == (
        "connection/acme created\n"
        "binding/ops created\n"
        "Applied: 2 created, 0 configured, 0 unchanged.\n"
        "connection/acme unchanged\n"
        "binding/ops unchanged\n"
        "Nothing changed: 2 unchanged.\n"
    )


def test_the_apply_command_takes_several_files_together(tmp_path, capsys):
    (tmp_path / "connection.yaml").write_text(as_yaml(CONNECTION))
    (tmp_path / "binding.yaml").write_text(as_yaml(MINIMAL_BINDING))

    call_command("apply", "-f", str(tmp_path / "binding.yaml"), "-f", str(tmp_path / "connection.yaml"))

    assert capsys.readouterr().out.splitlines()[:2] == ["connection/acme created", "binding/ops created"]


def test_the_apply_command_reads_standard_input(monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", __import__("io").StringIO(EXAMPLE))

    call_command("apply", "-f", "-", "--dry-run")

    assert capsys.readouterr().out == (
        "connection/acme created (dry run)\n"
        "binding/ops created (dry run)\n"
        "Dry run, nothing was written: 2 to create, 0 to configure, 0 unchanged.\n"
    )
    assert not Connection.objects.exists()


def test_the_apply_command_prints_every_refusal_and_fails(tmp_path, capsys):
    path = tmp_path / "bad.yaml"
    path.write_text(as_yaml(binding(output="stream", connection="globex")))

    with pytest.raises(CommandError, match=r"^Refused: 2 errors; nothing was written\.$"):
        call_command("apply", "-f", str(path))

    assert capsys.readouterr().err.splitlines() == [
        'Binding "ops": spec.connection: unknown Connection "globex"',
        'Binding "ops": spec.output: must be one of live, final (got "stream")',
    ]
    assert not Binding.objects.exists()


def test_the_apply_command_refuses_broken_yaml_naming_the_file(tmp_path, capsys):
    path = tmp_path / "broken.yaml"
    path.write_text("kind: [Binding\n")

    with pytest.raises(CommandError):
        call_command("apply", "-f", str(path))

    assert capsys.readouterr().err.startswith(f"{path}: line 2, column 1: not valid YAML: ")


def test_the_apply_command_refuses_a_file_it_cannot_read(tmp_path):
    with pytest.raises(CommandError, match=r"^cannot read .*missing.yaml: "):
        call_command("apply", "-f", str(tmp_path / "missing.yaml"))


@pytest.fixture
def connection_variables(monkeypatch):
    """The example Connection's variables, set in this process."""
    for variable in ("SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_APP_TOKEN"):
        monkeypatch.setenv(variable, "set")


@pytest.mark.parametrize("dry_run", [False, True], ids=["applied", "dry run"])
def test_the_apply_command_warns_of_an_unset_variable_and_an_agent_card_it_cannot_fetch_and_applies(
    tmp_path, capsys, monkeypatch, connection_variables, dry_run
):
    monkeypatch.delenv("SLACK_APP_TOKEN")
    monkeypatch.delenv("OPS_AGENT_TOKEN", raising=False)
    path = tmp_path / "ops.yaml"
    path.write_text(EXAMPLE.replace("toolApprovals: false", "toolApprovals: true"))

    call_command("apply", "-f", str(path), *(["--dry-run"] if dry_run else []))

    captured = capsys.readouterr()
    assert captured.err.splitlines() == [
        'Warning: Binding "ops": spec.interactions.toolApprovals is true but approverGroups is empty: '
        "any non-bot member of the channel may decide approvals",
        'Warning: Connection "acme": spec.appToken.fromEnv: SLACK_APP_TOKEN is not set in this process',
        'Warning: Binding "ops": spec.agent.headers.Authorization.fromEnv: OPS_AGENT_TOKEN is not set in '
        "this process",
        'Warning: Binding "ops": spec.agent.url: the agent card cannot be fetched (GET agent card: cannot '
        "connect (ConnectError)); turns fail until it can",
    ]
    assert "Warning" not in captured.out
    assert Binding.objects.filter(name="ops", tool_approvals=True).exists() is not dry_run


def test_an_agent_whose_card_is_served_and_variables_that_are_set_draw_no_warning(
    a2a_agent, monkeypatch, connection_variables
):
    monkeypatch.setenv("OPS_AGENT_TOKEN", "set")
    text = EXAMPLE.replace("http://127.0.0.1:8083/", f"{a2a_agent.url}/")

    result = services.apply_manifests(text)

    assert (result.ok, result.warnings) == (True, [])


def test_a_triggers_token_variable_that_is_not_set_is_warned_of_by_its_place(monkeypatch):
    monkeypatch.delenv("ALERTS_TOKEN", raising=False)
    document = binding(
        triggers=[{"name": "prometheus", "kind": "alertmanager", "token": {"fromEnv": "ALERTS_TOKEN"}}]
    )
    validation = manifest.validate([manifest.Document(data=document)], connections=["acme"])

    assert [str(w) for w in services.unset_variable_warnings(validation)] == [
        'Binding "ops": spec.triggers[0].token.fromEnv: ALERTS_TOKEN is not set in this process'
    ]


def test_the_export_command_prints_manifests_that_apply_back_unchanged(tmp_path, capsys):
    services.apply_manifests(EXAMPLE)

    call_command("export")
    exported = capsys.readouterr().out
    (tmp_path / "exported.yaml").write_text(exported)
    call_command("apply", "-f", str(tmp_path / "exported.yaml"))

    assert exported == services.export_manifests()
    assert capsys.readouterr().out.splitlines()[-1] == "Nothing changed: 2 unchanged."


# --- What agent headers may read ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("variable", "why"),
    [
        ("SECRET_KEY", "is one of the service's own secrets"),
        ("DATABASE_URL", "is one of the service's own secrets"),
        ("REDIS_URL", "is one of the service's own secrets"),
        ("METRICS_TOKEN", "is one of the service's own secrets"),
        ("SLACK_BOT_TOKEN", "is one of the service's own secrets"),  # the Connection's bot token
        ("SLACK_SIGNING_SECRET", "is one of the service's own secrets"),
        ("HOME", "is not a variable agent headers may read"),
        ("OPS_AGENT_TOKEN_2", "is not a variable agent headers may read"),  # a name, not a prefix
        ("TRIAGE", "is not a variable agent headers may read"),  # the prefix is TRIAGE_
    ],
)
def test_an_agent_header_may_read_only_a_variable_the_operator_listed_and_never_a_secret_of_the_service(
    settings, variable, why
):
    settings.AGENT_HEADER_VARIABLES = ["OPS_AGENT_TOKEN", "TRIAGE_*", "SECRET_KEY", "SLACK_*"]
    before = snapshot()

    result = services.apply_manifests(
        as_yaml(
            CONNECTION,
            binding(agent={"url": "http://a.example/", "headers": {"X-Id": {"fromEnv": variable}}}),
        )
    )

    assert not result.ok
    # The Connection is refused too: SLACK_* listed for agent headers is no place for its secrets.
    [error] = [str(problem) for problem in result.errors if str(problem).startswith("Binding")]
    assert error == f'Binding "ops": spec.agent.headers.X-Id.fromEnv: {variable} {why}' + (
        ", which no agent header may send" if "own secrets" in why else ": list it in AGENT_HEADER_VARIABLES"
    )
    assert snapshot() == before


@pytest.mark.parametrize("variable", ["OPS_AGENT_TOKEN", "TRIAGE_TENANT", "TRIAGE_TOKEN"])
def test_a_listed_variable_or_one_under_a_listed_prefix_is_taken(variable):
    result = services.apply_manifests(
        as_yaml(
            CONNECTION,
            binding(agent={"url": "http://a.example/", "headers": {"X-Id": {"fromEnv": variable}}}),
        )
    )

    assert result.ok, result.errors
    assert Binding.objects.get().agent_headers == {"X-Id": variable}


def test_with_no_variables_listed_no_agent_header_is_taken(settings):
    settings.AGENT_HEADER_VARIABLES = []

    result = services.apply_manifests(
        as_yaml(
            CONNECTION,
            binding(agent={"url": "http://a.example/", "headers": {"X-Id": {"fromEnv": "OPS_AGENT_TOKEN"}}}),
        )
    )

    assert not result.ok


def test_a_new_agent_address_or_new_headers_are_audited_with_who_applied_them():
    from audit.models import AuditEvent

    services.apply_manifests(as_yaml(CONNECTION, binding(agent={"url": "http://a.example/"})))
    services.apply_manifests(as_yaml(CONNECTION, binding(agent={"url": "http://a.example/"}, output="final")))
    services.apply_manifests(
        as_yaml(
            CONNECTION,
            binding(agent={"url": "http://b.example/", "headers": {"X-Id": {"fromEnv": "TRIAGE_ID"}}}),
        )
    )

    events = list(AuditEvent.objects.filter(action="binding.agent_changed").order_by("id"))
    assert [(e.actor_id, e.details["url"], e.details["previous_url"]) for e in events] == [
        (services.apply_actor(), "http://a.example/", None),
        (services.apply_actor(), "http://b.example/", "http://a.example/"),
    ]
    assert events[1].details["header_variables"] == ["TRIAGE_ID"]


# -- approval rules: each change audited with who, the field, old and new ----------------------------


def approving(*groups: str, **fields: Any) -> dict[str, Any]:
    """The minimal Binding on a kagent agent whose tool calls the given Slack user groups approve."""
    approvals = {"interactions.toolApprovals": True, "interactions.approverGroups": list(groups)}
    return binding(**{"agent.dialect": "kagent-v1", **approvals, **fields})


def rule_changes() -> list[tuple[str, str, Any, Any]]:
    from audit.models import AuditEvent

    events = AuditEvent.objects.filter(action=services.APPROVAL_RULE_CHANGED).order_by("id")
    return [(e.actor_id, e.details["field"], e.details["old"], e.details["new"]) for e in events]


def test_a_new_bindings_approval_rules_are_audited_from_none_with_the_operating_system_user(monkeypatch):
    monkeypatch.setattr("getpass.getuser", lambda: "ada")

    result = services.apply_manifests(as_yaml(CONNECTION, approving("S0ONCALL")))
    assert result.ok, result.errors

    assert rule_changes() == [
        ("apply:ada", "spec.interactions.toolApprovals", None, True),
        ("apply:ada", "spec.interactions.approverGroups", None, ["S0ONCALL"]),
        ("apply:ada", "spec.interactions.timeout", None, "30m"),
    ]
    from audit.models import AuditEvent

    assert set(AuditEvent.objects.values_list("actor_kind", flat=True)) == {"operator"}  # not a Slack user


def test_each_changed_approval_rule_is_one_row_with_its_old_and_new_value(monkeypatch):
    services.apply_manifests(as_yaml(CONNECTION, approving("S0ONCALL")))
    created = len(rule_changes())
    monkeypatch.setattr("getpass.getuser", lambda: "grace")

    services.apply_manifests(
        as_yaml(CONNECTION, approving("S0ONCALL", "S0SRE", **{"interactions.timeout": "2h"}))
    )

    assert rule_changes()[created:] == [
        ("apply:grace", "spec.interactions.approverGroups", ["S0ONCALL"], ["S0ONCALL", "S0SRE"]),
        ("apply:grace", "spec.interactions.timeout", "30m", "2h"),
    ]


def test_a_change_that_leaves_the_approval_rules_alone_audits_no_rule():
    services.apply_manifests(as_yaml(CONNECTION, approving("S0ONCALL")))
    created = len(rule_changes())

    result = services.apply_manifests(as_yaml(CONNECTION, approving("S0ONCALL", output="final")))

    assert [str(applied) for applied in result.resources][-1] == "binding/ops configured: spec.output"

    assert len(rule_changes()) == created


def test_a_rule_is_audited_once_its_name_is_listed(monkeypatch):
    services.apply_manifests(as_yaml(CONNECTION, binding()))
    monkeypatch.setattr(
        audited_rules, "APPROVAL_RULE_FIELDS", (*audited_rules.APPROVAL_RULE_FIELDS, "askUser")
    )

    services.apply_manifests(as_yaml(CONNECTION, binding(**{"interactions.askUser": True})))

    assert rule_changes()[-1][1:] == ("spec.interactions.askUser", False, True)


def test_a_rule_the_manifest_leaves_out_when_unset_is_audited_to_and_from_none(monkeypatch):
    def rules(spec) -> dict[str, Any]:  # as a manifest writes remindBefore only when it is set
        timeout = manifest.format_duration(spec.interactions.timeout)
        return {"remindBefore": "10m"} if timeout == "2h" else {}

    monkeypatch.setattr(audited_rules, "approval_rules", rules)
    services.apply_manifests(as_yaml(CONNECTION, binding()))
    services.apply_manifests(as_yaml(CONNECTION, binding(**{"interactions.timeout": "2h"})))
    services.apply_manifests(as_yaml(CONNECTION, binding()))

    assert [change[1:] for change in rule_changes()] == [
        ("spec.interactions.remindBefore", None, "10m"),
        ("spec.interactions.remindBefore", "10m", None),
    ]


def test_apply_without_a_login_name_is_audited_by_its_uid(monkeypatch):
    def no_login_name() -> str:
        raise KeyError("getpwuid(): uid not found")

    monkeypatch.setattr("getpass.getuser", no_login_name)

    assert services.apply_actor() == f"apply:uid {os.getuid()}"


def test_no_secret_value_reaches_the_audit(monkeypatch, settings):
    from audit.models import AuditEvent

    settings.AGENT_HEADER_VARIABLES = ["OPS_AGENT_TOKEN"]
    monkeypatch.setenv("OPS_AGENT_TOKEN", "Bearer s3cr3t-agent-token")
    headers = {"Authorization": {"fromEnv": "OPS_AGENT_TOKEN"}}

    services.apply_manifests(
        as_yaml(CONNECTION, binding(agent={"url": "http://a.example/", "headers": headers}))
    )
    services.apply_manifests(
        as_yaml(
            CONNECTION,
            binding(agent={"url": "http://b.example/", "headers": headers}, **{"interactions.timeout": "1h"}),
        )
    )

    written = repr(list(AuditEvent.objects.values_list()))
    assert "OPS_AGENT_TOKEN" in written  # the variable is named
    assert "s3cr3t" not in written
