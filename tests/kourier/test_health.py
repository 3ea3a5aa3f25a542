import pytest
from django.test import override_settings

pytestmark = pytest.mark.django_db


def test_healthz_says_the_process_is_up(client):
    response = client.get("/healthz")
    assert (response.status_code, response.json()) == (200, {"status": "ok"})


def test_readyz_is_ready_when_database_and_redis_answer(client):
    response = client.get("/readyz")
    assert (response.status_code, response.json()) == (200, {"status": "ok"})


def test_readyz_names_redis_when_it_cannot_be_reached(client):
    with override_settings(REDIS_URL="redis://127.0.0.1:9/0"):
        response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json() == {"status": "unavailable", "reasons": ["redis unreachable: ConnectionError"]}
