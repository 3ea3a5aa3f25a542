"""The README's Prometheus configuration: valid YAML of the right shape, naming metrics that exist and
the annotations the Kubernetes manifests put on their pods."""

import re
from pathlib import Path

import yaml
from prometheus_client import REGISTRY

from kourier.metrics import LiveState, LiveStateCollector
from sessions import notices
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
