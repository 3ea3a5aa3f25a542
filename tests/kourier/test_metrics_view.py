"""GET /metrics: Prometheus' text format, closed with a bearer token when METRICS_TOKEN is set."""

import pytest
from prometheus_client import CONTENT_TYPE_LATEST
from prometheus_client.parser import text_string_to_metric_families

from sessions.models import Turn
from tests.factories import SessionFactory, TurnFactory

pytestmark = pytest.mark.django_db

TOKEN = "s3cret-metrics-token"


def scraped(response) -> dict[str, list]:
    return {
        family.name: family.samples for family in text_string_to_metric_families(response.content.decode())
    }


def test_metrics_are_in_prometheus_text_format_with_the_databases_counts(client):
    session = SessionFactory(binding__name="ops")
    TurnFactory(session=session)
    TurnFactory(session=session, state=Turn.State.RUNNING)

    response = client.get("/metrics")

    assert response.status_code == 200
    assert response["Content-Type"] == CONTENT_TYPE_LATEST
    found = scraped(response)
    assert [(s.labels, s.value) for s in found["kourier_turns_queued"]] == [({"binding": "ops"}, 1)]
    assert [(s.labels, s.value) for s in found["kourier_turns_running"]] == [({"binding": "ops"}, 1)]
    assert "kourier_turns_started" in found  # the processes' metrics, beside the database's


@pytest.mark.parametrize(
    "authorization", [None, "Bearer wrong-token", f"Basic {TOKEN}", f"Bearer {TOKEN}x", "Bearer "]
)
def test_with_a_token_set_a_scrape_without_it_is_refused(client, settings, authorization):
    settings.METRICS_TOKEN = TOKEN
    headers = {"Authorization": authorization} if authorization is not None else {}

    response = client.get("/metrics", headers=headers)

    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert b"kourier_" not in response.content


def test_with_a_token_set_a_scrape_that_carries_it_is_answered(client, settings):
    settings.METRICS_TOKEN = TOKEN

    response = client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})

    assert response.status_code == 200
    assert "kourier_notices_owed" in scraped(response)


def test_metrics_are_only_read(client):
    assert client.post("/metrics").status_code == 405
