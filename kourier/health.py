"""Liveness and readiness probes."""

import redis
from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse


async def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


def _database_problem() -> str | None:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception as exc:
        return f"database unreachable: {type(exc).__name__}"
    return None


def _redis_problem() -> str | None:
    try:
        client = redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=2, socket_timeout=2)
        try:
            client.ping()
        finally:
            client.close()
    except Exception as exc:
        return f"redis unreachable: {type(exc).__name__}"
    return None


async def readyz(request: HttpRequest) -> JsonResponse:
    problems = [
        p for p in (await sync_to_async(_database_problem)(), await sync_to_async(_redis_problem)()) if p
    ]
    if problems:
        return JsonResponse({"status": "unavailable", "reasons": problems}, status=503)
    return JsonResponse({"status": "ok"})
