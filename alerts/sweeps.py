"""The alerts app's sweep: alert posts left owed by a worker that died (kourier/sweeps.py)."""

from django.utils import timezone

from kourier import metrics
from kourier.queue import enqueue_after_commit
from kourier.sweeps import Swept, sweep

from .delivery import alerts_owing_posts
from .task_names import DELIVER_ALERT


@sweep("deliver-alerts")
def deliver_alerts() -> Swept:
    owing = alerts_owing_posts(timezone.now())
    for alert_id in owing:
        enqueue_after_commit(DELIVER_ALERT, alert_id)
    metrics.recovered(metrics.Recovery.ALERT, len(owing))
    return Swept({"alerts delivered": len(owing)})
