"""A real Prometheus Alertmanager (Debian's prometheus-alertmanager) for end-to-end tests: started on a
free port with a temporary data directory, no cluster, and the test's routes; alerts are pushed
through its v2 API as Prometheus pushes them, and its own metrics say what it sent.

The binary is KOURIER_ALERTMANAGER, else ``prometheus-alertmanager`` or ``alertmanager`` on PATH.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import yaml

from tests.support import processes
from tests.support.private_redis import free_port

START_TIMEOUT_SECONDS = 30.0
INSTALL_HINT = "apt-get install prometheus-alertmanager"


def alertmanager_path() -> str | None:
    path = (
        os.environ.get("KOURIER_ALERTMANAGER")
        or shutil.which("prometheus-alertmanager")
        or shutil.which("alertmanager")
    )
    return path if path and os.access(path, os.X_OK) else None


@dataclass(frozen=True)
class Receiver:
    """A webhook receiver pointed at one trigger, and the alerts routed to it (label matchers)."""

    name: str
    url: str
    token: str
    matchers: tuple[str, ...] = ()


def config(receivers: list[Receiver], *, group_by: tuple[str, ...] = ("alertname",), **timing: str) -> str:
    """Alertmanager's configuration: each receiver's alerts grouped by ``group_by``, with short
    group_wait, group_interval and repeat_interval so a test sees every kind of re-send quickly."""
    intervals = {"group_wait": "1s", "group_interval": "2s", "repeat_interval": "4s", **timing}
    first, *others = receivers
    route: dict[str, Any] = {"receiver": first.name, "group_by": list(group_by), **intervals}
    route["routes"] = [{"receiver": r.name, "matchers": list(r.matchers)} for r in others]
    return yaml.safe_dump(
        {
            "route": route,
            "receivers": [
                {
                    "name": r.name,
                    "webhook_configs": [
                        {
                            "url": r.url,
                            "send_resolved": True,
                            "http_config": {"authorization": {"type": "Bearer", "credentials": r.token}},
                        }
                    ],
                }
                for r in receivers
            ],
        }
    )


@dataclass
class Alertmanager:
    binary: str
    directory: Path
    port: int = 0
    process: subprocess.Popen | None = None
    log_path: Path = field(init=False)

    def __post_init__(self) -> None:
        self.log_path = self.directory / "alertmanager.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, configuration: str) -> None:
        (self.directory / "alertmanager.yml").write_text(configuration)
        self.port = free_port()
        log = open(self.log_path, "ab")  # noqa: SIM115  (closed with the process)
        self.process = subprocess.Popen(
            [
                self.binary,
                f"--config.file={self.directory / 'alertmanager.yml'}",
                f"--storage.path={self.directory / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--cluster.listen-address=",  # one instance: no gossip port
                "--log.level=debug",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        processes.wait_until_ready(
            self.process,
            "Alertmanager",
            processes.answers_ok(f"{self.url}/-/ready"),
            timeout=START_TIMEOUT_SECONDS,
            log=self.log,
        )

    def stop(self) -> None:
        processes.stop(self.process)

    def fire(self, labels: dict[str, str], *, starts_at: datetime, summary: str = "") -> None:
        """Pushes a firing alert, as Prometheus does on each evaluation."""
        self._push(labels, starts_at=starts_at, summary=summary)

    def fire_all(self, alerts: list[dict[str, str]], *, starts_at: datetime) -> None:
        """Pushes many firing alerts in one request, as one rule evaluation does."""
        body = [{"labels": labels, "startsAt": starts_at.isoformat()} for labels in alerts]
        httpx.post(f"{self.url}/api/v2/alerts", json=body, timeout=10).raise_for_status()

    def resolve(self, labels: dict[str, str], *, starts_at: datetime, summary: str = "") -> None:
        """Pushes the alert with an end in the past: resolved, as Prometheus sends it."""
        self._push(labels, starts_at=starts_at, summary=summary, ends_at=datetime.now(UTC))

    def _push(
        self, labels: dict[str, str], *, starts_at: datetime, summary: str, ends_at: datetime | None = None
    ) -> None:
        alert: dict[str, Any] = {
            "labels": labels,
            "annotations": {"summary": summary} if summary else {},
            "startsAt": starts_at.isoformat(),
            "generatorURL": "http://prometheus.example/graph",
        }
        if ends_at is not None:
            alert["endsAt"] = ends_at.isoformat()
        response = httpx.post(f"{self.url}/api/v2/alerts", json=[alert], timeout=10)
        response.raise_for_status()

    def metric(self, name: str) -> float:
        """The sum of a metric of Alertmanager's own for its webhook integration."""
        text = httpx.get(f"{self.url}/metrics", timeout=10).text
        return sum(
            float(line.rsplit(" ", 1)[1])
            for line in text.splitlines()
            if line.startswith(name + "{") and 'integration="webhook"' in line
        )

    def sent(self) -> int:
        """Webhook requests Alertmanager made that succeeded."""
        requests = self.metric("alertmanager_notification_requests_total")
        return int(requests - self.metric("alertmanager_notification_requests_failed_total"))

    def failed(self) -> int:
        """Webhook requests that failed (each retry counts)."""
        return int(self.metric("alertmanager_notification_requests_failed_total"))

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
