"""Gates: deterministic stalls for scripts, opened from the test thread.

The agent runs on its own event loop in a background thread, so an `asyncio.Event` created by a
test would belong to the wrong loop. A `Gate` can be awaited on the server loop and opened from any
thread, and it tells the test when a script has arrived at it - so a test can act "while the agent
is stuck" without sleeping and hoping.
"""

from __future__ import annotations

import asyncio
import threading


class Gate:
    """A one-shot barrier: closed until `open()`, then open for good."""

    def __init__(self, name: str = "gate") -> None:
        self.name = name
        self._condition = threading.Condition()
        self._is_open = False
        self._arrivals = 0
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []

    def __repr__(self) -> str:
        state = "open" if self._is_open else "closed"
        return f"Gate({self.name!r}, {state}, arrivals={self._arrivals})"

    @property
    def is_open(self) -> bool:
        return self._is_open

    @property
    def arrivals(self) -> int:
        """How many scripts have reached this gate so far (whether or not it was open)."""
        return self._arrivals

    def open(self) -> None:
        """Let every waiting and future script through. Safe from any thread."""
        with self._condition:
            self._is_open = True
            waiters, self._waiters = self._waiters, []
            self._condition.notify_all()
        for loop, future in waiters:
            if not loop.is_closed():
                loop.call_soon_threadsafe(_resolve, future)

    def wait_reached(self, count: int = 1, timeout: float = 5.0) -> None:
        """Block the test until `count` scripts have arrived at this gate."""
        with self._condition:
            if not self._condition.wait_for(lambda: self._arrivals >= count, timeout):
                raise TimeoutError(f"{self!r}: expected {count} arrival(s) within {timeout}s")

    async def wait(self) -> None:
        """Wait on the server loop until the gate is open."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        with self._condition:
            self._arrivals += 1
            self._condition.notify_all()
            if self._is_open:
                return
            self._waiters.append((loop, future))
        try:
            await future
        finally:
            with self._condition:
                if (loop, future) in self._waiters:
                    self._waiters.remove((loop, future))


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


async def wait_for_gate(gate: Gate | threading.Event, poll_interval: float = 0.005) -> None:
    """Await a Gate, or poll a plain threading.Event (it has no way to wake an event loop)."""
    if isinstance(gate, Gate):
        await gate.wait()
        return
    while not gate.is_set():  # noqa: ASYNC110 - a threading.Event cannot wake an event loop
        await asyncio.sleep(poll_interval)
