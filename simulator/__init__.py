"""The workspace simulator: a faithful emulation of Slack, a real HTTP server that slack_sdk clients talk to.

One Slack for two uses: the tests' fake of Slack (the ``slack_fake`` fixture in
tests/fakes/slack_fixtures.py) and the local workspace `make serve` offers when no Slack app is
configured. Start with ``SlackFake`` (fake.py). Behaviour follows Slack's documented Web API and
limits, summed up in docs/slack-platform.md; see the module docstrings for what each part enforces.

It is Slack, the other side of the wire: it imports nothing of the product, and no product process
imports it (the web processes serve its page from kourier/simulator_page.py and speak to it over HTTP).
"""

from . import defaults
from .clock import Clock, ManualClock, SystemClock
from .delivery import Delivery
from .errors import FakeMisuse, SlackError
from .fake import SlackFake
from .faults import Fault
from .pipeline import RecordedCall
from .views import CardView, EphemeralView, MessageView

__all__ = [
    "CardView",
    "Clock",
    "Delivery",
    "EphemeralView",
    "FakeMisuse",
    "Fault",
    "ManualClock",
    "MessageView",
    "RecordedCall",
    "SlackError",
    "SlackFake",
    "SystemClock",
    "defaults",
]
