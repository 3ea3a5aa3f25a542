"""Every secret reference may read a file, ``{fromFile: /path}`` (issue 34, point 3): a Connection's
tokens and signing secret and a trigger's token only inside SECRET_FILE_DIRECTORIES, an agent header
only inside AGENT_HEADER_FILE_DIRECTORIES; a file is read again when it changes, so a rotated bot token
is used by the next Slack call without a restart."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bindings import manifest, secret_variables, services
from bindings.models import Binding, Connection, MissingSecret, RefusedSecret
from bindings.secret_files import read_secret_file
from bindings.services.slack_identities import try_bot_token
from tests.factories import BindingFactory, ConnectionFactory

from .manifests import CONNECTION, as_yaml, binding, varied

pytestmark = pytest.mark.django_db


@pytest.fixture
def secret_dir(tmp_path, settings) -> Path:
    directory = tmp_path / "secrets"
    directory.mkdir()
    settings.SECRET_FILE_DIRECTORIES = [str(directory)]
    return directory


@pytest.fixture
def header_dir(tmp_path, settings) -> Path:
    directory = tmp_path / "agent-headers"
    directory.mkdir()
    settings.AGENT_HEADER_FILE_DIRECTORIES = [str(directory)]
    return directory


def mounted(directory: Path, files: dict[str, str], version: str) -> None:
    """Files laid out as Kubernetes mounts a Secret: each name a link through ``..data`` to a directory
    of the version, which a rotation swaps atomically."""
    target = directory / f"..{version}"
    target.mkdir()
    for name, value in files.items():
        (target / name).write_text(value + "\n")
    link = directory / "..data_tmp"
    link.symlink_to(target.name)
    os.replace(link, directory / "..data")
    for name in files:
        if not (directory / name).is_symlink():
            (directory / name).symlink_to(f"..data/{name}")


def test_a_connection_reads_its_tokens_from_files_and_writes_them_back_as_files(secret_dir):
    document = varied(CONNECTION, "spec.botToken", {"fromFile": f"{secret_dir}/bot-token"})
    document = varied(document, "spec.appToken", {"fromFile": f"{secret_dir}/app-token"})

    validation = manifest.validate(manifest.parse_documents(as_yaml(document))[0])

    assert validation.ok, validation.errors
    spec = validation.connections[0]
    assert (spec.bot_token_env, spec.app_token_env) == (f"{secret_dir}/bot-token", f"{secret_dir}/app-token")
    written = manifest.manifest(spec)["spec"]
    assert written["botToken"] == {"fromFile": f"{secret_dir}/bot-token"}
    assert written["signingSecret"] == {"fromEnv": "SLACK_SIGNING_SECRET"}


@pytest.mark.parametrize(
    ("reference", "error"),
    [
        ({"fromFile": "secrets/bot-token"}, "spec.botToken.fromFile: must be an absolute path"),
        (
            {"fromFile": "/var/run/secrets/../bot-token"},
            "spec.botToken.fromFile: must be a plain absolute path",
        ),
        ({"fromFile": "/var/run/secrets/"}, "spec.botToken.fromFile: must be a plain absolute path"),
        ({"fromFile": 3}, "spec.botToken.fromFile: must be a string"),
        (
            {"fromEnv": "SLACK_BOT_TOKEN", "fromFile": "/a/b"},
            "spec.botToken: must hold one of fromEnv and fromFile",
        ),
    ],
)
def test_a_bad_file_reference_is_refused_with_its_field_and_nothing_is_written(secret_dir, reference, error):
    result = services.apply_manifests(as_yaml(varied(CONNECTION, "spec.botToken", reference)))

    [problem] = [str(problem) for problem in result.errors]
    assert problem.startswith(f'Connection "acme": {error}')
    assert not Connection.objects.exists()


@pytest.mark.parametrize("field", ["botToken", "signingSecret", "appToken"])
def test_apply_refuses_a_connection_secret_file_outside_the_secret_directories(secret_dir, tmp_path, field):
    outside = f"{tmp_path}/elsewhere/token"

    result = services.apply_manifests(as_yaml(varied(CONNECTION, f"spec.{field}", {"fromFile": outside})))

    assert [str(error) for error in result.errors] == [
        f'Connection "acme": spec.{field}.fromFile: {outside} {secret_variables.NOT_IN_SECRET_DIRECTORIES}'
    ]
    assert not Connection.objects.exists()


def test_without_secret_directories_no_file_may_be_read(settings):
    settings.SECRET_FILE_DIRECTORIES = []

    result = services.apply_manifests(
        as_yaml(varied(CONNECTION, "spec.botToken", {"fromFile": "/var/run/secrets/kourier/bot-token"}))
    )

    assert not result.ok
    assert not Connection.objects.exists()


def test_a_trigger_token_file_may_not_be_a_connections_file(secret_dir):
    shared = f"{secret_dir}/signing-secret"
    connection = varied(CONNECTION, "spec.signingSecret", {"fromFile": shared})
    hooks = binding(triggers=[{"name": "hooks", "kind": "generic", "token": {"fromFile": shared}}])

    result = services.apply_manifests(as_yaml(connection, hooks))

    assert [str(error) for error in result.errors] == [
        f'Connection "acme": spec.signingSecret.fromFile: {shared} {secret_variables.A_TRIGGERS_TOKEN}',
        f'Binding "ops": spec.triggers[0].token.fromFile: {shared} {secret_variables.A_CONNECTIONS_SECRET}',
    ]
    assert not Binding.objects.exists()


def test_an_agent_header_reads_a_file_only_in_its_own_directories(secret_dir, header_dir):
    ConnectionFactory(name="acme")
    allowed = f"{header_dir}/ops-agent"
    a_secret = f"{secret_dir}/bot-token"

    refused = services.apply_manifests(
        as_yaml(binding(**{"agent.headers": {"Authorization": {"fromFile": a_secret}}}))
    )
    applied = services.apply_manifests(
        as_yaml(binding(**{"agent.headers": {"Authorization": {"fromFile": allowed}}}))
    )

    assert [str(error) for error in refused.errors] == [
        f'Binding "ops": spec.agent.headers.Authorization.fromFile: {a_secret} {secret_variables.A_SECRETS_FILE}'
    ]
    assert applied.ok, applied.errors
    assert Binding.objects.get(name="ops").agent_headers == {"Authorization": allowed}


def test_a_connection_file_in_the_agent_headers_directories_is_refused(secret_dir, header_dir):
    assert secret_variables.why_unfit(f"{header_dir}/token") == secret_variables.AN_AGENT_HEADERS_FILE


def test_a_row_written_around_apply_reads_no_file_outside_the_directories(secret_dir, tmp_path):
    outside = tmp_path / "bot-token"
    outside.write_text("xoxb-outside")
    connection = ConnectionFactory(bot_token_env=str(outside))
    header_row = BindingFactory(agent_headers={"Authorization": str(outside)})

    with pytest.raises(RefusedSecret):
        connection.bot_token()
    with pytest.raises(RefusedSecret):
        header_row.agent_headers_resolved()


def test_a_missing_or_empty_file_is_read_as_not_set_and_says_which_file(secret_dir):
    (secret_dir / "empty").write_text("\n")
    missing = ConnectionFactory(name="missing", bot_token_env=f"{secret_dir}/absent")
    empty = ConnectionFactory(name="empty", bot_token_env=f"{secret_dir}/empty")

    for connection in (missing, empty):
        with pytest.raises(MissingSecret, match=r"spec\.botToken: file .* is missing, unreadable or empty"):
            connection.bot_token()


def test_a_file_is_read_again_when_rewritten_in_place(secret_dir):
    path = secret_dir / "token"
    path.write_text("first\n")
    assert read_secret_file(str(path)) == "first"

    path.write_text("second-value\n")

    assert read_secret_file(str(path)) == "second-value"


def test_a_rotated_bot_token_is_used_by_the_next_slack_call_without_a_restart(
    secret_dir, slack_fake, settings
):
    settings.SLACK_API_URL = slack_fake.url
    other = slack_fake.add_workspace("T0OLD")
    mounted(secret_dir, {"bot-token": other.app.bot_token}, "2026_12_01")
    connection = ConnectionFactory(name="acme", bot_token_env=f"{secret_dir}/bot-token")

    before = try_bot_token(connection)
    mounted(secret_dir, {"bot-token": slack_fake.bot_token}, "2026_12_05")
    after = try_bot_token(Connection.objects.get(pk=connection.pk))

    assert (before.ok, before.team_id) == (True, "T0OLD")
    assert (after.ok, after.team_id) == (True, slack_fake.team_id)
