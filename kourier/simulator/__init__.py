"""The workspace simulator: a faithful emulation of Slack, a real HTTP server that slack_sdk clients talk to.

One Slack for two uses: the tests' fake of Slack (the ``slack_fake`` fixture in
tests/fakes/slack_fixtures.py) and the local workspace `make serve` offers when no Slack app is
configured. Start with ``SlackFake`` (fake.py). Behaviour follows
/work/shared/research/slack.md; see the module docstrings for what each part enforces.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from . import defaults
    from .clock import Clock, ManualClock, SystemClock
    from .delivery import Delivery
    from .errors import FakeMisuse, SlackError
    from .fake import SlackFake
    from .faults import Fault
    from .pipeline import RecordedCall
    from .views import CardView, EphemeralView, MessageView

# Where each name lives. They are imported on first use: the product's web process imports this
# package for the page's views only (kourier/urls.py), and the emulation itself costs a third of a
# second of start-up that such a process never needs.
_HOMES = {
    "CardView": ".views",
    "Clock": ".clock",
    "Delivery": ".delivery",
    "EphemeralView": ".views",
    "FakeMisuse": ".errors",
    "Fault": ".faults",
    "ManualClock": ".clock",
    "MessageView": ".views",
    "RecordedCall": ".pipeline",
    "SlackError": ".errors",
    "SlackFake": ".fake",
    "SystemClock": ".clock",
}


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(importlib.import_module(_HOMES[name], __name__), name)
    if name == "defaults":
        return importlib.import_module(".defaults", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
