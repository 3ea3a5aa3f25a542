"""A real forward proxy for the egress test (issue 34, point 2): proxy.py (PyPI ``proxy.py``), run as
its own process, with a plugin (tests/support/egress_proxy_plugin.py) that resolves the test's host
names and logs each host it carries.

The Slack fake and the agent give names under ``.kourier.test`` in their URLs; no resolver but this
proxy's knows them, so the product reaches them through the proxy or not at all: the direct route
is blocked, and the log says which hosts the proxy carried.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support import processes
from tests.support.private_redis import free_port

HOSTS_LOG = "KOURIER_EGRESS_HOSTS_LOG"  # the file the plugin writes each host:port to
START_TIMEOUT_SECONDS = 30
REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass
class EgressProxy:
    url: str
    hosts_log: Path
    process: subprocess.Popen

    def hosts(self) -> set[str]:
        """The host:port pairs the proxy connected to, so far."""
        if not self.hosts_log.exists():
            return set()
        return set(self.hosts_log.read_text().split())


@pytest.fixture
def egress_proxy(tmp_path: Path) -> Iterator[EgressProxy]:
    port = free_port()
    hosts_log = tmp_path / "proxy-hosts.log"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "proxy",
            "--hostname",
            "127.0.0.1",
            "--port",
            str(port),
            "--num-acceptors",
            "1",
            "--num-workers",
            "1",
            "--threaded",
            "--plugins",
            "tests.support.egress_proxy_plugin.OnlyTheProxyResolves",
            "--log-file",
            str(tmp_path / "proxy.log"),
        ],
        cwd=REPO_ROOT,
        env={**os.environ, HOSTS_LOG: str(hosts_log), "PYTHONPATH": str(REPO_ROOT)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    try:
        processes.wait_until_ready(
            process, "proxy.py", processes.listens(port), timeout=START_TIMEOUT_SECONDS, log=lambda: ""
        )
        yield EgressProxy(f"http://127.0.0.1:{port}", hosts_log, process)
    finally:
        processes.stop(process)


def self_signed_certificate(directory: Path, host: str) -> tuple[Path, Path]:
    """A certificate for ``host`` and its key (openssl), for a fake that serves TLS as Slack does."""
    certificate, key = directory / f"{host}.crt", directory / f"{host}.key"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            f"/CN={host}",
            "-addext",
            f"subjectAltName=DNS:{host}",
            "-keyout",
            str(key),
            "-out",
            str(certificate),
        ],
        check=True,
        capture_output=True,
    )
    return certificate, key
