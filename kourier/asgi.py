import gc
import os
import sys

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kourier.settings")
django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter  # noqa: E402  (needs Django set up first)

from kourier.http_routes import http_routes  # noqa: E402
from kourier.queue import import_task_modules  # noqa: E402
from kourier.tracing import configure as configure_tracing  # noqa: E402

# Seconds a busy thread keeps the GIL while another waits for it (Python's default: 0.005). The
# event loop is busy under load, and the thread doing ingress's database work needs the GIL back
# after every query and publish: with the default it waited up to 5 ms each time, and at 200
# events/s the web process fell behind for good (docs/performance.md, section a).
WEB_SWITCH_INTERVAL_SECONDS = 0.0005
sys.setswitchinterval(WEB_SWITCH_INTERVAL_SECONDS)

# Traces when an OTLP endpoint is configured (kourier/tracing.py); off, nothing of OpenTelemetry loads.
configure_tracing("kourier-web")

# Ingress enqueues its tasks by name; knowing them lets it publish without Celery's general path.
import_task_modules()

# What start-up made (modules, classes, settings) lives as long as the process. Frozen, the
# collector's full passes no longer walk it: they had stalled every request in flight for tens of
# ms, most of the web process's p99 at 150 new mentions/s (docs/performance.md, "Point 10").
gc.collect()
gc.freeze()

# Slack's requests skip Django's middleware and request thread (kourier/http_routes.py,
# kourier/doors/slack.py); the health checks and the admin go to Django.
application = ProtocolTypeRouter({"http": http_routes(django_asgi_app)})
