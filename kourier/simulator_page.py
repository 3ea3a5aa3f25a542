"""The simulator's web page on the product's web port (/simulator/): the page itself, its script and
style, and its JSON API, forwarded to the workspace simulator (simulator/control.py), where the
workspace lives in a process of its own. This module never imports the simulator: it speaks to it
over HTTP only.

Served only while `manage.py serve` runs the simulator: it sets SIMULATOR_URL, the fake's address on
127.0.0.1, and SIMULATOR_TOKEN, made for the run, for its processes; without both every path here is
a 404, and the fake answers only requests that carry the token (simulator/control.py), so a page
whose run has ended forwards to nothing that answers. Plain HTML, CSS and JavaScript from
templates/simulator/, no build step. The fake's answers, refusals included, pass through unchanged.
"""

from __future__ import annotations

from pathlib import Path

import httpx
from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.middleware.csrf import get_token
from django.views.decorators.http import require_http_methods

PAGE_DIR = Path(__file__).resolve().parent.parent / "templates" / "simulator"
ASSETS = {
    "simulator.js": "text/javascript; charset=utf-8",
    "simulator.css": "text/css; charset=utf-8",
}
FORWARD_TIMEOUT_SECONDS = 30.0  # a person's action waits for the app's ack (3 s) and Slack's retries
MAX_FORWARDED_BYTES = 256 * 1024


def _fake_url() -> str:
    url = settings.SIMULATOR_URL
    if not url or not settings.SIMULATOR_TOKEN:
        raise Http404("The workspace simulator is not running.")
    return url.rstrip("/") + "/"


@require_http_methods(["GET"])
def index(request: HttpRequest) -> HttpResponse:
    _fake_url()
    get_token(request)  # the page's POSTs carry the CSRF cookie's token
    response = HttpResponse((PAGE_DIR / "index.html").read_bytes(), content_type="text/html; charset=utf-8")
    response["Cache-Control"] = "no-store"
    return response


@require_http_methods(["GET"])
def asset(request: HttpRequest, name: str) -> HttpResponse:
    _fake_url()
    if name not in ASSETS:
        raise Http404(name)
    return HttpResponse((PAGE_DIR / name).read_bytes(), content_type=ASSETS[name])


@require_http_methods(["GET", "POST"])
async def api(request: HttpRequest, name: str) -> HttpResponse:
    """Async: the page's long poll (control.py's ``wait``) holds no thread while it waits."""
    base = _fake_url()
    if len(request.body) > MAX_FORWARDED_BYTES:
        return JsonResponse(
            {"ok": False, "error": "request_too_large", "message": "The request is too large."}, status=413
        )
    try:
        async with httpx.AsyncClient(timeout=FORWARD_TIMEOUT_SECONDS) as client:
            answer = await client.request(
                request.method or "GET",
                f"{base}simulator/api/{name}",
                params=[(key, value) for key, values in request.GET.lists() for value in values],
                content=request.body if request.method == "POST" else None,
                headers={"Content-Type": "application/json", "X-Simulator-Token": settings.SIMULATOR_TOKEN},
            )
    except httpx.HTTPError:
        return JsonResponse(
            {
                "ok": False,
                "error": "simulator_unreachable",
                "message": "The workspace simulator is not answering.",
            },
            status=502,
        )
    return HttpResponse(
        answer.content,
        status=answer.status_code,
        content_type=answer.headers.get("content-type", "application/json"),
    )
