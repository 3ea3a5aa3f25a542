import pytest
from django.core.management import CommandError, call_command

from kourier.management.commands.socket import socket_mode_connections
from tests.factories import ConnectionFactory

pytestmark = pytest.mark.django_db


def test_only_connections_with_an_app_token_use_socket_mode():
    ConnectionFactory(name="http-only")
    socket = ConnectionFactory(name="socket", app_token_env="SOCKET_APP_TOKEN")
    assert socket_mode_connections() == [socket]


def test_the_command_says_when_no_connection_has_an_app_token():
    ConnectionFactory(name="http-only")
    with pytest.raises(CommandError, match="No Connection has an appToken"):
        call_command("socket")


def test_the_command_names_the_missing_app_token_variable(monkeypatch):
    monkeypatch.delenv("UNSET_APP_TOKEN", raising=False)
    ConnectionFactory(name="socket", app_token_env="UNSET_APP_TOKEN")
    with pytest.raises(Exception, match="UNSET_APP_TOKEN"):
        call_command("socket")
