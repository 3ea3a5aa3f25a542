"""Whether this process can do its work: the database and Redis answer. The web's /readyz
(kourier/health.py) and the /readyz beside a worker's, beat's or socket process's own /metrics
(kourier/metrics_endpoint.py) ask here, so a pod that cannot reach either is taken out of service
(issue 34, point 4)."""

from __future__ import annotations

import redis
from django.conf import settings
from django.db import connection


def database_problem(*, close: bool = False) -> str | None:
    """``close``: close this thread's connection after (a thread that lives for one request)."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception as exc:
        return f"database unreachable: {type(exc).__name__}"
    finally:
        if close:
            connection.close()
    return None


def redis_problem() -> str | None:
    try:
        client = redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=2, socket_timeout=2)
        try:
            client.ping()
        finally:
            client.close()
    except Exception as exc:
        return f"redis unreachable: {type(exc).__name__}"
    return None


def problems(*, close: bool = False) -> list[str]:
    """Why this process is not ready, or nothing."""
    return [problem for problem in (database_problem(close=close), redis_problem()) if problem]
