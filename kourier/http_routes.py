"""What the web process serves where: Slack's requests at the door, on the event loop; the rest by Django.

Alert sources deliver at /triggers/<binding>/<trigger> (kourier/doors/alerts.py); a new door is one
more path above Django's catch-all.
"""

from collections.abc import Awaitable, Callable

from channels.routing import URLRouter
from django.urls import path, re_path

from kourier.doors.alerts import AlertDoor
from kourier.doors.slack import SlackEvents

ASGIApp = Callable[..., Awaitable[None]]


def http_routes(django_app: ASGIApp) -> URLRouter:
    slack_events = SlackEvents.as_asgi()
    return URLRouter(
        [
            # Slack's Events API and interactivity share one URL: the Connection is named in the
            # path, or found by the secret that signed the request.
            path("slack/events", slack_events),
            path("slack/events/<slug:connection>", slack_events),
            # Alert sources (Alertmanager, anything that speaks the generic shape): a bearer token.
            path("triggers/<slug:binding>/<slug:trigger>", AlertDoor.as_asgi()),
            # The admin, /healthz and /readyz: Django, with its middleware. (The stubs know views
            # only; URLRouter routes to ASGI apps.)
            re_path(r"", django_app),  # type: ignore[arg-type]
        ]
    )
