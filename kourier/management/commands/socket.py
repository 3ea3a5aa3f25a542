"""Socket Mode: receives Slack's events over a websocket instead of a public URL.

Runs one connection per Connection that has an app token (appToken in its manifest), with the same
listeners as POST /slack/events. Run it as its own long-lived process beside the workers.
"""

import asyncio
import logging

from django.core.management.base import BaseCommand, CommandError
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler

from bindings.models import Connection
from kourier.metrics_endpoint import serve_process_metrics
from kourier.queue import import_task_modules
from kourier.slack.listeners import bolt_app_for

logger = logging.getLogger(__name__)


def socket_mode_connections() -> list[Connection]:
    return [connection for connection in Connection.objects.order_by("name") if connection.app_token_env]


class Command(BaseCommand):
    help = "Receive Slack events over Socket Mode for every Connection with an app token."

    def handle(self, *args, **options):
        connections = socket_mode_connections()
        if not connections:
            raise CommandError("No Connection has an appToken; Socket Mode has nothing to connect.")
        handlers = []
        for connection in connections:
            app_token = connection.app_token()
            if not app_token:
                raise CommandError(f'Connection "{connection.name}": {connection.app_token_env} is not set.')
            handlers.append(AsyncSocketModeHandler(bolt_app_for(connection), app_token))
            self.stdout.write(f'Socket Mode: connecting Connection "{connection.name}"')
        import_task_modules()  # as the web process: its first event is not held up by the import
        serve_process_metrics("socket")  # when METRICS_PORT is set: no web process adds it up
        asyncio.run(self._run(handlers))

    async def _run(self, handlers: list[AsyncSocketModeHandler]) -> None:
        await asyncio.gather(*(handler.start_async() for handler in handlers))
