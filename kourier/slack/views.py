"""POST /slack/events (and /slack/events/<connection>): Events API and interactivity on one URL."""

import logging
from collections.abc import Sequence

from asgiref.sync import sync_to_async
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_sdk.signature import SignatureVerifier

from bindings.models import Connection, MissingSecret

from .app import bolt_app_for

logger = logging.getLogger(__name__)


def _find_connection(name: str | None, body: bytes, headers: dict[str, str]) -> Connection | None:
    """The Connection a request is for: named in the path, else the one whose signing secret signed it."""
    if name is not None:
        return Connection.objects.filter(name=name).first()
    for connection in Connection.objects.all():
        try:
            secret = connection.signing_secret()
        except MissingSecret:
            continue
        if SignatureVerifier(secret).is_valid_request(body, headers):
            return connection
    return None


@csrf_exempt
@require_POST
async def slack_events(request: HttpRequest, connection_name: str | None = None) -> HttpResponse:
    headers = {key.lower(): value for key, value in request.headers.items()}
    body = request.body
    connection = await sync_to_async(_find_connection, thread_sensitive=False)(connection_name, body, headers)
    if connection is None:
        # Unknown path, or a signature no Connection made: the same answer, so nothing is revealed.
        logger.warning("slack.request_refused", extra={"reason": "no connection verifies it"})
        return JsonResponse({"error": "invalid request"}, status=401)
    try:
        app = bolt_app_for(connection)
    except MissingSecret as exc:
        logger.error(
            "slack.connection_misconfigured", extra={"connection": connection.name, "detail": str(exc)}
        )
        return JsonResponse({"error": "connection is not configured"}, status=503)
    bolt_headers: dict[str, str | Sequence[str]] = dict(headers)
    bolt_request = AsyncBoltRequest(
        body=body.decode("utf-8"), query=request.META.get("QUERY_STRING", ""), headers=bolt_headers
    )
    bolt_response = await app.async_dispatch(bolt_request)
    response = HttpResponse(status=bolt_response.status, content=bolt_response.body.encode("utf-8"))
    for key, value in bolt_response.first_headers_without_set_cookie().items():
        response[key] = value
    return response
