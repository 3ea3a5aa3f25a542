import httpx
import pytest
from django.test import override_settings

from tests.support.unreachable import unreachable_database

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


@pytest.mark.django_db(transaction=True)
def test_readyz_names_the_database_when_it_cannot_be_reached(live_server):
    # Over real HTTP to a server thread, whose connection is opened while the database is unreachable.
    with unreachable_database():
        response = httpx.get(f"{live_server.url}/readyz")

    assert response.status_code == 503
    assert response.json() == {"status": "unavailable", "reasons": ["database unreachable: OperationalError"]}
