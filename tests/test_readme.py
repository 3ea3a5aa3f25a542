"""The README's examples, as written: its Prometheus configuration (valid YAML of the right shape, naming
metrics that exist and the annotations the Kubernetes manifests put on their pods), its manifests and
spec fragments (they apply), its commands (they exist and run) and its trigger curl (it opens an alert)."""

import json
import os
import re
import secrets
import subprocess
from io import StringIO
from pathlib import Path

import pytest
import yaml
from django.core.management import call_command, get_commands
from prometheus_client import REGISTRY

from bindings.models import Binding
from kourier.metrics import LiveState, LiveStateCollector
from sessions import notices
from tests.fakes.kagent_controller import KagentController
from tests.support.kustomize import KUBERNETES, listed_files, objects_of

README = Path(__file__).resolve().parents[1] / "README.md"
SUFFIXES = ("_total", "_bucket", "_count", "_sum")


def metrics_section_yaml() -> list[dict]:
    text = README.read_text()
    section = text[text.index("## Metrics") :]
    section = section[: section.index("\n## ", 1)]
    return [yaml.safe_load(block) for block in re.findall(r"```yaml\n(.*?)```", section, re.S)]


def exported_names() -> set[str]:
    names = {family.name for family in REGISTRY.collect() if family.name.startswith("kourier_")}
    return names | {family.name for family in LiveStateCollector(LiveState).collect()}


def test_the_scrape_config_sends_the_bearer_token_to_metrics():
    [scrape, _pods, _rules] = metrics_section_yaml()
    [job] = scrape["scrape_configs"]
    assert job["metrics_path"] == "/metrics"
    assert job["authorization"]["type"] == "Bearer"
    assert job["static_configs"][0]["targets"]


def relabelled(rule: dict, values: list[str]) -> str | None:
    """What a Prometheus relabel rule of the replace kind makes of its source labels' values (None when
    its regex does not match, and the target is left alone). Its regexes are anchored, as Prometheus'."""
    found = re.fullmatch(rule.get("regex", "(.*)"), rule.get("separator", ";").join(values))
    if found is None:
        return None
    return found.expand(re.sub(r"\$(\d)", r"\\\1", rule.get("replacement", "$1")))


def test_the_kubernetes_scrape_config_finds_each_pod_by_the_manifests_annotations():
    [_static, scrape, _rules] = metrics_section_yaml()
    [job] = scrape["scrape_configs"]
    rules = job["relabel_configs"]
    by_target = {rule.get("target_label"): rule for rule in rules}
    [keep] = [rule for rule in rules if rule.get("action") == "keep"]
    pods = [o for o in objects_of(listed_files(KUBERNETES / "base") + listed_files(KUBERNETES / "socket-mode"))
            if o["kind"] == "Deployment"]  # fmt: skip

    assert job["authorization"]["type"] == "Bearer"
    assert job["kubernetes_sd_configs"][0]["role"] == "pod"
    for pod in pods:
        annotations = pod["spec"]["template"]["metadata"]["annotations"]
        # Prometheus names an annotation's label with each character not allowed in a label as "_".
        meta = {
            name: "__meta_kubernetes_pod_annotation_" + re.sub(r"[^a-zA-Z0-9_]", "_", name)
            for name in annotations
        }
        assert keep["source_labels"] == [meta["prometheus.io/scrape"]]
        assert re.fullmatch(keep["regex"], annotations["prometheus.io/scrape"])
        assert by_target["__metrics_path__"]["source_labels"] == [meta["prometheus.io/path"]]
        assert relabelled(by_target["__metrics_path__"], [annotations["prometheus.io/path"]]) == "/metrics"
        address = by_target["__address__"]
        assert address["source_labels"] == ["__address__", meta["prometheus.io/port"]]
        port = annotations["prometheus.io/port"]
        assert relabelled(address, ["10.1.2.3:8000", port]) == f"10.1.2.3:{port}"
        assert relabelled(address, ["10.1.2.3", port]) == f"10.1.2.3:{port}"


def test_the_alert_rules_watch_failing_turns_and_owed_notices_by_metrics_that_exist():
    [_static, _pods, rules] = metrics_section_yaml()
    [group] = rules["groups"]
    alerts = {rule["alert"]: rule for rule in group["rules"]}
    assert set(alerts) == {"KourierTurnsFailing", "KourierNoticesOwed"}
    for rule in alerts.values():
        assert rule["for"]
        assert rule["annotations"]["summary"]
        for name in re.findall(r"\bkourier_[a-z_]+", rule["expr"]):
            base = next((name.removesuffix(s) for s in SUFFIXES if name.endswith(s)), name)
            assert base in exported_names(), f"{rule['alert']} names {name}, which is not exported"


def test_the_budget_notice_is_written_in_the_readme_word_for_word():
    assert f"> {notices.BUDGET_SPENT}\n" in README.read_text()


# -- every example of the README, as written --------------------------------------------------------

BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)
README_ENV = {
    "SLACK_BOT_TOKEN": "xoxb-readme",
    "SLACK_SIGNING_SECRET": "readme-signing-secret",
    "SLACK_APP_TOKEN": "xapp-readme",
    "OPS_TRIGGER_TOKEN": "ops-trigger-token",
    "HOOKS_TRIGGER_TOKEN": "hooks-trigger-token",
    "K8S_AGENT_AUTHORIZATION": "Bearer readme",
    "AGENT_HEADER_VARIABLES": "K8S_AGENT_AUTHORIZATION",  # as the README says to list it
}


def blocks(language: str) -> list[str]:
    return [body for found, body in BLOCK.findall(README.read_text()) if found == language]


def the_manifests() -> str:
    [manifests] = [block for block in blocks("yaml") if "kind: Connection" in block]
    return manifests


def spec_fragments() -> list[dict]:
    """The examples that show part of a resource's spec (``spec:`` at the top)."""
    return [yaml.safe_load(block)["spec"] for block in blocks("yaml") if block.startswith("spec:")]


def with_fragment(fragment: dict) -> list[dict]:
    """The README's manifests with one fragment merged into the resource whose fields it shows."""
    connection, binding = yaml.safe_load_all(the_manifests())
    target = connection if "botToken" in fragment else binding
    if "directMessages" in fragment:  # a Binding takes direct messages instead of channels
        target["spec"].pop("channels", None)
    for key, value in fragment.items():
        if key == "agent" and "kagent" in value:  # an agent by name, instead of the url
            target["spec"][key] = value
        elif isinstance(value, dict) and isinstance(target["spec"].get(key), dict):
            target["spec"][key] = {**target["spec"][key], **value}
        else:
            target["spec"][key] = value
    return [connection, binding]


def write_manifests(path: Path, documents: list[dict]) -> Path:
    path.write_text(yaml.safe_dump_all(documents))
    return path


@pytest.fixture
def readme_env(monkeypatch):
    for name, value in README_ENV.items():
        monkeypatch.setenv(name, value)


def test_every_yaml_example_is_yaml():
    assert len(blocks("yaml")) >= 10
    for block in blocks("yaml"):
        assert list(yaml.safe_load_all(block)), block


@pytest.mark.django_db
def test_the_manifests_apply_and_applying_them_again_changes_nothing(readme_env, tmp_path):
    path = tmp_path / "kourier.yaml"
    path.write_text(the_manifests())
    call_command("apply", "-f", str(path), "--dry-run", stdout=StringIO())
    assert not Binding.objects.exists()
    call_command("apply", "-f", str(path), stdout=StringIO())
    again = StringIO()
    call_command("apply", "-f", str(path), stdout=again)
    exported = StringIO()
    call_command("export", stdout=exported)

    assert Binding.objects.get().name == "ops"
    assert again.getvalue().splitlines()[-1] == "Nothing changed: 2 unchanged."
    assert [doc["metadata"]["name"] for doc in yaml.safe_load_all(exported.getvalue())] == ["acme", "ops"]


@pytest.mark.django_db
def test_every_spec_example_applies_to_the_manifests(
    readme_env, tmp_path, monkeypatch, settings, make_a2a_agent
):
    fragments = spec_fragments()
    assert len(fragments) >= 5  # asking, approvals, triggers, your own agent, Socket Mode
    # The kagent examples name an agent on a controller: a stand-in controller serves it, at the
    # address the README names (apply asks it for the card), and the fragment's agent replaces the url.
    controller = KagentController()
    controller.add("1.0", "ops", "k8s-agent", make_a2a_agent().url)
    monkeypatch.setenv("OPS_AGENT_TOKEN", "Bearer readme")
    monkeypatch.setenv("KAGENT_TOKEN", "Bearer readme")
    settings.AGENT_HEADER_VARIABLES = ["K8S_AGENT_AUTHORIZATION", "OPS_AGENT_TOKEN", "KAGENT_TOKEN"]
    try:
        for index, fragment in enumerate(fragments):
            named = fragment.get("agent", {}).get("kagent")
            if named:
                named["controller"] = controller.url
            path = write_manifests(tmp_path / f"fragment-{index}.yaml", with_fragment(fragment))
            call_command("apply", "-f", str(path), "--dry-run", stdout=StringIO())
    finally:
        controller.stop()


def test_every_manage_py_command_of_the_readme_exists():
    commands = {found for block in blocks("sh") for found in re.findall(r"manage\.py (\w+)", block)}
    assert {"apply", "export", "sweep", "migrate", "socket", "demo_agent"} <= commands
    assert commands <= set(get_commands())


@pytest.mark.django_db
def test_the_sweep_examples_run_as_written():
    listed = StringIO()
    call_command("sweep", stdout=listed)
    ran = StringIO()
    call_command("sweep", "recover-sessions", stdout=ran)
    assert "recover-sessions: " in listed.getvalue()
    assert ran.getvalue().startswith("recover-sessions: ")


@pytest.mark.slow
def test_the_trigger_curl_example_opens_an_alert_as_written(start_stack, readme_env, tmp_path):
    """The README's manifests with its triggers applied, the web process started with the token set,
    and the curl command run by a shell exactly as the README has it (only the port is this test's)."""
    [triggers] = [fragment for fragment in spec_fragments() if "triggers" in fragment]
    path = write_manifests(tmp_path / "kourier.yaml", with_fragment(triggers))
    call_command("apply", "-f", str(path), stdout=StringIO())
    stack = start_stack(env=README_ENV, workers=0)
    [curl] = [block for block in blocks("sh") if block.startswith("curl ")]
    assert "http://127.0.0.1:8000/" in curl

    done = subprocess.run(
        ["bash", "-c", curl.replace("http://127.0.0.1:8000/", f"{stack.base_url}/")],
        env={**os.environ, **README_ENV},
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "ok": True,
        "opened": 1,
        "joined": 0,
        "held": 0,
        "repeated": 0,
        "resolved": 0,
        "unchanged": 0,
    }


def test_the_production_settings_example_passes_check_deploy_as_written():
    """Run by a shell in an environment of its own (only the secret key is this test's, long and random)."""
    [example] = [block for block in blocks("sh") if "check --deploy" in block]
    said = example.rsplit("# ", 1)[1].strip()  # what the README says the check prints
    script = (
        example.replace("SECRET_KEY=…", f"SECRET_KEY={secrets.token_urlsafe(50)}")
        .replace("METRICS_TOKEN=…", f"METRICS_TOKEN={secrets.token_urlsafe(32)}")
        .replace("AUDIT_KEY=…", f"AUDIT_KEY={secrets.token_urlsafe(50)}")
    )

    done = subprocess.run(
        ["bash", "-c", script],
        cwd=README.parent,
        env={"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp")},
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == said


def test_the_undelivered_decision_notice_is_written_in_the_readme_word_for_word():
    assert f"> {notices.DECISION_UNDELIVERED}\n" in README.read_text()
