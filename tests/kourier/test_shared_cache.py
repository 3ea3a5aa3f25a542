"""The shared cache's lookups for async code: what a Slack call asks of Redis before it goes."""

import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.core.cache import cache

from kourier import shared_cache


@pytest.fixture
def round_trips(monkeypatch) -> list[int]:
    """Every write of commands to Redis from now on: a pipeline is one."""
    from redis.connection import AbstractConnection

    sent: list[int] = []
    send = AbstractConnection.send_packed_command

    def counted(self, command, check_health=True):
        sent.append(1)
        return send(self, command, check_health)

    monkeypatch.setattr(AbstractConnection, "send_packed_command", counted)
    return sent


def on_a_loop_thread(work):
    """As the turn loop's executor runs cache work: on a thread of its own (with its own connection)."""
    with ThreadPoolExecutor(max_workers=1) as thread:
        return thread.submit(work).result()


def test_a_value_is_read_and_a_window_counted_in_one_round_trip(round_trips):
    block, window = f"block-{uuid.uuid4()}", f"window-{uuid.uuid4()}"

    def lookups():
        cache.set(block, 12.5, 30)
        before = len(round_trips)
        looked = [
            shared_cache.get_and_count(block, window, 20),
            shared_cache.get_and_count(f"no-{block}", window, 20),
        ]
        # Before: a GET, then EXISTS and INCR (and SET NX and EXISTS again for a new window).
        return looked, len(round_trips) - before, shared_cache.count(window, 20)

    looked, trips, counted_after = on_a_loop_thread(lookups)
    assert looked == [(12.5, 1), (None, 2)]
    assert trips == 2
    assert counted_after == 3  # the window's counter is the one ``shared_cache.count`` keeps
