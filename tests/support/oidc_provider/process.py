"""Starts the test provider and sets its users and clients (tests/support/oidc_provider/__init__.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urljoin

import httpx

from tests.support import processes
from tests.support.private_redis import free_port

REPO_ROOT = Path(__file__).resolve().parents[3]
START_TIMEOUT_SECONDS = 60  # a busy 2-core host can take many seconds to start a process


@dataclass
class IdentityProvider:
    base_url: str
    env: dict[str, str]
    log: Path
    process: subprocess.Popen | None = None

    @property
    def issuer(self) -> str:
        return f"{self.base_url}/openid"

    def manage(self, *args: str) -> None:
        result = subprocess.run(
            [sys.executable, "-m", "django", *args],
            env=self.env,
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
        )
        if result.returncode != 0:
            raise RuntimeError(
                f"manage.py {args[0]} failed at the test provider:\n{result.stdout}{result.stderr}"
            )

    def user(self, username: str, *, password: str, email: str = "", groups: tuple[str, ...] = ()) -> None:
        """Makes or changes a user, in exactly ``groups`` (``quirk:<what>`` for a fault: claims.py)."""
        self.manage(
            "provider_user", username, "--password", password, "--email", email, "--groups", ",".join(groups)
        )

    def client(
        self,
        client_id: str,
        *,
        secret: str,
        redirect_uris: tuple[str, ...],
        post_logout_redirect_uris: tuple[str, ...] = (),
    ) -> None:
        self.manage(
            "provider_client",
            client_id,
            "--secret",
            secret,
            *(f"--redirect-uri={uri}" for uri in redirect_uris),
            *(f"--post-logout-redirect-uri={uri}" for uri in post_logout_redirect_uris),
        )

    def authorize(self, authorization_url: str, *, username: str, password: str) -> str:
        """What a browser does at the provider, over HTTP without one: follows ``authorization_url`` to
        the login form, signs in there, and returns where the provider then sends it back (the
        client's redirect URI with the code and state)."""
        with httpx.Client(timeout=30) as browser:
            form = browser.get(authorization_url, follow_redirects=True)
            token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text)
            if form.status_code != 200 or token is None:
                raise RuntimeError(
                    f"the test provider showed no login form: {form.status_code} {form.text[:500]}"
                )
            answer = browser.post(
                str(form.url),
                data={
                    "csrfmiddlewaretoken": token.group(1),
                    "username": username,
                    "password": password,
                    "next": form.url.params["next"],
                },
                headers={"Referer": str(form.url)},
            )
            while answer.is_redirect:
                location = urljoin(str(answer.url), answer.headers["Location"])
                if not location.startswith(self.base_url):
                    return location
                answer = browser.get(location)
            raise RuntimeError(
                f"the test provider sent nobody back: {answer.status_code} {answer.text[:500]}"
            )

    def start(self) -> None:
        self.manage("migrate", "--noinput")
        self.manage("creatersakey")
        port = self.base_url.rsplit(":", 1)[1]
        log = open(self.log, "ab")  # noqa: SIM115  (closed with the process)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "django", "runserver", f"127.0.0.1:{port}", "--noreload"],
            env=self.env,
            cwd=REPO_ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        processes.wait_until_ready(
            self.process,
            "the test provider",
            processes.answers_ok(f"{self.issuer}/.well-known/openid-configuration"),
            timeout=START_TIMEOUT_SECONDS,
            log=lambda: self.log.read_text()[-3000:],
        )

    def stop(self) -> None:
        processes.stop(self.process)


def identity_provider(folder: Path) -> IdentityProvider:
    """A provider whose database and log are in ``folder``, not started yet."""
    base_url = f"http://127.0.0.1:{free_port()}"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.support.oidc_provider.settings",
        "OIDC_PROVIDER_SITE_URL": base_url,
        "OIDC_PROVIDER_DATABASE": str(folder / "provider.sqlite3"),
        "PYTHONUNBUFFERED": "1",
    }
    return IdentityProvider(base_url=base_url, env=env, log=folder / "provider.log")
