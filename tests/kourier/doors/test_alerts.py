"""The alerts' door (kourier/doors/alerts.py), served ahead of Django at /triggers/<binding>/<trigger>: what it
refuses, with which answer, storing nothing; and what it takes, counted by alert.

Requests go through the web process's routing (kourier.http_routes), in this process."""

import json

import pytest
from asgiref.sync import sync_to_async

from alerts.models import Alert, AlertMember, AlertOccurrence, AlertPost
from alerts.payloads import MAX_GROUP_KEY_LENGTH
from bindings import directory
from kourier.http_routes import http_routes
from tests.factories import BindingFactory

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]

TOKEN_ENV = "DOOR_TRIGGER_TOKEN"
TOKEN = "door-s3cret"
TRIGGERS = [
    {"name": "grouped", "kind": "alertmanager", "token_env": TOKEN_ENV},
    {"name": "per-alert", "kind": "alertmanager", "token_env": TOKEN_ENV, "thread_per": "alert"},
    {"name": "hooks", "kind": "generic", "token_env": TOKEN_ENV},
    {"name": "unset", "kind": "generic", "token_env": "DOOR_NOT_SET"},
]


def alert(pod, *, status="firing"):
    return {
        "status": status,
        "labels": {"alertname": "PodCrashLooping", "namespace": "shop", "pod": pod},
        "annotations": {},
        "startsAt": "2026-05-01T10:00:00Z",
        "endsAt": "0001-01-01T00:00:00Z",
        "generatorURL": "",
        "fingerprint": f"fp-{pod}",
    }


def notification(*alerts, **fields):
    return {
        "version": "4",
        "groupKey": '{}:{alertname="PodCrashLooping"}',
        "truncatedAlerts": 0,
        "status": "firing",
        "receiver": "kourier",
        "groupLabels": {"alertname": "PodCrashLooping"},
        "commonLabels": {},
        "commonAnnotations": {},
        "externalURL": "http://alertmanager.example",
        "alerts": list(alerts),
        **fields,
    }


@pytest.fixture
def binding(monkeypatch):
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    monkeypatch.delenv("DOOR_NOT_SET", raising=False)
    binding = BindingFactory(name="ops", channels=["C0123456789"], triggers=TRIGGERS)
    directory.forget()
    return binding


async def post(path, body, *, token=TOKEN, method="POST"):
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    headers = [(b"content-type", b"application/json")]
    if token is not None:
        headers.append((b"authorization", f"Bearer {token}".encode()))
    scope = {"type": "http", "method": method, "path": path, "query_string": b"", "headers": headers}
    chunks = [{"type": "http.request", "body": content, "more_body": False}]
    sent: list[dict] = []

    async def receive():
        return chunks.pop(0) if chunks else {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)

    async def django(scope, receive, send):  # the door answers before Django is reached
        raise AssertionError(f"Django was handed {scope['path']}")

    await http_routes(django)(scope, receive, send)
    start, *bodies = sent
    text = b"".join(m.get("body", b"") for m in bodies)
    return start["status"], json.loads(text) if text else None


def nothing_stored():
    counts = [model.objects.count() for model in (Alert, AlertMember, AlertOccurrence, AlertPost)]
    return counts == [0, 0, 0, 0]


async def test_a_groups_notification_is_taken_and_answered_with_what_was_done(binding):
    status, answer = await post("/triggers/ops/grouped", notification(alert("web-1"), alert("web-2")))

    assert (status, answer) == (
        200,
        {"ok": True, "opened": 2, "held": 0, "joined": 0, "repeated": 0, "resolved": 0, "unchanged": 0},
    )
    assert await Alert.objects.filter(kind=Alert.Kind.GROUP).acount() == 1


async def test_a_trigger_per_alert_opens_a_thread_for_each(binding):
    status, answer = await post("/triggers/ops/per-alert", notification(alert("web-1"), alert("web-2")))

    assert (status, answer["opened"]) == (200, 2)
    assert await Alert.objects.filter(kind=Alert.Kind.ALERT).acount() == 2


@pytest.mark.parametrize(
    ("path", "token", "method", "expected"),
    [
        ("/triggers/ops/grouped", TOKEN, "GET", (405, None)),
        ("/triggers/nobody/grouped", TOKEN, "POST", (404, {"ok": False, "error": "no such trigger"})),
        ("/triggers/ops/nothing", TOKEN, "POST", (404, {"ok": False, "error": "no such trigger"})),
        ("/triggers/ops/grouped", "wrong", "POST", (401, {"ok": False, "error": "invalid token"})),
        ("/triggers/ops/grouped", None, "POST", (401, {"ok": False, "error": "invalid token"})),
        ("/triggers/ops/unset", TOKEN, "POST", (503, {"ok": False, "error": "trigger is not configured"})),
    ],
    ids=["not a POST", "unknown binding", "unknown trigger", "wrong token", "no token", "token not set"],
)
async def test_a_request_the_door_refuses_stores_nothing(binding, path, token, method, expected):
    assert await post(path, notification(alert("web-1")), token=token, method=method) == expected
    assert await _nothing_stored()


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (
            notification(alert("web-1"), groupKey=""),
            "groupKey is required: alerts are grouped by it (or set threadPer: alert)",
        ),
        (
            notification(alert("web-1"), groupKey="k" * (MAX_GROUP_KEY_LENGTH + 1)),
            f"groupKey must be at most {MAX_GROUP_KEY_LENGTH} characters (got {MAX_GROUP_KEY_LENGTH + 1})",
        ),
        (
            notification(alert("web-1"), groupLabels={"alertname": "DiskFull"}),
            'alerts[0].labels.alertname must be the group\'s "DiskFull" (got "PodCrashLooping")',
        ),
        (
            notification(alert("web-1"), truncatedAlerts=-1),
            "truncatedAlerts must be a count of alerts (got -1)",
        ),
        (b"alerts!", "the body is not JSON"),
    ],
    ids=["group key missing", "group key too long", "alert outside its group", "bad truncated", "not JSON"],
)
async def test_a_body_the_trigger_cannot_take_is_answered_400_with_the_reason_and_stores_nothing(
    binding, body, error
):
    assert await post("/triggers/ops/grouped", body) == (400, {"ok": False, "error": error})
    assert await _nothing_stored()


async def test_a_trigger_per_alert_takes_a_notification_without_a_group_key(binding):
    status, answer = await post("/triggers/ops/per-alert", notification(alert("web-1"), groupKey=""))

    assert (status, answer["opened"]) == (200, 1)


async def _nothing_stored():
    return await sync_to_async(nothing_stored)()
