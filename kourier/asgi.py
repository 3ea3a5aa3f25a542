import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kourier.settings")
django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter  # noqa: E402  (needs Django set up first)

from kourier.slack.ingress import serve_slack_events_ahead_of  # noqa: E402

# Slack's events skip Django's middleware and request thread (kourier/slack/ingress.py); the health
# checks and the admin go to Django.
application = ProtocolTypeRouter({"http": serve_slack_events_ahead_of(django_asgi_app)})
