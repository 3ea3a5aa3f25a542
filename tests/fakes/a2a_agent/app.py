"""The ASGI app of one scripted agent: the SDK's request handler behind protocol-specific routes.

- protocol "1.0": the SDK's JSON-RPC route at "/" without 0.3 compatibility, exactly as kagent 1.0
  mounts it (legacy `message/send` -> -32601, no A2A-Version header -> -32009).
- protocol "0.3": the SDK's v0.3 compatibility adapter (`JSONRPC03Adapter`, what
  `enable_v0_3_compat=True` plugs in) serves the 0.3 methods, and the 1.0 method names are unknown
  (-32601), as on a real 0.3 agent. a2a-sdk can only serve 0.3 next to 1.0 on one endpoint, so the
  route picks the adapter itself instead of using the combined dispatcher.
"""

from __future__ import annotations

from collections.abc import AsyncIterable
from typing import Any

# a2a-sdk 1.3.0 has an import cycle (compat.v0_3.jsonrpc_adapter <-> server.routes): routes go first.
from a2a.server.routes import DefaultServerCallContextBuilder, create_agent_card_routes, create_jsonrpc_routes

# isort: split
from a2a.compat.v0_3 import types as types_v03
from a2a.compat.v0_3.jsonrpc_adapter import JSONRPC03Adapter
from a2a.compat.v0_3.request_handler import RequestHandler03
from a2a.server.context import ServerCallContext
from a2a.server.request_handlers import RequestHandler
from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
from a2a.types import AgentCard
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from tests.fakes.a2a_agent.card import Protocol, card_json
from tests.fakes.a2a_agent.executor import EXCHANGE_STATE_KEY
from tests.fakes.a2a_agent.wire import EXCHANGE_SCOPE_KEY, Wire, WireMiddleware

PAUSED_STATES_V03 = (types_v03.TaskState.input_required, types_v03.TaskState.auth_required)


class ExchangeAwareContextBuilder(DefaultServerCallContextBuilder):
    """Passes the wire's exchange token to the executor, so a script can cut its own connection."""

    def build(self, request: Request) -> ServerCallContext:
        context = super().build(request)
        context.state[EXCHANGE_STATE_KEY] = request.scope.get(EXCHANGE_SCOPE_KEY)
        return context


def build_app(*, protocol: Protocol, handler: RequestHandler, card: AgentCard, wire: Wire) -> WireMiddleware:
    context_builder = ExchangeAwareContextBuilder()
    routes: list[BaseRoute]
    if protocol == "1.0":
        routes = [
            *create_agent_card_routes(card),
            *create_jsonrpc_routes(handler, "/", context_builder=context_builder),
        ]
    else:
        legacy = LegacyJsonRpcRoute(handler, context_builder)
        routes = [
            Route(AGENT_CARD_WELL_KNOWN_PATH, _serve_json(card_json(card, "0.3")), methods=["GET"]),
            Route("/", legacy.handle, methods=["POST"]),
        ]
    return WireMiddleware(Starlette(routes=routes), wire)


class LegacyJsonRpcRoute:
    """JSON-RPC for a 0.3-only agent: 0.3 methods through the SDK's compat adapter, nothing else."""

    def __init__(self, handler: RequestHandler, context_builder: DefaultServerCallContextBuilder) -> None:
        self._adapter = _FaithfulV03Adapter(handler, context_builder)
        # Only for what is not a 0.3 call: parse errors, invalid requests, unknown methods.
        self._dispatcher = JsonRpcDispatcher(handler, context_builder)

    async def handle(self, request: Request) -> Response:
        try:
            body = await request.json()
        except ValueError:
            return await self._dispatcher.handle_requests(request)  # answers the parse error
        if not isinstance(body, dict) or body.get("jsonrpc") != "2.0":
            return await self._dispatcher.handle_requests(request)
        method = body.get("method")
        if isinstance(method, str) and self._adapter.supports_method(method):
            return await self._adapter.handle_request(
                request_id=body.get("id"), method=method, body=body, request=request
            )
        if method in JsonRpcDispatcher.METHOD_TO_MODEL:  # a 1.0 name: unknown to a 0.3 agent
            return JSONResponse(
                {
                    "jsonrpc": "2.0",
                    "id": body.get("id"),
                    "error": {"code": -32601, "message": "Method not found"},
                }
            )
        return await self._dispatcher.handle_requests(request)


class _FaithfulV03Adapter(JSONRPC03Adapter):
    def __init__(self, handler: RequestHandler, context_builder: DefaultServerCallContextBuilder) -> None:
        super().__init__(http_handler=handler, context_builder=context_builder)
        self.handler = _PausesAreFinal(request_handler=handler)


class _PausesAreFinal(RequestHandler03):
    """Marks input-required / auth-required status updates `final: true` on 0.3 streams.

    a2a-sdk 0.3 servers close a stream on a status update only when the agent sets `final`, so every
    0.3 agent that pauses (kagent 0.10 included) sends its input-required update with `final: true`.
    The 1.x compat layer derives `final` from terminal states only, which no real 0.3 agent sends.
    """

    async def on_message_send_stream(  # type: ignore[override]
        self, request: types_v03.SendMessageRequest, context: ServerCallContext
    ) -> AsyncIterable[types_v03.SendStreamingMessageSuccessResponse]:
        async for response in super().on_message_send_stream(request, context):
            yield _mark_pause_final(response)

    async def on_subscribe_to_task(  # type: ignore[override]
        self, request: types_v03.TaskResubscriptionRequest, context: ServerCallContext
    ) -> AsyncIterable[types_v03.SendStreamingMessageSuccessResponse]:
        async for response in super().on_subscribe_to_task(request, context):
            yield _mark_pause_final(response)


def _mark_pause_final(
    response: types_v03.SendStreamingMessageSuccessResponse,
) -> types_v03.SendStreamingMessageSuccessResponse:
    event = response.result
    if isinstance(event, types_v03.TaskStatusUpdateEvent) and event.status.state in PAUSED_STATES_V03:
        return response.model_copy(update={"result": event.model_copy(update={"final": True})})
    return response


def _serve_json(payload: dict[str, Any]) -> Any:
    async def endpoint(request: Request) -> Response:
        return JSONResponse(payload)

    return endpoint
