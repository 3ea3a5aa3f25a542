"""Alert threads started the way a trigger starts them, for end-to-end tests of what follows: the
alert is taken by ``alerts.services.take_alerts`` (as the door does), and the world's workers
deliver it (``deliver_alert``: the alert message through the outbox, then the thread's session)."""

from __future__ import annotations

import itertools
import time

from alerts import services
from alerts.models import Alert
from alerts.payloads import AlertStatus, ReceivedAlert
from bindings.manifest import TriggerKind, TriggerSpec
from bindings.models import Binding

GENERIC = TriggerSpec("e2e", TriggerKind.GENERIC, "KOURIER_E2E_TRIGGER_TOKEN")
_fingerprints = itertools.count(1)


def fire_alert(binding: Binding, name: str, *, channel_id: str | None = None, wait: float = 20.0) -> str:
    """Fires a new alert called ``name`` at ``binding`` and returns its thread's root ts, once posted."""
    channel_id = channel_id or binding.channel_ids()[0]
    alert = ReceivedAlert(fingerprint=f"e2e-{next(_fingerprints)}", status=AlertStatus.FIRING, title=name)
    services.take_alerts(binding, GENERIC, channel_id, [alert])
    thread = Alert.objects.filter(binding=binding, key=alert.fingerprint)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        root_ts = thread.values_list("root_ts", flat=True).first()
        if root_ts:
            return root_ts
        time.sleep(0.05)
    raise AssertionError(f"the alert {name!r} was not posted within {wait} s")


def alert_name(turn_text: str) -> str:
    """The alert's name in its first turn's text (the "name: …" line of its details)."""
    return next(line.removeprefix("name: ") for line in turn_text.splitlines() if line.startswith("name: "))
