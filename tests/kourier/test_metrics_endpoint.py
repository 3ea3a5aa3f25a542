"""A process's own /metrics (kourier/metrics_endpoint.py): served over HTTP on its port, closed with
the same bearer token as the web's, from its multiprocess directory, without the database's counts."""

import os
from collections.abc import Iterator

import httpx
import pytest
from prometheus_client import CONTENT_TYPE_LATEST
from prometheus_client.parser import text_string_to_metric_families

from kourier import metrics
from kourier.metrics_endpoint import (
    MetricsServer,
    bearer_token_matches,
    forget_other_processes,
    serve_process_metrics,
)
from tests.support.metrics import run_a_process_that_records
from tests.support.unreachable import unreachable_database

TOKEN = "s3cret-metrics-token"


@pytest.fixture
def endpoint() -> Iterator[str]:
    server = MetricsServer(0, TOKEN, host="127.0.0.1")
    yield f"http://127.0.0.1:{server.port}"
    server.stop()


def scraped(response: httpx.Response) -> dict[str, list]:
    return {family.name: family.samples for family in text_string_to_metric_families(response.text)}


@pytest.mark.parametrize(
    ("authorization", "token", "matches"),
    [
        (f"Bearer {TOKEN}", TOKEN, True),
        ("", TOKEN, False),
        ("Bearer wrong-token", TOKEN, False),
        (f"Basic {TOKEN}", TOKEN, False),
        (f"Bearer {TOKEN}x", TOKEN, False),
        ("Bearer ", TOKEN, False),
        ("", "", True),  # no token set: open
        ("Bearer anything", "", True),
    ],
)
def test_a_bearer_token_matches_only_when_it_is_the_one_set(authorization, token, matches):
    assert bearer_token_matches(authorization, token) is matches


def test_a_scrape_with_the_token_gets_this_processs_metrics_without_the_databases_counts(
    endpoint, monkeypatch
):
    monkeypatch.delenv(metrics.MULTIPROC_DIR_VARIABLE, raising=False)
    metrics.turn_started("endpoint")

    response = httpx.get(f"{endpoint}/metrics", headers={"Authorization": f"Bearer {TOKEN}"})

    assert response.status_code == 200
    assert response.headers["Content-Type"] == CONTENT_TYPE_LATEST
    found = scraped(response)
    started = {
        s.labels["binding"]: s.value for s in found["kourier_turns_started"] if s.name.endswith("_total")
    }
    assert started["endpoint"] >= 1
    assert "kourier_turns_queued" not in found
    assert "kourier_notices_owed" not in found
    assert "kourier_live_state_readable" not in found


@pytest.mark.parametrize("authorization", [None, "Bearer wrong-token", f"Basic {TOKEN}"])
def test_a_scrape_without_the_token_is_refused(endpoint, authorization):
    headers = {"Authorization": authorization} if authorization is not None else {}

    response = httpx.get(f"{endpoint}/metrics", headers=headers)

    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
    assert "kourier_" not in response.text


def test_only_metrics_is_served_and_only_read(endpoint):
    authorized = {"Authorization": f"Bearer {TOKEN}"}

    assert httpx.get(f"{endpoint}/", headers=authorized).status_code == 404
    assert httpx.post(f"{endpoint}/metrics", headers=authorized).status_code == 405


@pytest.mark.slow
def test_with_a_directory_it_adds_up_the_processes_that_write_there(endpoint, tmp_path, monkeypatch):
    for _ in range(2):
        run_a_process_that_records(tmp_path, 'metrics.turn_started("pool")')
    monkeypatch.setenv(metrics.MULTIPROC_DIR_VARIABLE, str(tmp_path))

    response = httpx.get(f"{endpoint}/metrics", headers={"Authorization": f"Bearer {TOKEN}"})

    found = scraped(response)
    assert [(s.labels, s.value) for s in found["kourier_turns_started"] if s.name.endswith("_total")] == [
        ({"binding": "pool"}, 2)
    ]


def test_at_start_the_files_of_other_processes_are_deleted_and_this_ones_kept(tmp_path):
    mine = os.getpid()
    kept = [tmp_path / f"counter_{mine}.db", tmp_path / f"gauge_liveall_{mine}.db"]
    left = [tmp_path / f"counter_{mine + 1}.db", tmp_path / f"histogram_{mine + 2}.db"]
    for path in kept + left:
        path.write_bytes(b"")

    removed = forget_other_processes(tmp_path, mine)

    assert sorted(removed) == sorted(left)
    assert sorted(tmp_path.iterdir()) == sorted(kept)


def test_without_a_port_set_no_endpoint_is_started(settings):
    settings.METRICS_PORT = None

    assert serve_process_metrics("worker") is None


def test_with_a_port_set_the_endpoint_answers_there_after_clearing_the_directory(
    settings, tmp_path, monkeypatch
):
    settings.METRICS_PORT = 0  # any free port: the test reads which
    settings.METRICS_TOKEN = TOKEN
    monkeypatch.setenv(metrics.MULTIPROC_DIR_VARIABLE, str(tmp_path))
    stale = tmp_path / f"counter_{os.getpid() + 1}.db"
    stale.write_bytes(b"")

    server = serve_process_metrics("worker")
    assert server is not None
    try:
        response = httpx.get(
            f"http://127.0.0.1:{server.port}/metrics", headers={"Authorization": f"Bearer {TOKEN}"}
        )
    finally:
        server.stop()

    assert response.status_code == 200
    assert not stale.exists()


# --- /readyz: the kubelet's readiness probe of a worker, beat or socket pod (issue 34, point 4) ------


@pytest.mark.django_db(transaction=True)
def test_readyz_beside_the_metrics_is_ready_when_database_and_redis_answer(endpoint):
    response = httpx.get(f"{endpoint}/readyz")

    assert (response.status_code, response.json()) == (200, {"status": "ok"})


@pytest.mark.django_db(transaction=True)
def test_readyz_beside_the_metrics_fails_while_redis_is_unreachable(endpoint, settings):
    settings.REDIS_URL = "redis://127.0.0.1:9/0"

    response = httpx.get(f"{endpoint}/readyz")

    assert response.status_code == 503
    assert response.json() == {"status": "unavailable", "reasons": ["redis unreachable: ConnectionError"]}


@pytest.mark.django_db(transaction=True)
def test_readyz_beside_the_metrics_fails_while_the_database_is_unreachable(endpoint):
    with unreachable_database():
        response = httpx.get(f"{endpoint}/readyz")
    recovered = httpx.get(f"{endpoint}/readyz")

    assert response.status_code == 503
    assert response.json() == {"status": "unavailable", "reasons": ["database unreachable: OperationalError"]}
    assert recovered.status_code == 200
