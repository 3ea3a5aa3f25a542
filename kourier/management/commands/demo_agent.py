"""Runs the demo agent on its own: a scripted kagent-v1 agent with no model and no network."""

import uvicorn
from django.core.management.base import BaseCommand

from demo_agent.server import DEFAULT_PACE_SECONDS, build_app


class Command(BaseCommand):
    help = (
        "Run the demo agent (dialect kagent-v1; no model, no network). Mention the bot with "
        '"plan a release", "restart the api" or "fail", or start an alert thread, to try each feature.'
    )
    requires_system_checks: list[str] = []  # it touches neither the database nor Slack

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1", help="Address to listen on (default 127.0.0.1).")
        parser.add_argument("--port", type=int, default=8083, help="Port to listen on (default 8083).")
        parser.add_argument(
            "--url",
            help="Where clients reach it, as its agent card says (default http://HOST:PORT/).",
        )
        parser.add_argument(
            "--pace",
            type=float,
            default=DEFAULT_PACE_SECONDS,
            help=f"Seconds between streamed chunks (default {DEFAULT_PACE_SECONDS}; 0 in tests).",
        )

    def handle(self, *args, host, port, url, pace, **options):
        url = url or f"http://{host}:{port}/"
        self.stdout.write(f"Demo agent at {url} (dialect kagent-v1)")
        self.stdout.flush()
        uvicorn.run(
            build_app(url=url, pace=pace), host=host, port=port, log_level="warning", access_log=False
        )
