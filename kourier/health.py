"""Liveness and readiness probes."""

from asgiref.sync import sync_to_async
from django.http import HttpRequest, JsonResponse

from kourier import readiness


async def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


async def readyz(request: HttpRequest) -> JsonResponse:
    problems = await sync_to_async(readiness.problems)()
    if problems:
        return JsonResponse({"status": "unavailable", "reasons": problems}, status=503)
    return JsonResponse({"status": "ok"})
