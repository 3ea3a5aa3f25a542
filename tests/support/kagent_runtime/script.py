"""What a test scripts the runtime's model to do, and what the runtime records back (agent_server.py).

A script is the model's turns in order, one per model call, and the tools the agent has: its own
``Tool``s and its sub-agents (``RemoteAgent``, another running runtime). A turn is text and/or function
calls; ``ask_user`` is kagent's built-in tool, every other name must be one of the script's tools or
sub-agents (a sub-agent is called with ``{"request": text}``, see ``ask_agent``). What the model
received and which tools ran come back as ``ModelRequest`` and ``ToolRun`` values.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Tool:
    """A tool of the agent that answers ``result`` when it runs; ``requires_approval`` as an MCP
    binding with ``require_approval: true`` would mark it."""

    name: str
    result: Any = field(default_factory=dict)
    requires_approval: bool = False


@dataclass(frozen=True)
class RemoteAgent:
    """A sub-agent of the agent, as a kagent Agent's ``tools`` of type Agent wires it (``remote_agents``
    in the runtime's config): a tool named ``name`` that talks A2A to the agent served at ``url``."""

    name: str
    url: str
    description: str = ""
    # kagent's RemoteAgentConfig.timeout: how long a call may wait for the sub-agent's answer (its
    # default, 30 s, is short for a sub-agent whose first model turn imports much of ADK on a busy host).
    timeout_seconds: float = 30.0


@dataclass(frozen=True)
class Call:
    call_id: str
    name: str
    args: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Usage:
    """The tokens a model turn reports, as a provider reports them on the whole turn."""

    input: int
    output: int


@dataclass(frozen=True)
class Turn:
    text: str = ""
    calls: Sequence[Call] = ()
    usage: Usage | None = None
    # Files the model answers with, (media type, bytes) each: inline data parts of its content.
    files: Sequence[tuple[str, bytes]] = ()


@dataclass(frozen=True)
class Script:
    turns: Sequence[Turn]
    tools: Sequence[Tool] = ()
    remote_agents: Sequence[RemoteAgent] = ()
    # kagent 1.0 (1.0.0a5 through 1.0.0a17) forwards a decision on a sub-agent's tools as a message without parts, which the
    # sub-agent's a2a-sdk refuses ("Validation failed": parts is REQUIRED in A2A 1.0), so the sub-agent
    # never gets it. True patches that one forward to carry a text part (agent_server.py): for tests
    # that follow a decision into the sub-agent, since the pinned runtime cannot deliver it.
    patch_nested_decision_forward: bool = False

    def to_json(self) -> str:
        return json.dumps(
            {
                "tools": [
                    {"name": tool.name, "result": tool.result, "requires_approval": tool.requires_approval}
                    for tool in self.tools
                ],
                "patch_nested_decision_forward": self.patch_nested_decision_forward,
                "remote_agents": [
                    {
                        "name": agent.name,
                        "url": agent.url,
                        "description": agent.description,
                        "timeout": agent.timeout_seconds,
                    }
                    for agent in self.remote_agents
                ],
                "turns": [
                    {
                        "text": turn.text,
                        "calls": [
                            {"id": c.call_id, "name": c.name, "args": dict(c.args)} for c in turn.calls
                        ],
                        "usage": {"input": turn.usage.input, "output": turn.usage.output}
                        if turn.usage
                        else None,
                        "files": [
                            {"mime_type": kind, "data": base64.b64encode(data).decode()}
                            for kind, data in turn.files
                        ],
                    }
                    for turn in self.turns
                ],
            }
        )


def question(
    text: str, choices: Sequence[str] | None = None, *, multiple: bool | None = None
) -> dict[str, Any]:
    """One question of an ``ask_user`` call, in the tool's own argument shape.

    Only ``question`` is required by the tool's schema: what is not given is left out of the call, as a
    model may leave it out.
    """
    asked: dict[str, Any] = {"question": text}
    if choices is not None:
        asked["choices"] = list(choices)
    if multiple is not None:
        asked["multiple"] = multiple
    return asked


def ask_user(call_id: str, *questions: dict[str, Any]) -> Call:
    return Call(call_id, "ask_user", {"questions": list(questions)})


def ask_agent(call_id: str, agent: RemoteAgent, request: str) -> Call:
    """A call of a sub-agent's tool: its one argument is the request the sub-agent receives as text."""
    return Call(call_id, agent.name, {"request": request})


@dataclass(frozen=True)
class ModelRequest:
    """What the model received in one call since its own previous turn, in order."""

    parts: Sequence[Mapping[str, Any]]

    @property
    def function_responses(self) -> dict[str, Any]:
        """The function responses by call id: what tools (and people, through them) answered."""
        return {
            part["function_response"]["id"]: part["function_response"]["response"]
            for part in self.parts
            if "function_response" in part
        }

    @property
    def text(self) -> str:
        return "".join(part["text"] for part in self.parts if "text" in part)

    @property
    def files(self) -> list[tuple[str, bytes]]:
        """The inline data the model received (files a message carried), (media type, bytes) each."""
        return [
            (part["inline_data"]["mime_type"], base64.b64decode(part["inline_data"]["data"]))
            for part in self.parts
            if "inline_data" in part
        ]


@dataclass(frozen=True)
class ToolRun:
    call_id: str
    name: str
    args: Mapping[str, Any]


@dataclass(frozen=True)
class RecordRead:
    model_requests: list[ModelRequest]
    tool_runs: list[ToolRun]
    request_headers: list[dict[str, str]]


def read_record(lines: Sequence[str]) -> RecordRead:
    """The record's model requests, tool runs and request headers, each in the order they happened."""
    read = RecordRead([], [], [])
    for line in lines:
        entry = json.loads(line)
        if "model_request" in entry:
            read.model_requests.append(ModelRequest(entry["model_request"]))
        elif "tool_ran" in entry:
            ran = entry["tool_ran"]
            read.tool_runs.append(ToolRun(ran["id"], ran["name"], ran["args"]))
        elif "request_headers" in entry:
            read.request_headers.append(entry["request_headers"])
    return read
