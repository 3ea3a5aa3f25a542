"""The shared cache's lookups for async code, and the scripts a Slack call's budget runs in one round trip."""

import asyncio
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

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
    """As the turn loop's executor runs cache work: on a thread of its own."""
    with ThreadPoolExecutor(max_workers=1) as thread:
        return thread.submit(work).result()


COUNTER_SCRIPT = "return redis.call('INCRBY', KEYS[1], ARGV[1])"


def test_a_script_runs_under_the_caches_key_prefix_in_one_round_trip(round_trips):
    key = f"counter-{uuid.uuid4()}"

    def runs():
        shared_cache.run_script(COUNTER_SCRIPT, [key], [1])  # the first run loads the script
        before = len(round_trips)
        counted = shared_cache.run_script(COUNTER_SCRIPT, [key], [2])
        return counted, len(round_trips) - before

    counted, trips = on_a_loop_thread(runs)
    assert (counted, trips) == (3, 1)
    # The key is the cache's (its prefix and version): the cache reads what the script wrote.
    assert shared_cache.backend().get(key) == 3


def test_lookups_from_many_turns_share_the_process_connections(monkeypatch):
    """Each turn is a task of its own, and each hop to the executor runs in a copy of its context:
    Django's context-local ``cache`` made a backend, a pool and a Redis connection per lookup there."""
    from redis.connection import AbstractConnection

    connected: list[int] = []
    handshake = AbstractConnection.on_connect_check_health  # a new connection's HELLO and SETINFO

    def counted(self, *args, **kwargs):
        connected.append(1)
        return handshake(self, *args, **kwargs)

    monkeypatch.setattr(AbstractConnection, "on_connect_check_health", counted)
    key = f"name-{uuid.uuid4()}"

    async def turn() -> None:
        for _ in range(3):
            await shared_cache.aget(key)
            await shared_cache.arun(lambda: shared_cache.run_script(COUNTER_SCRIPT, [f"n-{key}"], [1]))

    async def turns() -> None:
        # One executor thread, as the fewest the turn loop has: every lookup could use one connection.
        asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(max_workers=1))
        await asyncio.gather(*(asyncio.create_task(turn()) for _ in range(10)))

    shared_cache.backend()  # made (and connected, once) before the turns, as by a worker's first turn
    connected.clear()
    asyncio.run(turns())
    assert len(connected) <= 1  # 60 before: one per lookup


def test_a_lookup_makes_no_redis_client_of_its_own(monkeypatch):
    """Django's Redis cache made a ``redis.Redis`` (with its ~170 response callbacks) per command."""
    import redis

    key = f"name-{uuid.uuid4()}"
    shared_cache.backend().get(key)  # the process's first lookup makes the one client
    made: list[int] = []
    make = redis.Redis.__init__

    def counted(self, *args, **kwargs):
        made.append(1)
        make(self, *args, **kwargs)

    monkeypatch.setattr(redis.Redis, "__init__", counted)
    shared_cache.backend().set(key, "Ada", 30)
    assert shared_cache.backend().get(key) == "Ada"
    assert shared_cache.run_script(COUNTER_SCRIPT, [f"n-{key}"], [1]) == 1
    assert made == []
