"""The README's Prometheus configuration: valid YAML of the right shape, naming metrics that exist."""

import re
from pathlib import Path

import yaml
from prometheus_client import REGISTRY

from kourier.metrics import LiveState, LiveStateCollector

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
    [scrape, _rules] = metrics_section_yaml()
    [job] = scrape["scrape_configs"]
    assert job["metrics_path"] == "/metrics"
    assert job["authorization"]["type"] == "Bearer"
    assert job["static_configs"][0]["targets"]


def test_the_alert_rules_watch_failing_turns_and_owed_notices_by_metrics_that_exist():
    [_scrape, rules] = metrics_section_yaml()
    [group] = rules["groups"]
    alerts = {rule["alert"]: rule for rule in group["rules"]}
    assert set(alerts) == {"KourierTurnsFailing", "KourierNoticesOwed"}
    for rule in alerts.values():
        assert rule["for"]
        assert rule["annotations"]["summary"]
        for name in re.findall(r"\bkourier_[a-z_]+", rule["expr"]):
            base = next((name.removesuffix(s) for s in SUFFIXES if name.endswith(s)), name)
            assert base in exported_names(), f"{rule['alert']} names {name}, which is not exported"
