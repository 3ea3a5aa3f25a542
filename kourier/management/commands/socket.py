"""Socket Mode: receives Slack's events over websockets instead of at a public URL.

Runs a link (kourier/slack/socket_mode.py) per Connection that has an app token (appToken in its
manifest), with the same listeners as POST /slack/events. Run it as its own long-lived process
beside the workers; several replicas share the Connection's envelopes (Slack spreads them over an
app's open websockets, up to ten).

It starts and stops like a service: a database it cannot reach, a missing or refused app token is
one line on stderr and exit status 1 (never a loop of tracebacks); SIGTERM or SIGINT stops taking
envelopes, finishes and acks the ones held (within --grace-seconds) and exits 0.
"""

import asyncio
import logging
import signal

from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError

from bindings.models import Connection, MissingSecret
from kourier.doors.slack_listeners import bolt_app_for
from kourier.metrics_endpoint import serve_process_metrics
from kourier.queue import import_task_modules
from kourier.slack.clients import async_web_client, connection_workspace
from kourier.slack.socket_mode import SocketModeLink, SocketModeRefused

logger = logging.getLogger(__name__)

DEFAULT_GRACE_SECONDS = 20.0  # under Kubernetes' default 30 s between SIGTERM and SIGKILL


def socket_mode_connections() -> list[Connection]:
    return [connection for connection in Connection.objects.order_by("name") if connection.app_token_env]


class Command(BaseCommand):
    help = "Receive Slack events over Socket Mode for every Connection with an app token."

    def add_arguments(self, parser):
        parser.add_argument(
            "--grace-seconds",
            type=float,
            default=DEFAULT_GRACE_SECONDS,
            help="On SIGTERM, how long to finish the envelopes held before exiting.",
        )

    def handle(self, *args, grace_seconds: float = DEFAULT_GRACE_SECONDS, **options):
        try:
            connections = socket_mode_connections()
        except DatabaseError as exc:
            first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise CommandError(f"The database is not reachable: {first_line}") from None
        if not connections:
            raise CommandError("No Connection has an appToken; Socket Mode has nothing to connect.")
        plans = []
        for connection in connections:
            try:
                app_token = connection.app_token() or ""
                app = bolt_app_for(connection)
            except MissingSecret as exc:
                raise CommandError(f'Connection "{connection.name}": {exc}') from None
            plans.append((connection, app, app_token))
            self.stdout.write(f'Socket Mode: connecting Connection "{connection.name}"')
        import_task_modules()  # as the web process: its first event is not held up by the import
        serve_process_metrics("socket")  # when METRICS_PORT is set: no web process adds it up
        try:
            # The links, their aiohttp sessions and websockets are made inside the running loop.
            asyncio.run(self._run(plans, grace_seconds))
        except SocketModeRefused as refused:
            raise CommandError(str(refused)) from None
        self.stdout.write("Socket Mode: stopped.")

    async def _run(self, plans, grace_seconds: float) -> None:
        links = [
            SocketModeLink(
                connection.name,
                app,
                app_token,
                async_web_client(None, workspace=connection_workspace(connection.pk)),
            )
            for connection, app, app_token in plans
        ]
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, self._stop, links)
        runs = [asyncio.create_task(link.run(grace_seconds)) for link in links]
        try:
            for finished in asyncio.as_completed(runs):
                await finished  # a refusal ends them all: the process says why and exits
        finally:
            self._stop(links)
            await asyncio.gather(*runs, return_exceptions=True)

    def _stop(self, links: list[SocketModeLink]) -> None:
        for link in links:
            link.stop()
