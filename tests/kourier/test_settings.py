"""`manage.py check --deploy` in a process of its own, with settings read from the environment as in
production."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.production import production_settings

pytestmark = pytest.mark.slow

REPO_ROOT = Path(__file__).resolve().parents[2]


def check_deploy(environment: dict[str, str | None], var_dir: Path) -> subprocess.CompletedProcess[str]:
    """Runs the check with ``environment`` (None: unset), nothing of it inherited from the test's own."""
    env = {name: value for name, value in os.environ.items() if name not in environment}
    env.update({name: value for name, value in environment.items() if value is not None})
    env.update({"DJANGO_SETTINGS_MODULE": "kourier.settings", "KOURIER_VAR_DIR": str(var_dir)})
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_check_deploy_reports_no_issue_with_the_production_settings(tmp_path):
    result = check_deploy(dict(production_settings()), tmp_path)

    assert result.returncode == 0, result.stderr
    assert "System check identified no issues" in result.stdout


@pytest.mark.parametrize(
    ("weakened", "issue"),
    [
        ({"SECRET_KEY": "short-and-guessable"}, "security.W009"),
        ({"SECRET_KEY": None}, "kourier.E001"),
        ({"DEBUG": "true"}, "security.W018"),
        ({"ALLOWED_HOSTS": ""}, "security.W020"),
        ({"SECURE_SSL_REDIRECT": None}, "security.W008"),
        ({"SESSION_COOKIE_SECURE": "false"}, "security.W012"),
        ({"CSRF_COOKIE_SECURE": None}, "security.W016"),
        ({"SECURE_HSTS_SECONDS": None}, "security.W004"),
        ({"METRICS_TOKEN": None}, "kourier.E005"),
        ({"METRICS_TOKEN": ""}, "kourier.E005"),
        ({"SIMULATOR": None, "SLACK_BOT_TOKEN": None}, "kourier.E021"),  # auto: it could run
        ({"AUDIT_KEY": None}, "kourier.E007"),
        ({"AUDIT_KEY": "short"}, "kourier.E008"),
        ({"SIMULATOR": "on", "SLACK_BOT_TOKEN": "xoxb-real"}, "kourier.E021"),
    ],
)
def test_check_deploy_fails_naming_a_weak_or_missing_setting(weakened, issue, tmp_path):
    result = check_deploy({**production_settings(), **weakened}, tmp_path)

    assert result.returncode == 1
    assert issue in result.stderr


def test_an_empty_database_url_stops_every_process_at_start(tmp_path):
    # What a Secret with no value gives (deploy/kubernetes/base/secrets.yaml): never SQLite by default.
    result = check_deploy({**production_settings(), "DATABASE_URL": ""}, tmp_path)

    assert result.returncode == 1
    assert "DATABASE_URL is not a database URL" in result.stderr
