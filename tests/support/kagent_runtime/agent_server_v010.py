"""A real kagent 0.10 agent with a scripted model, served on 127.0.0.1 (run by the runtime's own python).

    agent_server_v010.py --script script.json --record record.jsonl --port-file port
    agent_server_v010.py --check     # imports everything, then exits: the build's proof that it works

This file runs inside the 0.10 line's virtualenv (build.py), never in the product's: it imports
kagent-adk 0.10.4, google-adk 1.x and a2a-sdk 0.3 as the stable line ships them. The agent is wired as
kagent 0.10's ``AgentConfig.to_agent`` wires a declarative agent: the script's tools, the built-in
``ask_user`` tool, a sub-agent tool (``KAgentRemoteA2AToolset``) per remote agent, and, when a tool
requires approval, ``make_approval_callback`` with the names of those tools (as an MCP server's
``require_approval`` list gives them) and ``strip_confirmation_parts_callback`` before the model.
``KAgentApp(...).build(local=True)`` serves it: in-memory sessions and tasks, no controller. Only the
model is not kagent's (scripted_agent.py).

The script, the record and the port file are agent_server.py's; ``patch_nested_decision_forward`` is
a 1.0 matter and is ignored here. The 0.10 app starts no listener besides uvicorn's, which binds a free
port on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import os
import socket
from pathlib import Path
from typing import Any

os.environ.setdefault("OTEL_SDK_DISABLED", "true")
os.environ.setdefault("LOG_LEVEL", "WARNING")

import httpx
import scripted_agent
import uvicorn
from a2a.types import AgentCapabilities, AgentCard
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH
from google.adk.agents import Agent
from google.adk.tools.base_tool import BaseTool
from kagent.adk import KAgentApp
from kagent.adk._approval import make_approval_callback, strip_confirmation_parts_callback
from kagent.adk._remote_a2a_tool import KAgentRemoteA2AToolset
from kagent.adk.tools.ask_user_tool import AskUserTool

APP_NAME = "kourier_conformance_agent"


def remote_agent_tool(spec: dict[str, Any]) -> KAgentRemoteA2AToolset:
    # As to_agent builds one from a RemoteAgentConfig without headers.
    return KAgentRemoteA2AToolset(
        name=spec["name"],
        description=spec.get("description") or "",
        agent_card_url=f"{spec['url']}{AGENT_CARD_WELL_KNOWN_PATH}",
        httpx_client=httpx.AsyncClient(timeout=httpx.Timeout(timeout=spec.get("timeout", 30.0))),
    )


def make_agent(tools_spec: list[dict[str, Any]], remote_agents_spec: list[dict[str, Any]]) -> Agent:
    tools: list[BaseTool] = scripted_agent.scripted_tools(tools_spec)
    remote_agents = [remote_agent_tool(spec) for spec in remote_agents_spec]
    requiring_approval = {spec["name"] for spec in tools_spec if spec.get("requires_approval")}
    return Agent(
        name=APP_NAME,
        model=scripted_agent.ScriptedModel(),
        description="An agent whose model plays a script",
        static_instruction="You follow the script.",
        tools=[*tools, *remote_agents, AskUserTool()],
        before_tool_callback=make_approval_callback(requiring_approval) if requiring_approval else None,
        before_model_callback=[strip_confirmation_parts_callback] if requiring_approval else [],
    )


def agent_card(port: int) -> AgentCard:
    # An A2A 0.3 card, as kagent 0.10's controller writes one (a top-level url and protocolVersion). The
    # runtime's a2a-sdk 0.3 card is a pydantic model; mypy reads the product's a2a-sdk 1.x one.
    return AgentCard(  # type: ignore[call-arg]
        name=APP_NAME,
        description="kagent 0.10 runtime with a scripted model",
        url=f"http://127.0.0.1:{port}/",
        version="0.0.1",
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text"],
        default_output_modes=["text"],
        skills=[],
    )


def serve(script_path: Path, record_path: Path, port_file: Path) -> None:
    spec = scripted_agent.load(script_path, record_path)
    tools_spec = spec.get("tools") or []
    remote_agents_spec = spec.get("remote_agents") or []

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    runtime = KAgentApp(
        lambda: make_agent(tools_spec, remote_agents_spec),
        agent_card(port),
        kagent_url="http://127.0.0.1:9",  # never called with build(local=True)
        app_name=APP_NAME,
        stream=True,
    )
    server = runtime.build(local=True)
    if os.environ.get("OTEL_SDK_DISABLED", "").lower() != "true":
        # As kagent 0.10's cli does; it reads OTEL_TRACING_ENABLED and the OTLP variables.
        from kagent.core import configure_tracing

        configure_tracing(APP_NAME, "default", server)
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
