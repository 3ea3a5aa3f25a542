"""The metrics' definitions and how they add up across processes (kourier/metrics.py)."""

import socket
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families

from kourier import metrics
from kourier.metrics import LiveState, LiveStateCollector
from tests.support.metrics import run_a_process_that_records, sample

REPO_ROOT = Path(__file__).resolve().parents[2]
HOST = socket.gethostname()


def families(exposition: bytes) -> dict[str, list]:
    """Samples by metric family name, from Prometheus' text format."""
    return {family.name: family.samples for family in text_string_to_metric_families(exposition.decode())}


def values(samples, name: str) -> dict[tuple, float]:
    return {tuple(sorted(s.labels.items())): s.value for s in samples if s.name == name}


def test_a_turns_end_is_counted_by_binding_and_outcome_and_its_duration_observed():
    ended = sample("kourier_turns_ended_total", binding="ops", outcome="unreachable", failed="true")
    observed = sample("kourier_turn_duration_seconds_count", binding="ops")

    metrics.turn_ended("ops", "unreachable", failed=True, started_at=timezone.now() - timedelta(seconds=3))

    assert (
        sample("kourier_turns_ended_total", binding="ops", outcome="unreachable", failed="true") == ended + 1
    )
    assert sample("kourier_turn_duration_seconds_count", binding="ops") == observed + 1


def test_a_time_measured_against_another_hosts_clock_is_never_negative():
    in_the_future = timezone.now() + timedelta(seconds=5)
    below_zero_bucket = sample("kourier_turn_acknowledgment_seconds_bucket", le="0.1")
    total = sample("kourier_turn_acknowledgment_seconds_sum")

    metrics.turn_acknowledged(in_the_future)

    assert sample("kourier_turn_acknowledgment_seconds_bucket", le="0.1") == below_zero_bucket + 1
    assert sample("kourier_turn_acknowledgment_seconds_sum") == total


def test_a_sweep_that_recovered_nothing_adds_no_series():
    metrics.recovered("nothing-at-all", 0)
    assert REGISTRY.get_sample_value("kourier_recoveries_total", {"kind": "nothing-at-all"}) is None


def test_the_live_state_is_reported_by_binding():
    state = LiveState(
        turns_queued={"ops": 3, "support": 1},
        turns_running={"ops": 1},
        interactions_pending={("ops", "approval"): 2},
        notices_owed=4,
    )
    collected = {family.name: family.samples for family in LiveStateCollector(lambda: state).collect()}

    assert values(collected["kourier_turns_queued"], "kourier_turns_queued") == {
        (("binding", "ops"),): 3,
        (("binding", "support"),): 1,
    }
    assert values(collected["kourier_turns_running"], "kourier_turns_running") == {(("binding", "ops"),): 1}
    assert values(collected["kourier_interactions_pending"], "kourier_interactions_pending") == {
        (("binding", "ops"), ("kind", "approval")): 2
    }
    assert values(collected["kourier_notices_owed"], "kourier_notices_owed") == {(): 4}
    assert values(collected["kourier_live_state_readable"], "kourier_live_state_readable") == {(): 1}


def test_a_database_that_cannot_be_read_leaves_the_live_state_out_and_says_so():
    def unreadable() -> LiveState:
        raise ConnectionError("database is down")

    collected = {family.name: family.samples for family in LiveStateCollector(unreadable).collect()}

    assert set(collected) == {"kourier_live_state_readable"}
    assert values(collected["kourier_live_state_readable"], "kourier_live_state_readable") == {(): 0}


def test_without_a_multiprocess_directory_this_process_alone_is_reported(monkeypatch):
    monkeypatch.delenv(metrics.MULTIPROC_DIR_VARIABLE, raising=False)
    metrics.turn_started("solo")

    found = families(metrics.exposition(LiveState))

    assert values(found["kourier_turns_started"], "kourier_turns_started_total")[(("binding", "solo"),)] >= 1
    assert values(found["kourier_notices_owed"], "kourier_notices_owed") == {(): 0}


@pytest.mark.slow
def test_a_scrape_adds_up_the_processes_of_the_host_and_forgets_the_live_gauges_of_dead_ones(
    tmp_path, monkeypatch
):
    first = run_a_process_that_records(tmp_path, 'metrics.turn_started("ops"); metrics.sessions_running(2)')
    second = run_a_process_that_records(tmp_path, 'metrics.turn_started("ops"); metrics.sessions_running(5)')
    monkeypatch.setenv(metrics.MULTIPROC_DIR_VARIABLE, str(tmp_path))

    found = families(metrics.exposition(LiveState))

    assert values(found["kourier_turns_started"], "kourier_turns_started_total") == {(("binding", "ops"),): 2}
    assert values(found["kourier_worker_sessions_running"], "kourier_worker_sessions_running") == {
        (("host", HOST), ("pid", str(first))): 2,
        (("host", HOST), ("pid", str(second))): 5,
    }

    metrics.mark_process_dead(first, str(tmp_path))
    found = families(metrics.exposition(LiveState))

    assert values(found["kourier_worker_sessions_running"], "kourier_worker_sessions_running") == {
        (("host", HOST), ("pid", str(second))): 5
    }
    assert values(found["kourier_turns_started"], "kourier_turns_started_total") == {(("binding", "ops"),): 2}


def test_agent_tokens_are_counted_by_binding_and_direction():
    before_in = sample("kourier_agent_tokens_total", binding="ops", direction="input")
    before_out = sample("kourier_agent_tokens_total", binding="ops", direction="output")

    metrics.agent_tokens("ops", input_tokens=150, output_tokens=10)

    assert sample("kourier_agent_tokens_total", binding="ops", direction="input") == before_in + 150
    assert sample("kourier_agent_tokens_total", binding="ops", direction="output") == before_out + 10
