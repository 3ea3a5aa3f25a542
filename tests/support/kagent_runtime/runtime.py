"""One running kagent runtime, seen from the test process: start it with a script, read its record, stop it."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import httpx

from tests.support.kagent_runtime.lines import RuntimeLine
from tests.support.kagent_runtime.script import ModelRequest, RecordRead, Script, ToolRun, read_record

# Importing kagent, google-adk and a2a-sdk takes several seconds of CPU; more on a busy CI machine.
START_TIMEOUT_SECONDS = 120
STOP_TIMEOUT_SECONDS = 15
AGENT_CARD_PATH = "/.well-known/agent-card.json"
# The product's environment must not leak into the runtime's interpreter.
_ENV_NOT_PASSED = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "DJANGO_SETTINGS_MODULE")


class KagentRuntime:
    """A kagent line's agent server (lines.py) in a process of its own, on 127.0.0.1."""

    def __init__(self, line: RuntimeLine, python: Path, workdir: Path) -> None:
        self.line = line
        self.python = python
        self.workdir = workdir
        self.url = ""
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def log_path(self) -> Path:
        return self.workdir / "agent_server.log"

    @property
    def _record_path(self) -> Path:
        return self.workdir / "record.jsonl"

    def start(self, script: Script, *, traces_to: str = "") -> KagentRuntime:
        """``traces_to``: an OTLP/HTTP receiver's URL (tests/support/otlp_receiver.py) the runtime sends
        its own spans to, set up as kagent sets itself up; empty: no telemetry."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        script_path = self.workdir / "script.json"
        script_path.write_text(script.to_json())
        port_file = self.workdir / "port"
        env = {name: value for name, value in os.environ.items() if name not in _ENV_NOT_PASSED}
        env["OTEL_SDK_DISABLED"] = "false" if traces_to else "true"
        if traces_to:
            env.update(
                OTEL_EXPORTER_OTLP_ENDPOINT=traces_to,
                # The signal's own endpoint is the whole URL (kagent 0.10 hands it to the exporter as is).
                OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=traces_to + "/v1/traces",
                OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf",
                OTEL_TRACING_ENABLED="true",  # kagent 0.10's switch
                OTEL_BSP_SCHEDULE_DELAY="100",
            )
        with open(self.log_path, "ab") as log:
            self._process = subprocess.Popen(
                [str(self.python), str(self.line.agent_server), "--script", str(script_path),
                 "--record", str(self._record_path), "--port-file", str(port_file)],
                cwd=self.workdir, env=env, stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
        self._wait_ready(port_file)
        return self

    def _wait_ready(self, port_file: Path) -> None:
        assert self._process is not None
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"the kagent runtime exited at start:\n{self.log_tail()}")
            if port_file.exists():
                self.url = f"http://127.0.0.1:{port_file.read_text()}"
                try:
                    if httpx.get(self.url + AGENT_CARD_PATH, timeout=1).status_code == 200:
                        return
                except httpx.TransportError:
                    pass
            time.sleep(0.1)  # polling for the server to listen, not timing a race
        raise RuntimeError(
            f"the kagent runtime did not start in {START_TIMEOUT_SECONDS} s:\n{self.log_tail()}"
        )

    def model_requests(self) -> list[ModelRequest]:
        """Every request the model received so far, in order."""
        return self._record().model_requests

    def tool_runs(self) -> list[ToolRun]:
        """Every scripted tool that executed so far, in order."""
        return self._record().tool_runs

    def request_headers(self) -> list[dict[str, str]]:
        """The identity headers of every A2A request the runtime received, in order (lower-case names)."""
        return self._record().request_headers

    def _record(self) -> RecordRead:
        if not self._record_path.exists():
            return RecordRead([], [], [])
        # A line is written whole; one still being written has no newline yet.
        lines = [
            line for line in self._record_path.read_text().splitlines(keepends=True) if line.endswith("\n")
        ]
        return read_record(lines)

    def log_tail(self, lines: int = 60) -> str:
        if not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> None:
        if self._process is None or self._process.poll() is not None:
            return
        self._process.send_signal(signal.SIGTERM)
        try:
            self._process.wait(timeout=STOP_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
