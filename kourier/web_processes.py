"""Several Daphne processes serving one port: the parent binds the socket and each child accepts on it.

One Daphne process uses one core at most (the GIL), so a host runs one per core. They share one
listening socket, handed down by file descriptor (Twisted's ``fd:`` endpoint), so no proxy is needed
in front and the kernel gives each connection to whichever process accepts first.
"""

import os
import socket
from collections.abc import Sequence

ASGI_APPLICATION = "kourier.asgi:application"
LISTEN_BACKLOG = 1024


def default_web_processes() -> int:
    """One per core this process may run on."""
    return len(os.sched_getaffinity(0))


def listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket that child processes can inherit (port 0: a free one)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, port))
    listener.listen(LISTEN_BACKLOG)
    listener.set_inheritable(True)
    return listener


def daphne_command(python: str, listener: socket.socket, application: str = ASGI_APPLICATION) -> list[str]:
    """The command of one Daphne that accepts on ``listener`` (start it with pass_fds=[listener.fileno()])."""
    # Twisted's fd: endpoint as Daphne's --fd spells it (its domain= option fails to listen).
    return [python, "-m", "daphne", "--fd", str(listener.fileno()), application]


def daphne_commands(
    python: str, listener: socket.socket, count: int, application: str = ASGI_APPLICATION
) -> Sequence[list[str]]:
    if count < 1:
        raise ValueError("at least one web process is needed")
    return [daphne_command(python, listener, application) for _ in range(count)]
