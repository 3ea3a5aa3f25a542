"""The per-process snapshot of Connections and Bindings that Slack ingress reads."""

import pytest

from bindings import directory
from bindings.models import Binding, Connection
from tests.factories import BindingFactory, ConnectionFactory

pytestmark = pytest.mark.django_db

WINDOW = 5.0


@pytest.fixture
def clock(monkeypatch, settings):
    settings.BINDINGS_CACHE_SECONDS = WINDOW
    now = [1000.0]
    monkeypatch.setattr(directory, "clock", lambda: now[0])
    return now


def test_it_finds_connections_by_name_and_id_and_the_binding_of_each_channel():
    binding = BindingFactory(channels=["C1", "C2"])
    found = directory.current()
    connection = binding.connection
    assert found.by_name[connection.name] == connection == found.by_id[connection.pk]
    assert found.binding_for_channel(connection.pk, "C1") == binding
    assert found.binding_for_channel(connection.pk, "C2").connection == connection
    assert found.binding_for_channel(connection.pk, "C3") is None


def test_a_channel_is_bound_per_connection():
    binding = BindingFactory(channels=["C1"])
    other = ConnectionFactory()
    found = directory.current()
    assert found.binding_for_channel(other.pk, "C1") is None
    assert found.binding_for_channel(binding.connection_id, "C1") == binding


def test_an_edit_from_another_process_is_seen_once_the_window_has_passed(clock):
    binding = BindingFactory(channels=["C1"], thread_replies="all")
    assert directory.current().binding_for_channel(binding.connection_id, "C1").thread_replies == "all"
    # A queryset update sends no signal: to this process it is like an edit made in another one.
    Binding.objects.filter(pk=binding.pk).update(thread_replies="mention")
    Connection.objects.filter(pk=binding.connection_id).update(name="renamed")

    clock[0] += WINDOW - 0.1
    within = directory.current()
    assert within.binding_for_channel(binding.connection_id, "C1").thread_replies == "all"
    assert "renamed" not in within.by_name

    clock[0] += 0.2
    after = directory.current()
    assert after.binding_for_channel(binding.connection_id, "C1").thread_replies == "mention"
    assert "renamed" in after.by_name


def test_an_edit_saved_in_this_process_is_seen_at_once(clock):
    binding = BindingFactory(channels=["C1"])
    directory.current()
    BindingFactory(connection=binding.connection, channels=["C2"])
    binding.thread_replies = "mention"
    binding.save()
    found = directory.current()
    assert found.binding_for_channel(binding.connection_id, "C1").thread_replies == "mention"
    assert found.binding_for_channel(binding.connection_id, "C2") is not None


def test_a_deleted_binding_is_gone_at_once_in_this_process(clock):
    binding = BindingFactory(channels=["C1"])
    directory.current()
    binding.delete()
    assert directory.current().binding_for_channel(binding.connection_id, "C1") is None
