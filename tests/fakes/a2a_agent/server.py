"""Serving an ASGI app with uvicorn on its own thread and event loop, on 127.0.0.1."""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

import uvicorn

logger = logging.getLogger(__name__)

T = TypeVar("T")


def listening_socket(port: int = 0) -> socket.socket:
    """A socket on a free port (or ``port``), already listening: the port is ours before uvicorn even
    starts, and clients that connect early wait in the backlog instead of being refused."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)
    return sock


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, on_started: threading.Event) -> None:
        super().__init__(config)
        self._on_started = on_started
        self._exit_requested: asyncio.Event | None = None
        self.loop: asyncio.AbstractEventLoop | None = None

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        self.loop = asyncio.get_running_loop()
        self._exit_requested = asyncio.Event()
        await super().startup(sockets)
        self._on_started.set()

    async def main_loop(self) -> None:
        # uvicorn polls `should_exit` every 0.1 s; with an agent per test, waking up on request is
        # noticeably faster. One tick sets the default headers (Date, Server) as uvicorn's loop would.
        await self.on_tick(0)
        if self._exit_requested is not None:
            await self._exit_requested.wait()

    def request_exit(self) -> None:
        self.should_exit = True
        if self.loop is not None and self._exit_requested is not None and not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self._exit_requested.set)


class ServerThread:
    """uvicorn in a daemon thread. `call()` runs a coroutine on the server loop from the test."""

    def __init__(self, app: Any, sock: socket.socket, name: str) -> None:
        config = uvicorn.Config(
            app,
            log_config=None,  # leave the test process's logging configuration alone
            log_level="warning",  # but not one "Started server process" line per test
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=1,  # a backstop: stop() closes streams itself first
        )
        self._started = threading.Event()
        self._server = _Server(config, self._started)
        self._sock = sock
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._failure: BaseException | None = None

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        if self._server.loop is None:
            raise RuntimeError("the server is not running")
        return self._server.loop

    def start(self, timeout: float = 10.0) -> None:
        self._thread.start()
        if not self._started.wait(timeout) or self._failure is not None:
            raise RuntimeError(f"scripted agent server did not start: {self._failure!r}")

    def _run(self) -> None:
        try:
            asyncio.run(self._server.serve(sockets=[self._sock]))
        except BaseException as error:
            self._failure = error
            logger.exception("scripted agent server crashed")
        finally:
            self._started.set()  # never leave start() waiting
            self._sock.close()

    def call(self, coroutine: Coroutine[Any, Any, T], timeout: float) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def stop(self, timeout: float = 5.0) -> None:
        self._server.request_exit()
        self._thread.join(timeout)
        if self._thread.is_alive():
            self._server.force_exit = True
            self._thread.join(timeout)
        if self._thread.is_alive():
            logger.error("scripted agent server thread did not stop within %.1fs", 2 * timeout)

    @property
    def is_alive(self) -> bool:
        return self._thread.is_alive()
