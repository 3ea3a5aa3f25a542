"""GET /metrics: Prometheus' scrape of every process on this host (kourier/metrics.py), closed with a
bearer token when METRICS_TOKEN is set."""

from __future__ import annotations

import hmac

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from kourier import metrics
from kourier.live_state import read_live_state

BEARER = "Bearer "


def _authorized(request: HttpRequest) -> bool:
    token = settings.METRICS_TOKEN
    if not token:
        return True
    given = request.headers.get("Authorization", "")
    if not given.startswith(BEARER):
        return False
    return hmac.compare_digest(given[len(BEARER) :].encode(), token.encode())


@require_GET
def scrape(request: HttpRequest) -> HttpResponse:
    if not _authorized(request):
        response = HttpResponse("A bearer token is required.\n", status=401, content_type="text/plain")
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    return HttpResponse(metrics.exposition(read_live_state), content_type=metrics.CONTENT_TYPE_LATEST)
