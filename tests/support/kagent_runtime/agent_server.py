"""A real kagent 1.0 agent with a scripted model, served on 127.0.0.1 (run by the runtime's own python).

    agent_server.py --script script.json --record record.jsonl --port-file port
    agent_server.py --check     # imports everything, then exits: the build's proof that it works

This file runs inside the runtime's virtualenv (build.py), never in the product's: it imports kagent,
google-adk and a2a-sdk 1.x as kagent 1.0.0a5 ships them. The agent is wired the way kagent's own
``AgentConfig.to_agent`` wires a declarative agent: the script's tools, the built-in ``ask_user``
tool, and kagent's approval callback when a tool requires approval (as an MCP binding with
``require_approval: true`` marks its tools). ``KAgentApp(...).build(local=True)`` serves it: in-memory
sessions and tasks, no controller. A script's remote agents become sub-agent tools as ``to_agent``
makes them from ``remote_agents``: a ``KAgentRemoteA2AToolset`` on the sub-agent's card, which talks
A2A to that agent (another runtime) and turns its pause into a pause of its own. Only the model is
not kagent's: it plays the script's turns in order, one per model call, streaming each turn's text
as kagent's OpenAI adapter does (deltas, then the whole turn with its function calls).

The script (JSON): ``{"tools": [{"name", "requires_approval", "result"}], "remote_agents": [{"name",
"url", "description", "timeout"}], "patch_nested_decision_forward": bool, "turns": [{"text", "calls":
[{"id", "name", "args"}]}]}``. A model call past the last turn fails the task.

The record (JSON lines, appended as things happen): ``{"model_request": [...]}`` with what the model
received since its previous turn (function responses, user text), and ``{"tool_ran": {"id", "name",
"args"}}`` for each tool that executed.

Two things of the stock runtime are changed so that it stays on loopback and off fixed ports: the
readiness listener (0.0.0.0:8081) is not started, and the gRPC A2A listener binds 127.0.0.1 on a free
port. The HTTP port is free too; it is written to ``--port-file`` once bound. A third makes the local
task store keep tasks as a cluster's does, see ``one_owner_task_store``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import sys
import types as module_types
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

APP_NAME = "kourier_conformance_agent"

os.environ.setdefault("OTEL_SDK_DISABLED", "true")
os.environ.setdefault("LOG_LEVEL", "WARNING")

# kagent-proto (not on PyPI) provides these; only the controller and memory gRPC clients use them.
UNPUBLISHED_MODULES = [
    "kagent.api",
    "kagent.api.v1alpha1",
    *(
        f"kagent.api.v1alpha1.{name}"
        for name in ("common_pb2", "memory_pb2", "memory_pb2_grpc", "task_store_pb2", "task_store_pb2_grpc")
    ),
]


def stub_unpublished_modules() -> None:
    for name in UNPUBLISHED_MODULES:
        module = module_types.ModuleType(name)
        module.__path__ = []
        sys.modules.setdefault(name, module)
        parent, _, leaf = name.rpartition(".")
        if parent in sys.modules:
            setattr(sys.modules[parent], leaf, sys.modules[name])


stub_unpublished_modules()

import httpx  # noqa: E402
import kagent.adk._a2a as kagent_a2a  # noqa: E402
import kagent.adk._remote_a2a_tool as remote_a2a_tool  # noqa: E402
import uvicorn  # noqa: E402
from a2a.server.context import ServerCallContext  # noqa: E402
from a2a.server.tasks import InMemoryTaskStore  # noqa: E402
from a2a.types import AgentCard, Part  # noqa: E402
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH  # noqa: E402
from google.adk.agents import Agent  # noqa: E402
from google.adk.models.base_llm import BaseLlm  # noqa: E402
from google.adk.models.llm_request import LlmRequest  # noqa: E402
from google.adk.models.llm_response import LlmResponse  # noqa: E402
from google.adk.tools.base_tool import BaseTool  # noqa: E402
from google.adk.tools.tool_context import ToolContext  # noqa: E402
from google.genai import types  # noqa: E402
from google.protobuf.json_format import ParseDict  # noqa: E402
from kagent.adk import KAgentApp  # noqa: E402
from kagent.adk._approval import make_approval_callback  # noqa: E402
from kagent.adk._remote_a2a_tool import KAgentRemoteA2AToolset  # noqa: E402
from kagent.adk.tools.ask_user_tool import AskUserTool  # noqa: E402


class Record:
    """The record file the test reads: one JSON object per line, written as it happens."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def write(self, kind: str, value: Any) -> None:
        with self.path.open("a") as record:
            record.write(json.dumps({kind: value}) + "\n")


class Script:
    """The model's turns, shared by every agent the runtime builds (it builds one per request)."""

    def __init__(self, turns: list[dict[str, Any]]) -> None:
        self.turns = turns
        self.played = 0

    def next_turn(self) -> dict[str, Any]:
        if self.played >= len(self.turns):
            raise RuntimeError(f"the model script has {len(self.turns)} turns; a call asked for another")
        self.played += 1
        return self.turns[self.played - 1]


class ScriptedModel(BaseLlm):
    model: str = "kourier-scripted-model"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        RECORD.write("model_request", new_contents(llm_request.contents or []))
        turn = SCRIPT.next_turn()
        text = turn.get("text") or ""
        calls = [
            types.FunctionCall(id=call["id"], name=call["name"], args=call.get("args") or {})
            for call in turn.get("calls") or []
        ]
        if stream and text:
            step = max(1, len(text) // 3)
            for start in range(0, len(text), step):
                yield LlmResponse(
                    content=types.Content(
                        role="model", parts=[types.Part.from_text(text=text[start : start + step])]
                    ),
                    partial=True,
                )
        parts = ([types.Part.from_text(text=text)] if text else []) + [
            types.Part(function_call=c) for c in calls
        ]
        yield LlmResponse(
            content=types.Content(role="model", parts=parts),
            partial=False,
            turn_complete=True,
            finish_reason=types.FinishReason.STOP,
        )


def new_contents(contents: list[types.Content]) -> list[dict[str, Any]]:
    """What the model received since its own last turn, part by part."""
    last_model_turn = max((i for i, content in enumerate(contents) if content.role == "model"), default=-1)
    received = []
    for content in contents[last_model_turn + 1 :]:
        for part in content.parts or []:
            if part.function_response is not None:
                response = part.function_response
                received.append(
                    {
                        "function_response": {
                            "id": response.id,
                            "name": response.name,
                            "response": response.response,
                        }
                    }
                )
            elif part.text is not None:
                received.append({"text": part.text})
    return received


class ScriptedTool(BaseTool):
    """A tool that answers the script's fixed result and records that it ran."""

    def __init__(self, name: str, result: Any, requires_approval: bool) -> None:
        super().__init__(name=name, description=f"The scripted tool {name}.")
        self.result = result
        # What kagent's MCP toolset sets on the tools of a binding with require_approval: true.
        object.__setattr__(self, "kagent_requires_approval", requires_approval)

    def _get_declaration(self) -> types.FunctionDeclaration:
        return types.FunctionDeclaration(
            name=self.name, description=self.description, parameters=types.Schema(type=types.Type.OBJECT)
        )

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        RECORD.write("tool_ran", {"id": tool_context.function_call_id, "name": self.name, "args": args})
        return self.result


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

    ``KAgentRemoteA2ATool._handle_resume`` (kagent 1.0.0a5) sends the person's decision to the
    sub-agent's task as a message with the hitl/v1 metadata and no parts; the sub-agent's a2a-sdk
    server validates A2A 1.0's REQUIRED fields and answers -32602 "Validation failed", so the parent's
    tool returns "resume failed" and the sub-agent's tools never run. One text part, as kagent's own
    UI sends with each decision, makes it valid; the sub-agent's executor reads only the metadata.
    """
    attach_hitl_extension = remote_a2a_tool.attach_hitl_extension

    def attach_with_text_part(message: Any, payload: Any) -> Any:
        attach_hitl_extension(message, payload)
        if not message.parts:
            message.parts.append(Part(text="Decision on the sub-agent's tools"))
        return message

    remote_a2a_tool.attach_hitl_extension = attach_with_text_part  # type: ignore[assignment]


def make_agent(tools_spec: list[dict[str, Any]], remote_agents_spec: list[dict[str, Any]]) -> Agent:
    tools: list[BaseTool] = [
        ScriptedTool(spec["name"], spec.get("result", {}), bool(spec.get("requires_approval")))
        for spec in tools_spec
    ]
    remote_agents = [remote_agent_tool(spec) for spec in remote_agents_spec]
    needs_approval = any(spec.get("requires_approval") for spec in tools_spec)
    return Agent(
        name=APP_NAME,
        model=ScriptedModel(),
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


def serve(script_path: Path, port_file: Path) -> None:
    spec = json.loads(script_path.read_text())
    SCRIPT.turns = spec.get("turns") or []
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
        a2a_grpc_address="127.0.0.1:0",
    )
    runtime._readiness_lifespan = no_readiness_listener
    kagent_a2a.InMemoryTaskStore = one_owner_task_store  # type: ignore[assignment]
    app = runtime.build(local=True)
    written = port_file.with_name(port_file.name + ".partial")
    written.write_text(str(port))
    written.replace(port_file)  # the test never reads half a number
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[listener])


SCRIPT = Script([])
RECORD = Record(Path(os.devnull))

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--check", action="store_true", help="import everything and exit")
    parser.add_argument("--script", type=Path)
    parser.add_argument("--record", type=Path)
    parser.add_argument("--port-file", type=Path)
    options = parser.parse_args()
    if not options.check:
        RECORD = Record(options.record)
        serve(options.script, options.port_file)
