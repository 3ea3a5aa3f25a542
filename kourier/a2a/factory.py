"""Building clients with the timeouts configured in Django settings.

The protocol code takes its timeouts as arguments; this is the one place that reads them from
settings (``A2A_CONNECT_TIMEOUT``, ``A2A_READ_TIMEOUT``, ``A2A_REQUEST_TIMEOUT``).
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import AsyncIterator, Mapping, Sequence

import httpx
from django.conf import settings

from kourier.a2a.client import A2AClient, AgentCards, ProtocolVersion, shared_transport
from kourier.a2a.errors import A2AError

# An agent's card, once read, stands for every client of this process for AGENT_CARD_SECONDS: a turn's
# client lives one turn, and reading the card for each turn cost a request per turn (docs/performance.md).
AGENT_CARDS = AgentCards(settings.AGENT_CARD_SECONDS)

# The transport the clients made on an event loop share, for the loops that open one (``shared``).
_loop_transports: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncBaseTransport] = (
    weakref.WeakKeyDictionary()
)


@contextlib.asynccontextmanager
async def shared_connections() -> AsyncIterator[None]:
    """While open, the clients ``make_client`` makes on this loop share one transport (its connection
    pool: a connection to an agent outlives a turn); closed on the way out."""
    loop = asyncio.get_running_loop()
    transport = _loop_transports[loop] = shared_transport()
    try:
        yield
    finally:
        if _loop_transports.get(loop) is transport:
            del _loop_transports[loop]
        await transport.aclose()


def _loop_transport() -> httpx.AsyncBaseTransport | None:
    try:
        transport = _loop_transports.get(asyncio.get_running_loop())
    except RuntimeError:
        return None
    return _Unclosed(transport) if transport is not None else None


class _Unclosed(httpx.AsyncBaseTransport):
    """A transport the client uses but does not own: closing the client leaves it open for the others."""

    def __init__(self, transport: httpx.AsyncBaseTransport) -> None:
        self._transport = transport

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return await self._transport.handle_async_request(request)

    async def aclose(self) -> None:
        pass


def make_client(
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    protocol_version: ProtocolVersion = "auto",
    extensions: Sequence[str] = (),
) -> A2AClient:
    """A client for one agent endpoint; pass the dialect's ``EXTENSIONS`` as ``extensions``. It reads
    the agent's card through ``AGENT_CARDS``, and on a loop with ``shared_connections`` sends through
    them."""
    return A2AClient(
        url,
        headers=headers,
        protocol_version=protocol_version,
        extensions=extensions,
        connect_timeout=settings.A2A_CONNECT_TIMEOUT,
        read_timeout=settings.A2A_READ_TIMEOUT,
        request_timeout=settings.A2A_REQUEST_TIMEOUT,
        transport=_loop_transport(),
        cards=AGENT_CARDS,
    )


# ``apply`` and the admin ask for the card while the operator waits: a few seconds, not a turn's.
CARD_CHECK_TIMEOUT_SECONDS = 5.0


async def agent_card_problem(url: str, *, headers: Mapping[str, str] | None = None) -> str | None:
    """Why the agent card at ``url`` cannot be fetched and read, or None when it can.

    The reason carries protocol facts only (an HTTP status, the kind of fault), never a body."""
    client = A2AClient(
        url,
        headers=headers,
        connect_timeout=CARD_CHECK_TIMEOUT_SECONDS,
        read_timeout=CARD_CHECK_TIMEOUT_SECONDS,
        request_timeout=CARD_CHECK_TIMEOUT_SECONDS,
    )
    async with client:
        try:
            await client.agent_card()
        except A2AError as error:
            return str(error)
    return None
