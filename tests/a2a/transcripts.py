"""Real wire transcripts of kagent agents, as golden inputs.

The files under ``data/`` are captured unchanged from real kagent runtimes with a scripted model
(docs/kagent-dialect.md): kagent 0.10.4 speaking A2A 0.3 (``kagent_v010``) and kagent
1.0.0a5 speaking A2A 1.0 (``kagent_v1alpha``). ``kagent_go`` is not a capture: kagent 0.10's Go runtime,
written from its source (``data/kagent_go/README.md`` cites the files). Each line is one record: a
JSON-RPC ``request``, an ``sse`` event or a plain ``response`` to it, in wire order.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kourier.a2a import codec_v03, codec_v10
from kourier.a2a.dialects.reader import TurnReader
from kourier.a2a.events import AgentEvent
from kourier.a2a.wire import StreamEvent

DATA = Path(__file__).parent / "data"
V010 = "kagent_v010"
V1ALPHA = "kagent_v1alpha"
GO = "kagent_go"


@dataclass
class Exchange:
    """One JSON-RPC request and what came back: the SSE payloads or the single response payload."""

    request: dict[str, Any]
    headers: dict[str, str]
    note: str
    responses: list[dict[str, Any]] = field(default_factory=list)

    @property
    def method(self) -> str:
        return self.request["method"]

    @property
    def results(self) -> list[Any]:
        return [response["result"] for response in self.responses if "result" in response]


def exchanges(line: str, name: str) -> list[Exchange]:
    """The exchanges of transcript ``name`` (e.g. "01_two_tools_approve_one_deny_one") of a kagent line."""
    found: list[Exchange] = []
    for raw in (DATA / line / f"{name}.jsonl").read_text().splitlines():
        record = json.loads(raw)
        if record["kind"] == "request":
            found.append(Exchange(record["payload"], record.get("headers") or {}, record.get("note") or ""))
        elif record["kind"] in ("sse", "response"):
            found[-1].responses.append(record["payload"])
    return found


def agent_card(line: str) -> dict[str, Any]:
    return json.loads((DATA / line / "agent_card.json").read_text())


def wire_events(line: str, exchange: Exchange) -> list[StreamEvent]:
    """The results of an exchange decoded by the codec of its protocol version."""
    codec = codec_v10.CODEC if line == V1ALPHA else codec_v03.CODEC
    if exchange.method in ("GetTask", "CancelTask", "tasks/get", "tasks/cancel"):
        return [codec.decode_task(result) for result in exchange.results]
    return [codec.decode_stream_event(result) for result in exchange.results]


def read(reader: TurnReader, events: list[StreamEvent]) -> list[AgentEvent]:
    """Everything a reader makes of some wire events."""
    return [normalized for event in events for normalized in reader.feed(event)]
