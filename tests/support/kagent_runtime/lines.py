"""The kagent lines the conformance tests run, each a runtime of its own (its lock file, its agent server).

| line | what people run it as | A2A | HITL on the wire |
| --- | --- | --- | --- |
| ``0.10.4`` | the stable line (``pip install kagent-adk``; kagent 0.10's Python runtime) | 0.3 | ``adk_request_confirmation`` parts, ``decision_type`` answers |
| ``1.0.0a17`` | the newest 1.0 pre-release on the package index (kagent 1.0's Python runtime) | 1.0 | the hitl/v1 message extension |

kagent-adk 1.0.0a5, the pre-release the project first ran, is no longer run: every case it ran runs on
1.0.0a17, and the one thing only it could show, its sub-agent forward without parts, 1.0.0a17 still
does (test_kagent_approvals.py pins it). kagent 0.10's Go runtime cannot be installed here; it is
covered by golden transcripts written from its source (tests/a2a/data/kagent_go) and by the scripted
agent speaking as it (the "kagent-go" text style).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
LOCKS = HERE / "locks"


@dataclass(frozen=True)
class RuntimeLine:
    name: str  # the kagent-adk version: a test id, and part of the cache folder's name
    lock_file: Path
    agent_server: Path  # runs inside the line's virtualenv
    a2a_version: str  # what its agent card offers ("0.3" or "1.0")

    def __str__(self) -> str:
        return f"kagent-adk {self.name}"

    @property
    def is_v010(self) -> bool:
        return self.a2a_version == "0.3"


KAGENT_0_10 = RuntimeLine("0.10.4", LOCKS / "kagent-adk-0.10.4.txt", HERE / "agent_server_v010.py", "0.3")
KAGENT_1_0 = RuntimeLine("1.0.0a17", LOCKS / "kagent-adk-1.0.0a17.txt", HERE / "agent_server.py", "1.0")

LINES: tuple[RuntimeLine, ...] = (KAGENT_0_10, KAGENT_1_0)
