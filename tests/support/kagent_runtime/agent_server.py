"""A real kagent 1.0 agent with a scripted model, served on 127.0.0.1 (run by the runtime's own python).

    agent_server.py --script script.json --record record.jsonl --port-file port
    agent_server.py --check     # imports everything, then exits: the build's proof that it works

This file runs inside the 1.0 line's virtualenv (build.py), never in the product's: it imports kagent,
google-adk and a2a-sdk 1.x as kagent-adk 1.0 ships them (lines.py names the pre-release). The agent is
wired the way kagent's own ``AgentConfig.to_agent`` wires a declarative agent: the script's tools, the
built-in ``ask_user`` tool, and kagent's approval callback when a tool requires approval (as an MCP
binding with ``require_approval: true`` marks its tools). ``KAgentApp(...).build(local=True)`` serves
it: in-memory sessions and tasks, no controller. A script's remote agents become sub-agent tools as
``to_agent`` makes them from ``remote_agents``: a ``KAgentRemoteA2AToolset`` on the sub-agent's card,
which talks A2A to that agent (another runtime) and turns its pause into a pause of its own. Only the
model is not kagent's (scripted_agent.py).

The script (JSON): ``{"tools": [{"name", "requires_approval", "result"}], "remote_agents": [{"name",
"url", "description", "timeout"}], "patch_nested_decision_forward": bool, "turns": [{"text", "calls":
[{"id", "name", "args"}], "usage": {"input", "output"}}]}``. A model call past the last turn fails the
task.

The record (JSON lines, appended as things happen): ``{"model_request": [...]}`` with what the model
received since its previous turn (function responses, user text), ``{"tool_ran": {"id", "name",
"args"}}`` for each tool that executed, and ``{"request_headers": {...}}`` for each A2A request.

Two things of the stock runtime are changed so that it stays on loopback and off fixed ports: the
readiness listener (0.0.0.0:8081) is not started, and the gRPC A2A listener binds 127.0.0.1 on a free
port. The HTTP port is free too; it is written to ``--port-file`` once bound. A third makes the local
task store keep tasks as a cluster's does, see ``one_owner_task_store``.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import socket
import sys
import types as module_types
from pathlib import Path
from typing import Any

APP_NAME = "kourier_conformance_agent"

os.environ.setdefault("OTEL_SDK_DISABLED", "true")
os.environ.setdefault("LOG_LEVEL", "WARNING")


class UnpublishedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """kagent-proto's modules: kagent-adk 1.0 imports them, but kagent-proto is not on the package index.

    Only the controller's and memory's gRPC clients and the controller-rendered configuration use them,
    none of which a local runtime touches. Each name imported from them is a placeholder class, and the
    server hands ``KAgentApp`` a ``LocalConfig`` of its own instead of kagent's protobuf ``Config``.
    """

    PACKAGES = ("kagent.api", "kagent.runtime", "kagent.config")

    def find_spec(self, name: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if name in self.PACKAGES or name.startswith(tuple(f"{package}." for package in self.PACKAGES)):
            return importlib.util.spec_from_loader(name, self, is_package=True)
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None

    def exec_module(self, module: module_types.ModuleType) -> None:
        placeholders: dict[str, type] = {}

        def placeholder(attribute: str) -> type:
            if attribute.startswith("__"):
                raise AttributeError(attribute)
            return placeholders.setdefault(attribute, type(attribute, (), {}))

        module.__dict__["__getattr__"] = placeholder


sys.meta_path.insert(0, UnpublishedModules())

import httpx  # noqa: E402
import kagent.adk._a2a as kagent_a2a  # noqa: E402
import kagent.adk._remote_a2a_tool as remote_a2a_tool  # noqa: E402
import scripted_agent  # noqa: E402
import uvicorn  # noqa: E402
from a2a.server.context import ServerCallContext  # noqa: E402
from a2a.server.tasks import InMemoryTaskStore  # noqa: E402
from a2a.types import AgentCard, Part  # noqa: E402
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH  # noqa: E402
from google.adk.agents import Agent  # noqa: E402
from google.adk.tools.base_tool import BaseTool  # noqa: E402
from google.protobuf.json_format import ParseDict  # noqa: E402
from kagent.adk import KAgentApp  # noqa: E402
from kagent.adk._approval import make_approval_callback  # noqa: E402
from kagent.adk._remote_a2a_tool import KAgentRemoteA2AToolset  # noqa: E402
from kagent.adk.tools.ask_user_tool import AskUserTool  # noqa: E402


class LocalConfig:
    """What ``KAgentApp`` reads of kagent's controller-rendered ``Config`` (a kagent-proto message)
    when it builds a local runtime: no field set, as a declarative agent without memory, context
    compaction, a session database or a content-length override."""

    class _Unset:
        session_db_url = ""
        host = ""
        port = 0

        def HasField(self, name: str) -> bool:
            return False

    agent = _Unset()
    runtime = _Unset()


def remote_agent_tool(spec: dict[str, Any]) -> KAgentRemoteA2AToolset:
    # As to_agent builds one from a RemoteAgentConfig without headers.
    return KAgentRemoteA2AToolset(
        name=spec["name"],
        description=spec.get("description") or "",
        agent_card_url=f"{spec['url']}{AGENT_CARD_WELL_KNOWN_PATH}",
        httpx_client=httpx.AsyncClient(timeout=httpx.Timeout(timeout=spec.get("timeout", 30.0))),
    )


def patch_nested_decision_forward() -> None:
    """Gives the decision kagent forwards to a paused sub-agent the text part it lacks.

    ``KAgentRemoteA2ATool._handle_resume`` (kagent-adk 1.0.0a5 through 1.0.0a17) sends the person's
    decision to the sub-agent's task as a message with the hitl/v1 metadata and no parts; the
    sub-agent's a2a-sdk server validates A2A 1.0's REQUIRED fields and answers -32602 "Validation
    failed", so the parent's tool returns "resume failed" and the sub-agent's tools never run. One text
    part, as kagent's own UI sends with each decision, makes it valid; the sub-agent's executor reads
    only the metadata.
    """
    attach_hitl_extension = remote_a2a_tool.attach_hitl_extension

    def attach_with_text_part(message: Any, payload: Any) -> Any:
        attach_hitl_extension(message, payload)
        if not message.parts:
            message.parts.append(Part(text="Decision on the sub-agent's tools"))
        return message

    remote_a2a_tool.attach_hitl_extension = attach_with_text_part  # type: ignore[assignment]


def make_agent(tools_spec: list[dict[str, Any]], remote_agents_spec: list[dict[str, Any]]) -> Agent:
    tools: list[BaseTool] = scripted_agent.scripted_tools(tools_spec)
    remote_agents = [remote_agent_tool(spec) for spec in remote_agents_spec]
    needs_approval = any(spec.get("requires_approval") for spec in tools_spec)
    return Agent(
        name=APP_NAME,
        model=scripted_agent.ScriptedModel(),
        description="An agent whose model plays a script",
        static_instruction="You follow the script.",
        tools=[*tools, *remote_agents, AskUserTool()],
        before_tool_callback=make_approval_callback() if needs_approval else None,
    )


def agent_card(port: int) -> AgentCard:
    # As kagent's cli reads the controller's agent-card.json.
    return ParseDict(
        {
            "name": APP_NAME,
            "description": "kagent 1.0 runtime with a scripted model",
            "version": "0.0.1",
            "supportedInterfaces": [
                {"url": f"http://127.0.0.1:{port}/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
            ],
            "capabilities": {"streaming": True},
            "skills": [
                {"id": "script", "name": "script", "description": "Plays its script", "tags": ["test"]}
            ],
            "defaultInputModes": ["text"],
            "defaultOutputModes": ["text"],
        },
        AgentCard(),
    )


def one_owner_task_store() -> InMemoryTaskStore:
    """The local task store, with every task under one owner, as in the controller's store.

    ``build(local=True)`` keeps tasks in a2a-sdk's ``InMemoryTaskStore``, which files each under the
    caller's user name. A kagent parent calls its sub-agent with ``x-user-id``; kagent applies that
    header after the SDK looked the task up but before it saves it, so the sub-agent saves the paused
    task under that user and looks it up, when the decision comes, under the anonymous one: "Task …
    not found". In a cluster the controller's store (``KAgentTaskStore``) keeps a runtime's tasks
    without an owner, and the decision finds its task.
    """

    def everyone(context: ServerCallContext) -> str:
        return "local"

    return InMemoryTaskStore(owner_resolver=everyone)


def no_readiness_listener():
    @contextlib.asynccontextmanager
    async def lifespan(app):
        yield

    return lifespan


def trace_as_kagent_does(server: Any) -> None:
    """Sets up OpenTelemetry as kagent's cli does (``bootstrap`` and ``instrument_app``), from the OTEL_*
    variables alone: ``bootstrap`` also reads the controller-rendered config, a kagent-proto message
    this runtime has no module for (``UnpublishedModules``), so its steps are taken here without it.
    The exporters, propagator (``tracecontext``), resource, span processor and instrumentation are
    kagent's own, and google-adk's spans (the agent, its model calls, its tools) join the trace a
    request's ``traceparent`` names."""
    from kagent.core.telemetry import _boot, instrument_app
    from kagent.core.telemetry._conv import KagentRuntimeValues
    from kagent.core.telemetry._profiles import COMMON_INSTRUMENTORS, profile_for
    from opentelemetry.propagate import set_global_textmap

    for name, value in {
        "OTEL_PROPAGATORS": "tracecontext",
        "OTEL_TRACES_EXPORTER": "otlp",
        "OTEL_METRICS_EXPORTER": "none",
        "OTEL_LOGS_EXPORTER": "none",
        "ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS": "false",
    }.items():
        os.environ.setdefault(name, value)  # as kagent's _defaults.apply sets them
    runtime_kind = KagentRuntimeValues.ADK_PYTHON
    identity = _boot.Identity(runtime=runtime_kind, agent_name=APP_NAME, agent_namespace="default")
    set_global_textmap(_boot._environment_propagator())
    _boot._install_providers(identity, module_types.SimpleNamespace(resource_attributes={}))
    _boot._instrument(COMMON_INSTRUMENTORS + profile_for(runtime_kind).instrumentors, {})
    instrument_app(server)


def serve(script_path: Path, record_path: Path, port_file: Path) -> None:
    spec = scripted_agent.load(script_path, record_path)
    tools_spec = spec.get("tools") or []
    remote_agents_spec = spec.get("remote_agents") or []
    if spec.get("patch_nested_decision_forward"):
        patch_nested_decision_forward()

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    runtime = KAgentApp(
        lambda: make_agent(tools_spec, remote_agents_spec),
        agent_card(port),
        kagent_api_url="http://127.0.0.1:9",  # never called with build(local=True)
        app_name=APP_NAME,
        stream=True,
        config=LocalConfig(),
        a2a_grpc_address="127.0.0.1:0",
    )
    runtime._readiness_lifespan = no_readiness_listener
    kagent_a2a.InMemoryTaskStore = one_owner_task_store  # type: ignore[assignment]
    server = runtime.build(local=True)
    if os.environ.get("OTEL_SDK_DISABLED", "").lower() != "true":
        trace_as_kagent_does(server)
    app = scripted_agent.HeaderLog(server)
    written = port_file.with_name(port_file.name + ".partial")
    written.write_text(str(port))
    written.replace(port_file)  # the test never reads half a number
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[listener])


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--check", action="store_true", help="import everything and exit")
    parser.add_argument("--script", type=Path)
    parser.add_argument("--record", type=Path)
    parser.add_argument("--port-file", type=Path)
    options = parser.parse_args()
    if not options.check:
        serve(options.script, options.record, options.port_file)
