"""What every line's agent server shares: the scripted model, the scripted tools and the record.

Runs inside a runtime's virtualenv (imported by ``agent_server.py`` and ``agent_server_v010.py``, from
this folder), never in the product's. It uses only google-adk and google-genai, whose model and tool
interfaces are the same in google-adk 1.x (kagent 0.10) and 2.x (kagent 1.0).

The model plays the script's turns in order, one per model call, streaming each turn's text as
kagent's OpenAI adapter does (deltas, then the whole turn with its function calls); a turn with
``usage`` reports it as the provider would, on the whole turn (``usage_metadata``).
"""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.tool_context import ToolContext
from google.genai import types


class Record:
    """The record file the test reads: one JSON object per line, written as it happens."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def write(self, kind: str, value: Any) -> None:
        with self.path.open("a") as record:
            record.write(json.dumps({kind: value}) + "\n")


class ModelScript:
    """The model's turns, shared by every agent the runtime builds (it builds one per request)."""

    def __init__(self, turns: list[dict[str, Any]]) -> None:
        self.turns = turns
        self.played = 0

    def next_turn(self) -> dict[str, Any]:
        if self.played >= len(self.turns):
            raise RuntimeError(f"the model script has {len(self.turns)} turns; a call asked for another")
        self.played += 1
        return self.turns[self.played - 1]


SCRIPT = ModelScript([])
RECORD = Record(Path("/dev/null"))


def load(script_path: Path, record_path: Path) -> dict[str, Any]:
    """Reads the script file, points the model at its turns and the record at its file."""
    global RECORD
    spec = json.loads(script_path.read_text())
    SCRIPT.turns = spec.get("turns") or []
    RECORD = Record(record_path)
    return spec


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
        parts += [
            types.Part(
                inline_data=types.Blob(mime_type=file["mime_type"], data=base64.b64decode(file["data"]))
            )
            for file in turn.get("files") or []
        ]
        usage = turn.get("usage")
        yield LlmResponse(
            content=types.Content(role="model", parts=parts),
            partial=False,
            turn_complete=True,
            finish_reason=types.FinishReason.STOP,
            usage_metadata=types.GenerateContentResponseUsageMetadata(
                prompt_token_count=usage["input"],
                candidates_token_count=usage["output"],
                total_token_count=usage["input"] + usage["output"],
            )
            if usage
            else None,
        )


def new_contents(contents: list[types.Content]) -> list[dict[str, Any]]:
    """What the model received since its own last turn, part by part."""
    last_model_turn = max((i for i, content in enumerate(contents) if content.role == "model"), default=-1)
    received: list[dict[str, Any]] = []
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
            elif part.inline_data is not None:
                data = part.inline_data.data or b""
                received.append(
                    {
                        "inline_data": {
                            "mime_type": part.inline_data.mime_type,
                            "data": base64.b64encode(data).decode(),
                        }
                    }
                )
    return received


class ScriptedTool(BaseTool):
    """A tool that answers the script's fixed result and records that it ran."""

    def __init__(self, name: str, result: Any, requires_approval: bool) -> None:
        super().__init__(name=name, description=f"The scripted tool {name}.")
        self.result = result
        # What kagent 1.0's MCP toolset sets on the tools of a binding with require_approval: true
        # (kagent 0.10 names them to its approval callback instead; the attribute is then unused).
        object.__setattr__(self, "kagent_requires_approval", requires_approval)

    def _get_declaration(self) -> types.FunctionDeclaration:
        return types.FunctionDeclaration(
            name=self.name, description=self.description, parameters=types.Schema(type=types.Type.OBJECT)
        )

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        RECORD.write("tool_ran", {"id": tool_context.function_call_id, "name": self.name, "args": args})
        return self.result


def scripted_tools(tools_spec: list[dict[str, Any]]) -> list[BaseTool]:
    return [
        ScriptedTool(spec["name"], spec.get("result", {}), bool(spec.get("requires_approval")))
        for spec in tools_spec
    ]


class HeaderLog:
    """ASGI middleware that records the headers of each A2A request (``{"request_headers": ...}``).

    The tests read who a request said it came for (``X-User-Id``) and which credential it carried
    (``Authorization``), as kagent's own request handling reads them.
    """

    RECORDED = ("x-user-id", "authorization", "a2a-version", "a2a-extensions")

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") == "http" and scope.get("method") == "POST":
            headers = {
                name.decode("latin-1").lower(): value.decode("latin-1")
                for name, value in scope.get("headers") or []
            }
            RECORD.write(
                "request_headers", {name: headers[name] for name in self.RECORDED if name in headers}
            )
        await self.app(scope, receive, send)
