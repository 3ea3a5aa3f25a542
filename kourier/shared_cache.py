"""The Django cache (Redis, shared by every process) for async code.

Django's own ``cache.aget`` and friends run on asgiref's one shared thread (``thread_sensitive``),
so under hundreds of live turns every lookup of every turn queues behind the others, and a budget
decided on a stale clock no longer paces anything. These run on the event loop's executor instead
(the cache's Redis client is thread-safe), with a plain ``run_in_executor``: asgiref's
``sync_to_async(thread_sensitive=False)`` does the same for about twice the CPU (docs/performance.md,
section b).

Every call here goes to one backend of the default cache for the whole process (``backend``), not
Django's ``cache``: that one is context-local (asgiref's ``Local``), and an executor hop runs in a
copy of its caller's context, so a backend made during the hop was forgotten at its end, with its
connection pool: every lookup from a turn opened a Redis connection of its own (a TCP connect, a
HELLO, two CLIENT SETINFO). With the client below, the Redis lookups went from a fifth of the
worker's Python CPU to a twentieth (docs/performance.md, issue 17 point 6, session 2).
"""

import asyncio
import contextvars
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from django.core.cache import DEFAULT_CACHE_ALIAS, caches
from django.core.cache.backends.base import BaseCache
from django.core.cache.backends.redis import RedisCache, RedisCacheClient
from django.core.signals import setting_changed

from kourier import tracing

R = TypeVar("R")


class _ClientKeepingRedisCacheClient(RedisCacheClient):
    """Django's client makes a ``redis.Redis`` for every command, and each one sets up its ~170
    response callbacks: more than half of a lookup's CPU once its connection is kept (220 -> 94 us).
    One per connection pool does for every thread (redis-py's client takes a connection from the
    pool for each command).

    Its commands are spans when tracing is on (``tracing.traced_redis``), unless ``traced`` is false:
    the bookkeeping backend below."""

    traced = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._clients: dict[int, Any] = {}

    def get_client(self, key: Any = None, *, write: bool = False) -> Any:
        pool = self._get_connection_pool(write)  # type: ignore[attr-defined]  # Django's, untyped
        client = self._clients.get(id(pool))
        if client is None:  # two threads may make one each: the first kept serves from then on
            made = self._client(connection_pool=pool)  # type: ignore[attr-defined]  # redis.Redis
            if self.traced:
                tracing.traced_redis(made)
            client = self._clients.setdefault(id(pool), made)
        return client


class ClientKeepingRedisCache(RedisCache):
    """Django's Redis cache (``CACHES``' backend) with one ``redis.Redis`` per pool, not per command."""

    def __init__(self, server: Any, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = _ClientKeepingRedisCacheClient


_backend: BaseCache | None = None
_backend_lock = threading.Lock()


def backend() -> BaseCache:
    """The process's one backend of the default cache, whichever thread or context asks: its
    connection pool (redis-py's, thread-safe) keeps the connections open between lookups.

    Its commands are Kourier's bookkeeping (budgets, counters, leases, the stop word) and make no
    spans when tracing is on (``tracing.traced_redis``); Django's ``cache`` makes them."""
    global _backend
    if _backend is None:
        with _backend_lock:
            if _backend is None:
                made = caches.create_connection(DEFAULT_CACHE_ALIAS)
                if isinstance(made, RedisCache):  # its pool made now, not by two threads at once
                    made._cache.traced = False  # type: ignore[attr-defined]  # _ClientKeepingRedisCacheClient
                    made._cache._get_connection_pool(write=True)  # type: ignore[attr-defined]
                _backend = made
    return _backend


def forget_backend() -> None:
    """The next lookup makes the backend again, from the settings as they are then (the tests' Redis)."""
    global _backend
    with _backend_lock:
        _backend = None


def _on_setting_changed(*, setting: str, **_: Any) -> None:
    if setting == "CACHES":
        forget_backend()


setting_changed.connect(_on_setting_changed)


def count(key: str, ttl: int) -> int:
    """Adds one to a counter that lives ``ttl`` seconds from its first count; the count so far.

    One command while the counter exists (INCR); the first count of a window adds it first."""
    cache = backend()
    try:
        return cache.incr(key)
    except ValueError:  # no such key yet: this is the window's first call
        cache.add(key, 0, ttl)
        return cache.incr(key)


_scripts: dict[tuple[int, str], Any] = {}


def run_script(script: str, keys: list[str], args: list[Any]) -> Any:
    """Runs a Lua script on the cache's Redis, atomically and in one round trip (EVALSHA, or EVAL
    the first time), with ``keys`` made the cache's keys (its prefix and version). Only on Redis:
    another backend raises NotImplementedError (callers keep a ledger of their own for that case)."""
    redis_cache = backend()
    if not isinstance(redis_cache, RedisCache):
        raise NotImplementedError("Lua scripts need the Redis cache")
    made = [redis_cache.make_and_validate_key(key) for key in keys]
    client = redis_cache._cache.get_client(made[0], write=True)  # type: ignore[attr-defined]  # RedisCacheClient
    runnable = _scripts.get((id(client), script))
    if runnable is None:
        runnable = _scripts.setdefault((id(client), script), client.register_script(script))
    return runnable(keys=made, args=args)


async def arun(fn: Callable[[], R]) -> R:
    """``fn`` (cache work) on the running loop's executor, with the caller's context variables."""
    return await asyncio.get_running_loop().run_in_executor(None, contextvars.copy_context().run, fn)


async def aget(key: str) -> Any:
    return await arun(lambda: backend().get(key))


async def aset(key: str, value: Any, ttl: int) -> None:
    await arun(lambda: backend().set(key, value, ttl))


async def aadd(key: str, value: Any, ttl: int) -> bool:
    """``cache.add`` for async callers: sets ``key`` unless it is set; whether this call set it."""
    return await arun(lambda: backend().add(key, value, ttl))


async def adelete(key: str) -> None:
    await arun(lambda: backend().delete(key))


async def acount(key: str, ttl: int) -> int:
    """``count`` for async callers."""
    return await arun(lambda: count(key, ttl))
