"""A turn's shared files taken for the agent from the Slack fake over real HTTP (sessions/files_in.py):
the turn's bound, and an app without files:read kept as the Connection's last Slack failure."""

import asyncio
import dataclasses

import pytest

from bindings.manifest import FilesSpec
from kourier.slack import failures
from kourier.slack.clients import connection_workspace
from kourier.slack.files import SharedFile
from sessions import file_rules, files_in, services, turns
from sessions.file_rules import Refused
from sessions.models import Turn
from simulator import SlackFake
from simulator.defaults import ADA, CHANNEL_ID
from tests.factories import BindingFactory
from tests.sessions.messages import said

pytestmark = pytest.mark.django_db


@pytest.fixture
def on_the_fake(settings, slack_fake: SlackFake) -> SlackFake:
    settings.SLACK_API_URL = slack_fake.url
    return slack_fake


def shared(fake: SlackFake, *files: tuple[str, bytes, str]) -> tuple[SharedFile, ...]:
    ts = fake.user_shares_files(ADA, CHANNEL_ID, "here", list(files))
    base = fake.url.removesuffix("api/")
    found = []
    for file_id in fake.message(CHANNEL_ID, ts).file_ids:
        file = fake.file(file_id)
        url = f"{base}files-pri/{fake.team_id}-{file.id}/download/{file.name}"
        found.append(SharedFile(file.id, file.name, file.mimetype, len(file.content), url))
    return tuple(found)


def work_with(fake: SlackFake, monkeypatch, files: tuple[SharedFile, ...], spec: FilesSpec) -> turns.TurnWork:
    binding = BindingFactory(channels=[CHANNEL_ID])
    monkeypatch.setenv(binding.connection.bot_token_env, fake.bot_token)
    services.route_message(binding.connection, said(channel=CHANNEL_ID, files=files))
    work = turns.start_turn(Turn.objects.get().pk)
    assert work is not None
    return dataclasses.replace(work, files_spec=spec)


def test_files_past_the_turns_bound_are_not_sent(on_the_fake, monkeypatch):
    files = shared(on_the_fake, ("a.txt", b"a" * 60, "text/plain"), ("b.txt", b"b" * 60, "text/plain"))
    work = work_with(on_the_fake, monkeypatch, files, FilesSpec(max_turn_bytes=100))

    taken = asyncio.run(files_in.take_files(work, ("text",)))

    assert [(part.filename, part.raw) for part in taken.parts] == [("a.txt", b"a" * 60)]
    assert taken.refused == (Refused("b.txt", file_rules.OVER_TURN_LIMIT),)


def test_an_app_without_files_read_is_kept_as_the_connections_last_failure(on_the_fake, monkeypatch):
    on_the_fake.configure_workspace(scopes={"files:write"})
    files = shared(on_the_fake, ("a.txt", b"hello", "text/plain"))
    work = work_with(on_the_fake, monkeypatch, files, FilesSpec())

    taken = asyncio.run(files_in.take_files(work, ("text",)))

    assert taken == files_in.FilesTaken((), (Refused("a.txt", file_rules.NO_SCOPE),))
    kept = failures.last_failure(connection_workspace(work.connection_id))
    assert kept is not None
    assert (kept.method, kept.error) == ("url_private", "missing_scope")
