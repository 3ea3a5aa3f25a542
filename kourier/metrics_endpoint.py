"""A process's own /metrics, for the processes no web process adds up: on Kubernetes each worker, beat
and Socket Mode process runs in a pod of its own, with a metrics directory of its own. With
METRICS_PORT set, such a process serves Prometheus' text format on that port, from a daemon thread,
closed by the same bearer token as the web's /metrics (METRICS_TOKEN).

It serves what its multiprocess directory holds (its own files and, with Celery's prefork pool, its
children's), never the database's counts: those are read by the web processes' /metrics only, so
that however many pods are scraped, each count is reported by one kind of process, and a worker's
scrape never waits on the database.

`manage.py serve` leaves METRICS_PORT unset for its children: there the web processes add up the one
directory every process writes to.
"""

from __future__ import annotations

import hmac
import json
import logging
import os
import re
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from django.conf import settings

from kourier import metrics, readiness

logger = logging.getLogger(__name__)

BEARER = "Bearer "
PATH = "/metrics"
READYZ_PATH = "/readyz"  # unauthenticated, as the web's: the kubelet probes it (issue 34, point 4)
LISTEN_ON = "0.0.0.0"  # Prometheus scrapes the pod from another; the token closes it
# prometheus_client names a process's files <kind>_<pid>.db (gauges: gauge_<mode>_<pid>.db).
_PID_OF_FILE = re.compile(r"_(\d+)\.db$")

StartResponse = Callable[[str, list[tuple[str, str]]], Any]


def bearer_token_matches(authorization: str, token: str) -> bool:
    """Whether an Authorization header carries the token (compared in constant time); anything goes
    when no token is set."""
    if not token:
        return True
    if not authorization.startswith(BEARER):
        return False
    return hmac.compare_digest(authorization[len(BEARER) :].encode(), token.encode())


def metrics_app(token: str) -> Callable[[dict[str, Any], StartResponse], Iterable[bytes]]:
    """The WSGI application: GET /metrics, this process's directory's metrics without the live state."""

    def app(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        if environ.get("PATH_INFO") == READYZ_PATH:
            return _readyz(start_response)
        if environ.get("PATH_INFO") != PATH:
            start_response("404 Not Found", [("Content-Type", "text/plain")])
            return [b"Only /metrics and /readyz are here.\n"]
        if environ.get("REQUEST_METHOD") not in ("GET", "HEAD"):
            start_response("405 Method Not Allowed", [("Content-Type", "text/plain"), ("Allow", "GET")])
            return [b"Metrics are only read.\n"]
        if not bearer_token_matches(environ.get("HTTP_AUTHORIZATION", ""), token):
            start_response(
                "401 Unauthorized",
                [("Content-Type", "text/plain"), ("WWW-Authenticate", 'Bearer realm="metrics"')],
            )
            return [b"A bearer token is required.\n"]
        body = metrics.exposition(None)
        start_response("200 OK", [("Content-Type", metrics.CONTENT_TYPE_LATEST)])
        return [body]

    return app


def _readyz(start_response: StartResponse) -> Iterable[bytes]:
    """The process's readiness, as the web's /readyz says it: the kubelet's probe of a worker, beat or
    socket pod (each request is its own thread, whose database connection is closed after)."""
    problems = readiness.problems(close=True)
    if problems:
        start_response("503 Service Unavailable", [("Content-Type", "application/json")])
        return [json.dumps({"status": "unavailable", "reasons": problems}).encode()]
    start_response("200 OK", [("Content-Type", "application/json")])
    return [b'{"status": "ok"}']


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True  # a slow scrape never holds the process up when it stops


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass  # a line on stderr every 15 s per scraper would drown the process's own logs


class MetricsServer:
    """The endpoint, answering from a daemon thread until ``stop``."""

    def __init__(self, port: int, token: str, host: str = LISTEN_ON) -> None:
        self._server = make_server(
            host, port, metrics_app(token), server_class=_Server, handler_class=_QuietHandler
        )
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="metrics-endpoint", daemon=True
        )
        self._thread.start()

    @property
    def port(self) -> int:
        return self._server.server_port

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


def forget_other_processes(directory: str | Path, pid: int) -> list[Path]:
    """Deletes the files other processes left in this process's directory: an earlier container's
    in the same pod (an emptyDir outlives a restart), or earlier pool children's. This process's
    own are kept: prometheus_client opened them when the metrics were imported, before any hook
    that runs here, and a file deleted under it would be written to unseen. (A container restarted
    with its predecessor's pid, 1 without an init, goes on from that one's counts: they only grow.)"""
    removed = []
    for path in Path(directory).glob("*.db"):
        found = _PID_OF_FILE.search(path.name)
        if found and int(found.group(1)) != pid:
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed


def serve_process_metrics(process: str) -> MetricsServer | None:
    """Starts this process's endpoint when METRICS_PORT is set (Celery's worker_init and beat_init,
    `manage.py socket`), after clearing its directory of what earlier processes left."""
    port = settings.METRICS_PORT
    if port is None:
        return None
    directory = metrics.multiprocess_dir()
    if directory is not None:
        forget_other_processes(directory, os.getpid())
    server = MetricsServer(port, settings.METRICS_TOKEN)
    logger.info("metrics.serving", extra={"process_kind": process, "port": server.port})
    return server
