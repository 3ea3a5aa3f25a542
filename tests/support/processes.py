"""Starting and stopping the helper processes the tests run beside the product (a provider, a proxy,
Alertmanager): wait until one serves, or say why it did not, and stop it whatever state it is in."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Callable

import httpx


def answers_ok(url: str) -> Callable[[], bool]:
    """Ready when ``url`` answers 200."""

    def ready() -> bool:
        try:
            return httpx.get(url, timeout=1).status_code == 200
        except httpx.TransportError:
            return False

    return ready


def listens(port: int) -> Callable[[], bool]:
    """Ready when something accepts connections on 127.0.0.1:``port``."""

    def ready() -> bool:
        with socket.socket() as sock:
            return sock.connect_ex(("127.0.0.1", port)) == 0

    return ready


def wait_until_ready(
    process: subprocess.Popen, name: str, ready: Callable[[], bool], *, timeout: float, log: Callable[[], str]
) -> None:
    """Returns once ``ready()``; raises with ``log()`` when the process exits or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{name} exited at start ({process.returncode}):\n{log()}")
        if ready():
            return
        time.sleep(0.1)  # polling for the server to listen, not timing a race
    raise RuntimeError(f"{name} did not start in {timeout:g} s:\n{log()}")


def stop(process: subprocess.Popen | None) -> None:
    """Terminates the process if it still runs, and kills it when it does not end in 10 s."""
    if process is None or process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)
