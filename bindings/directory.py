"""Connections and the Binding of each channel, as Slack ingress reads them: from a per-process snapshot.

Every Slack event needs its Connection and its channel's Binding; reading both from the database for
each event was a large part of an event's cost. The snapshot is read in one go and kept for
``BINDINGS_CACHE_SECONDS`` (default 5): an edit made by the admin or ``manage.py apply`` reaches every
process within that window, and the process that made it at once (model signals drop its snapshot).
Until then a process may route a message with the Binding's previous settings.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from django.conf import settings
from django.db import transaction
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from kourier.db import in_database_thread

from .models import Binding, BindingChannel, Connection


@dataclass(frozen=True)
class Directory:
    read_at: float
    connections: tuple[Connection, ...]
    by_name: dict[str, Connection]
    by_id: dict[int, Connection]
    bindings: dict[tuple[int, str], Binding]  # (connection id, channel id) → the channel's Binding
    by_binding_name: dict[str, Binding] = field(default_factory=dict)  # Bindings with a channel
    direct_messages: dict[int, Binding] = field(default_factory=dict)  # connection id → its DM Binding

    def binding_for_channel(self, connection_id: int, channel_id: str) -> Binding | None:
        return self.bindings.get((connection_id, channel_id))

    def binding_for_direct_messages(self, connection_id: int) -> Binding | None:
        return self.direct_messages.get(connection_id)


# Read by ingress for every event; replaced whole, never changed in place, so threads need no lock.
_directory: Directory | None = None
clock: Callable[[], float] = time.monotonic


def _is_fresh(directory: Directory | None) -> bool:
    return directory is not None and clock() - directory.read_at < settings.BINDINGS_CACHE_SECONDS


def _read() -> Directory:
    global _directory
    read_at = clock()
    connections = tuple(Connection.objects.order_by("name"))
    by_id = {connection.pk: connection for connection in connections}
    bindings: dict[int, Binding] = {}
    by_channel: dict[tuple[int, str], Binding] = {}
    for channel in BindingChannel.objects.select_related("binding"):
        binding = bindings.get(channel.binding_id)
        if binding is None:
            binding = bindings[channel.binding_id] = channel.binding
            binding.connection = by_id[binding.connection_id]
        by_channel[(channel.connection_id, channel.channel_id)] = binding
    direct_messages: dict[int, Binding] = {}
    for binding in Binding.objects.filter(direct_messages__isnull=False):
        binding.connection = by_id[binding.connection_id]
        direct_messages[binding.connection_id] = binding
    directory = Directory(
        read_at=read_at,
        connections=connections,
        by_name={connection.name: connection for connection in connections},
        by_id=by_id,
        bindings=by_channel,
        by_binding_name={binding.name: binding for binding in bindings.values()},
        direct_messages=direct_messages,
    )
    _directory = directory
    return directory


def current() -> Directory:
    """The snapshot, read again when it is older than BINDINGS_CACHE_SECONDS."""
    directory = _directory
    if _is_fresh(directory):
        assert directory is not None
        return directory
    with transaction.atomic():  # both reads see one state of the rows
        return _read()


async def acurrent() -> Directory:
    """``current()`` for async code: only a stale snapshot costs a hop to a thread."""
    directory = _directory
    if _is_fresh(directory):
        assert directory is not None
        return directory
    return await in_database_thread(current)()  # a connection the database dropped is replaced


def forget() -> None:
    """Drops the snapshot: the next lookup reads the database."""
    global _directory
    _directory = None


@receiver(post_save, sender=Connection)
@receiver(post_delete, sender=Connection)
@receiver(post_save, sender=Binding)
@receiver(post_delete, sender=Binding)
@receiver(post_save, sender=BindingChannel)
@receiver(post_delete, sender=BindingChannel)
def _forget_on_change(sender, **kwargs) -> None:
    forget()
    # A lookup between the write and its commit would read the old rows again and keep them.
    transaction.on_commit(forget)
