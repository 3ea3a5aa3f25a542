import socket

import pytest

from kourier.web_processes import daphne_commands, listen


def test_the_listener_listens_and_children_can_inherit_it():
    with listen("127.0.0.1", 0) as listener:
        port = listener.getsockname()[1]
        assert listener.get_inheritable()
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass  # accepted into the backlog: it listens


def test_each_web_process_accepts_on_the_one_socket():
    with listen("127.0.0.1", 0) as listener:
        commands = daphne_commands("python", listener, 3)
        fd = str(listener.fileno())
    assert commands == [["python", "-m", "daphne", "--fd", fd, "kourier.asgi:application"]] * 3


def test_there_is_at_least_one_web_process():
    with listen("127.0.0.1", 0) as listener, pytest.raises(ValueError, match="at least one"):
        daphne_commands("python", listener, 0)
