"""The Django cache (Redis, shared by every process) for async code.

Django's own ``cache.aget`` and friends run on asgiref's one shared thread (``thread_sensitive``),
so under hundreds of live turns every lookup of every turn queues behind the others, and a budget
decided on a stale clock no longer paces anything. These run on the event loop's executor instead:
the cache's Redis client is thread-safe.
"""

from typing import Any

from asgiref.sync import sync_to_async
from django.core.cache import cache


def _count(key: str, ttl: int) -> int:
    cache.add(key, 0, ttl)
    return cache.incr(key)


async def aget(key: str) -> Any:
    return await sync_to_async(cache.get, thread_sensitive=False)(key)


async def aset(key: str, value: Any, ttl: int) -> None:
    await sync_to_async(cache.set, thread_sensitive=False)(key, value, ttl)


async def acount(key: str, ttl: int) -> int:
    """Adds one to a counter that lives ``ttl`` seconds from its first count; the count so far."""
    return await sync_to_async(_count, thread_sensitive=False)(key, ttl)
