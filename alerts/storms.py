"""A trigger's cap on new threads (``maxThreadsPerHour``) and the hour's storm thread, which lists what
arrived past it instead of a thread of its own."""

from __future__ import annotations

import logging
from datetime import datetime

from django.db.models import F

from bindings.manifest import TriggerSpec
from bindings.models import Binding
from kourier.db import insert_unless_taken

from . import messages, owed
from .models import Alert, ThreadAllowance

logger = logging.getLogger(__name__)


def _hour(now: datetime) -> datetime:
    return now.replace(minute=0, second=0, microsecond=0)


def take_allowance(binding: Binding, trigger: TriggerSpec, now: datetime) -> bool:
    """Takes one of the trigger's threads for this hour, if one is left: a conditional update, so of
    two deliveries at once only one takes the last."""
    allowance = ThreadAllowance(binding=binding, trigger=trigger.name, hour=_hour(now))
    insert_unless_taken(allowance, ("binding", "trigger", "hour"))
    taken = ThreadAllowance.objects.filter(
        binding=binding, trigger=trigger.name, hour=_hour(now), opened__lt=trigger.max_threads_per_hour
    ).update(opened=F("opened") + 1)
    return bool(taken)


def storm_thread(binding: Binding, trigger: TriggerSpec, channel_id: str, now: datetime) -> Alert:
    """The trigger's storm thread for this hour, opened (owing its root message) by the first group held."""
    of_trigger = {"binding": binding, "trigger": trigger.name, "key": f"storm:{_hour(now):%Y-%m-%dT%H}"}
    storm = Alert.objects.select_for_update().filter(**of_trigger, state=Alert.State.FIRING).first()
    if storm is not None:
        return storm
    storm = Alert.objects.create(
        **of_trigger,
        kind=Alert.Kind.STORM,
        title="Alert storm",
        channel_id=channel_id,
        first_fired_at=now,
        message_text=messages.storm_message(trigger.name, trigger.max_threads_per_hour),
    )
    owed.owe_message(storm)
    logger.warning("alert.storm", extra={"alert_id": storm.pk, "binding": binding.name})
    return storm
