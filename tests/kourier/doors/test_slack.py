"""Slack's door, served ahead of Django: which requests it refuses, and what else it passes on.

Requests that reach Bolt's listeners (and Slack's auth.test) are in tests/e2e/test_ingress.py, and
signed bodies the door cannot read in tests/e2e/test_bad_input.py.
"""

import json
import time

import pytest

from bindings import directory
from kourier.http_routes import http_routes
from sessions.models import Turn
from simulator.events import signed_headers
from tests.factories import ConnectionFactory
from tests.support.web_routes import Django, request

pytestmark = [pytest.mark.anyio, pytest.mark.django_db]

SECRET = "ingress-test-signing-secret"
URL_VERIFICATION = json.dumps({"type": "url_verification", "challenge": "c-123"}).encode()
MENTION = json.dumps({"type": "event_callback", "team_id": "T1", "event_id": "Ev1", "event": {
    "type": "app_mention", "user": "U0ADA", "text": "<@U0BOT> hi", "ts": "1700000000.000100",
    "channel": "C1"}}).encode()  # fmt: skip


@pytest.fixture
def acme(monkeypatch):
    monkeypatch.setenv("INGRESS_BOT_TOKEN", "xoxb-ingress")
    monkeypatch.setenv("INGRESS_SIGNING_SECRET", SECRET)
    connection = ConnectionFactory(
        name="acme", bot_token_env="INGRESS_BOT_TOKEN", signing_secret_env="INGRESS_SIGNING_SECRET"
    )
    directory.current()  # read here, in the test's transaction; the handler then needs no thread
    return connection


def signed(body: bytes, mode="valid", secret: str = SECRET) -> dict[str, str]:
    return signed_headers(secret, body, now=time.time(), mode=mode)


async def test_every_other_path_goes_to_django():
    django = Django()
    for path in ["/healthz", "/admin/", "/slack/events/", "/slack/eventsx", "/slack/events/a/b"]:
        status, _, _ = await request(path, django=django)
        assert status == 204
    assert django.paths == ["/healthz", "/admin/", "/slack/events/", "/slack/eventsx", "/slack/events/a/b"]


@pytest.mark.parametrize("path", ["/slack/events", "/slack/events/acme"])
async def test_only_post_is_allowed(acme, path):
    status, headers, _ = await request(path, method="GET")
    assert (status, headers["allow"]) == (405, "POST")


@pytest.mark.parametrize("mode", ["forged", "missing", "stale"])
@pytest.mark.parametrize("path", ["/slack/events", "/slack/events/acme"])
async def test_a_request_slack_did_not_sign_is_refused_and_nothing_is_stored(acme, path, mode):
    status, _, _ = await request(path, MENTION, headers=signed(MENTION, mode))
    assert status == 401
    assert not await Turn.objects.aexists()


async def test_an_unknown_connection_gets_the_answer_a_forged_signature_gets(acme):
    unknown = await request("/slack/events/nobody", URL_VERIFICATION, headers=signed(URL_VERIFICATION))
    forged = await request("/slack/events", URL_VERIFICATION, headers=signed(URL_VERIFICATION, "forged"))
    assert unknown == forged
    assert (unknown[0], json.loads(unknown[2])) == (401, {"error": "invalid request"})


async def test_a_connection_whose_secret_is_not_set_answers_as_an_unknown_name_and_tells_the_operator(
    acme, monkeypatch, caplog
):
    monkeypatch.delenv("INGRESS_SIGNING_SECRET")

    secretless = await request("/slack/events/acme", URL_VERIFICATION, headers=signed(URL_VERIFICATION))
    unknown = await request("/slack/events/nobody", URL_VERIFICATION, headers=signed(URL_VERIFICATION))

    assert secretless == unknown
    assert (secretless[0], json.loads(secretless[2])) == (401, {"error": "invalid request"})
    [misconfigured] = [r for r in caplog.records if r.message == "slack.connection_misconfigured"]
    assert (misconfigured.levelname, misconfigured.connection) == ("ERROR", "acme")


@pytest.fixture
def public_secret(acme, monkeypatch):
    """A Connection whose signing secret reads HOME: written around apply and the admin, which refuse
    it (bindings/secret_variables.py), as anyone who knows HOME's value could sign as Slack."""
    monkeypatch.setenv("HOME", "/home/kourier")
    ConnectionFactory(name="forged", bot_token_env="INGRESS_BOT_TOKEN", signing_secret_env="HOME")
    directory.current()
    return "/home/kourier"


async def test_a_signing_secret_pointed_at_a_public_variable_verifies_nothing(public_secret):
    forged = signed(URL_VERIFICATION, secret=public_secret)

    named = await request("/slack/events/forged", URL_VERIFICATION, headers=forged)
    found = await request("/slack/events", URL_VERIFICATION, headers=forged)

    unknown = await request("/slack/events/nobody", URL_VERIFICATION, headers=forged)
    assert (named[0], named[2]) == (unknown[0], unknown[2])  # a secret read as not set: as an unknown name
    assert named[0] == found[0] == 401


@pytest.mark.parametrize("path", ["/slack/events", "/slack/events/acme"])
async def test_url_verification_is_answered_by_the_connection_that_signed_it(acme, path):
    status, _, body = await request(path, URL_VERIFICATION, headers=signed(URL_VERIFICATION))
    assert status == 200
    assert "c-123" in body.decode()


async def test_a_body_larger_than_django_takes_is_refused(acme, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 100
    big = json.dumps({"type": "url_verification", "challenge": "x" * 200}).encode()
    status, _, _ = await request("/slack/events", big, headers=signed(big))
    assert status == 413


async def test_a_body_arriving_in_parts_is_read_whole(acme):
    parts = [URL_VERIFICATION[:10], URL_VERIFICATION[10:20], URL_VERIFICATION[20:]]
    status, _, body = await request("/slack/events", parts, headers=signed(URL_VERIFICATION))
    assert (status, json.loads(body)) == (200, {"challenge": "c-123"})


async def test_a_body_is_refused_at_the_part_that_passes_the_limit_and_the_rest_is_not_read(acme, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 100
    parts = [b"x" * 60, b"x" * 60, b"never read"]
    scope = {"type": "http", "method": "POST", "path": "/slack/events", "query_string": b"", "headers": []}
    received: list[bytes] = []
    sent: list[dict] = []

    async def receive():
        part = parts[len(received)]
        received.append(part)
        return {"type": "http.request", "body": part, "more_body": len(received) < len(parts)}

    async def send(message):
        sent.append(message)

    await http_routes(Django())(scope, receive, send)
    assert sent[0]["status"] == 413
    assert len(received) == 2


async def test_a_signed_body_the_door_cannot_read_is_a_bad_request(acme):
    body = b"{not json"
    status, _, answer = await request("/slack/events/acme", body, headers=signed(body))
    assert (status, json.loads(answer)) == (400, {"error": "unreadable request"})


async def test_an_unsigned_body_the_door_cannot_read_is_refused_before_it_is_read(acme):
    body = b"{not json"
    status, _, _ = await request("/slack/events/acme", body, headers=signed(body, "forged"))
    assert status == 401
