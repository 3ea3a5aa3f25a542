"""GET /metrics: Prometheus' scrape of every process on this host (kourier/metrics.py) and of the
database's counts, closed with a bearer token when METRICS_TOKEN is set. Processes without a web
process beside them serve their own (kourier/metrics_endpoint.py), without the database's counts."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from kourier import metrics
from kourier.live_state import read_live_state
from kourier.metrics_endpoint import bearer_token_matches


@require_GET
def scrape(request: HttpRequest) -> HttpResponse:
    if not bearer_token_matches(request.headers.get("Authorization", ""), settings.METRICS_TOKEN):
        response = HttpResponse("A bearer token is required.\n", status=401, content_type="text/plain")
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    return HttpResponse(metrics.exposition(read_live_state), content_type=metrics.CONTENT_TYPE_LATEST)
