import pytest
from django.core.checks import run_checks
from django.test import override_settings

from kourier.settings import INSECURE_DEFAULT_SECRET_KEY


def error_ids() -> set[str]:
    return {message.id for message in run_checks() if message.is_serious()}


def test_the_default_secret_key_is_refused_when_debug_is_off():
    with override_settings(DEBUG=False, SECRET_KEY=INSECURE_DEFAULT_SECRET_KEY):
        assert "kourier.E001" in error_ids()


def test_the_default_secret_key_is_allowed_for_development():
    with override_settings(DEBUG=True, SECRET_KEY=INSECURE_DEFAULT_SECRET_KEY):
        assert "kourier.E001" not in error_ids()


def test_a_slack_api_url_without_its_trailing_slash_is_refused():
    with override_settings(SLACK_API_URL="https://slack.com/api"):
        [message] = [m for m in run_checks() if m.id == "kourier.E002"]
    assert "must be an http(s) URL ending in '/'" in message.msg


def test_the_default_slack_api_url_passes():
    assert "kourier.E002" not in error_ids()


def test_a_worker_that_may_run_no_session_is_refused():
    with override_settings(WORKER_MAX_SESSIONS=0):
        [message] = [m for m in run_checks() if m.id == "kourier.E003"]
    assert message.msg == "WORKER_MAX_SESSIONS must be at least 1, got 0."


def test_a_negative_shutdown_wait_is_refused():
    with override_settings(WORKER_SHUTDOWN_SECONDS=-1.0):
        [message] = [m for m in run_checks() if m.id == "kourier.E003"]
    assert message.msg == "WORKER_SHUTDOWN_SECONDS must not be negative, got -1.0."


def test_the_default_worker_limits_pass():
    assert "kourier.E003" not in error_ids()


def test_a_metrics_directory_that_does_not_exist_is_refused(tmp_path):
    with override_settings(PROMETHEUS_MULTIPROC_DIR=str(tmp_path / "missing")):
        [message] = [m for m in run_checks() if m.id == "kourier.E004"]
    assert "not a writable directory" in message.msg


def test_an_existing_metrics_directory_passes(tmp_path):
    with override_settings(PROMETHEUS_MULTIPROC_DIR=str(tmp_path)):
        assert "kourier.E004" not in error_ids()


def test_an_agent_header_variable_entry_that_is_no_name_or_prefix_is_refused():
    with override_settings(AGENT_HEADER_VARIABLES=["OPS_TOKEN", "*", "A-B"]):
        [message] = [m for m in run_checks() if m.id == "kourier.E006"]
    assert message.msg.startswith("AGENT_HEADER_VARIABLES holds '*', 'A-B'")


def test_names_and_prefixes_pass():
    with override_settings(AGENT_HEADER_VARIABLES=["OPS_TOKEN", "AGENT_*"]):
        assert "kourier.E006" not in error_ids()


def test_a_secret_file_directory_that_is_relative_or_the_root_is_refused():
    with override_settings(SECRET_FILE_DIRECTORIES=["/var/run/secrets/kourier", "secrets", "/"]):
        [message] = [m for m in run_checks() if m.id == "kourier.E045"]
    assert message.msg.startswith("SECRET_FILE_DIRECTORIES holds 'secrets', '/'")


def test_secret_and_agent_header_file_directories_may_not_overlap():
    with override_settings(
        SECRET_FILE_DIRECTORIES=["/var/run/secrets/kourier"],
        AGENT_HEADER_FILE_DIRECTORIES=["/var/run/secrets/kourier/agents"],
    ):
        [message] = [m for m in run_checks() if m.id == "kourier.E046"]
    assert "an agent header could send a bot token" in message.msg


def test_separate_secret_file_directories_pass():
    with override_settings(
        SECRET_FILE_DIRECTORIES=["/var/run/secrets/kourier"],
        AGENT_HEADER_FILE_DIRECTORIES=["/var/run/secrets/kourier-agents"],
    ):
        assert not {"kourier.E045", "kourier.E046"} & set(error_ids())


def test_with_production_settings_metrics_need_a_token():
    with override_settings(METRICS_TOKEN=""):
        assert "kourier.E005" in {m.id for m in run_checks(include_deployment_checks=True)}
    with override_settings(METRICS_TOKEN="t"):
        assert "kourier.E005" not in {m.id for m in run_checks(include_deployment_checks=True)}


def test_a_simulator_setting_other_than_auto_on_or_off_is_refused():
    with override_settings(SIMULATOR="yes"):
        [message] = [m for m in run_checks() if m.id == "kourier.E020"]
    assert "SIMULATOR must be auto, on or off" in message.msg


@pytest.mark.parametrize(
    ("simulator", "url", "token", "slack_bot_token", "fails"),
    [
        ("on", "", "", "xoxb-real", True),
        ("auto", "http://127.0.0.1:5000/", "", "xoxb-real", True),  # running
        ("auto", "", "run-token", "xoxb-real", True),  # running
        ("auto", "", "", None, True),  # it could run: no Slack app in sight
        ("auto", "", "", "xoxb-real", False),
        ("off", "", "", None, False),
    ],
)
def test_the_deploy_check_fails_whenever_the_simulator_could_run(
    monkeypatch, simulator, url, token, slack_bot_token, fails
):
    if slack_bot_token is None:
        monkeypatch.delenv("SLACK_BOT_TOKEN", raising=False)
    else:
        monkeypatch.setenv("SLACK_BOT_TOKEN", slack_bot_token)
    with override_settings(SIMULATOR=simulator, SIMULATOR_URL=url, SIMULATOR_TOKEN=token):
        found = "kourier.E021" in {m.id for m in run_checks(include_deployment_checks=True)}
    assert found is fails


def test_with_production_settings_the_audit_needs_its_key():
    with override_settings(AUDIT_KEY=""):
        assert "kourier.E007" in {m.id for m in run_checks(include_deployment_checks=True)}
    with override_settings(AUDIT_KEY="k" * 32):
        assert "kourier.E007" not in {m.id for m in run_checks(include_deployment_checks=True)}


@pytest.mark.parametrize(("key", "refused"), [("k" * 31, True), ("k" * 32, False), ("", False)])
def test_an_audit_key_too_short_to_be_one_is_refused(key, refused):
    with override_settings(AUDIT_KEY=key):
        assert ("kourier.E008" in error_ids()) is refused


SINGLE_SIGN_ON = {
    "OIDC_ISSUER": "https://login.example.com/realms/ops",
    "OIDC_CLIENT_ID": "kourier",
    "OIDC_CLIENT_SECRET": "a client secret",
}


def messages_with(check_id: str, *, deploy: bool = False) -> list[str]:
    return [m.msg for m in run_checks(include_deployment_checks=deploy) if m.id == check_id]


def test_single_sign_on_configured_whole_passes_and_so_does_none():
    with override_settings(**SINGLE_SIGN_ON):
        assert not {"kourier.E040", "kourier.E041", "kourier.E042", "kourier.E043"} & error_ids()
    assert not {"kourier.E040", "kourier.E041", "kourier.E042", "kourier.E043"} & error_ids()


def test_single_sign_on_half_configured_says_what_is_missing():
    with override_settings(**{**SINGLE_SIGN_ON, "OIDC_CLIENT_SECRET": ""}):
        assert messages_with("kourier.E040") == [
            "Single sign-on is half configured: OIDC_CLIENT_SECRET is not set, while OIDC_ISSUER, OIDC_CLIENT_ID are."
        ]
    with override_settings(OIDC_CLIENT_ID="kourier"):
        assert messages_with("kourier.E040") == [
            "Single sign-on is half configured: OIDC_ISSUER, OIDC_CLIENT_SECRET are not set, while OIDC_CLIENT_ID is."
        ]


@pytest.mark.parametrize(
    "issuer", ["login.example.com", "https://login.example.com?realm=ops", "ftp://login.example.com"]
)
def test_an_issuer_that_is_no_http_url_is_refused(issuer):
    with override_settings(**{**SINGLE_SIGN_ON, "OIDC_ISSUER": issuer}):
        [message] = messages_with("kourier.E041")
    assert message.startswith("OIDC_ISSUER must be the identity provider's issuer")


def test_scopes_without_openid_are_refused():
    with override_settings(**SINGLE_SIGN_ON, OIDC_SCOPES=["email", "groups"]):
        assert messages_with("kourier.E042") == ["OIDC_SCOPES must include openid, got 'email,groups'."]


def test_groups_mapped_while_single_sign_on_is_off_are_refused():
    with override_settings(OIDC_STAFF_GROUPS=["ops"], OIDC_DECIDE_GROUPS=["approvers"]):
        assert messages_with("kourier.E043") == [
            "OIDC_STAFF_GROUPS, OIDC_DECIDE_GROUPS are set, but single sign-on is off (OIDC_ISSUER is not set): "
            "no group is mapped to anything."
        ]


def test_passwords_off_without_single_sign_on_is_refused():
    with override_settings(ADMIN_PASSWORD_LOGIN=False):
        [message] = messages_with("kourier.E043")
    assert message.endswith("nobody could sign in to the admin.")


def test_a_plain_http_issuer_fails_only_the_deployment_checks():
    with override_settings(**{**SINGLE_SIGN_ON, "OIDC_ISSUER": "http://127.0.0.1:8080/openid"}):
        assert messages_with("kourier.E044") == []
        assert len(messages_with("kourier.E044", deploy=True)) == 1


@pytest.mark.parametrize(
    "sampler",
    [
        {"OTEL_TRACES_SAMPLER": "jaeger_remote"},
        {"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "ten percent"},
    ],
)
def test_a_trace_sampler_kourier_cannot_take_is_refused_when_traces_are_on(monkeypatch, sampler):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    for name, value in sampler.items():
        monkeypatch.setenv(name, value)

    [message] = [m for m in run_checks() if m.id == "kourier.E047"]
    assert next(iter(sampler)) in message.msg or "OTEL_TRACES_SAMPLER_ARG" in message.msg


def test_a_trace_sampler_is_not_checked_while_traces_are_off(monkeypatch):
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    monkeypatch.setenv("OTEL_TRACES_SAMPLER", "jaeger_remote")

    assert "kourier.E047" not in error_ids()
