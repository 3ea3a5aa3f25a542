"""Building clients with the timeouts configured in Django settings.

The protocol code takes its timeouts as arguments; this is the one place that reads them from
settings (``A2A_CONNECT_TIMEOUT``, ``A2A_READ_TIMEOUT``, ``A2A_REQUEST_TIMEOUT``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from django.conf import settings

from kourier.a2a.client import A2AClient, ProtocolVersion
from kourier.a2a.errors import A2AError


def make_client(
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    protocol_version: ProtocolVersion = "auto",
    extensions: Sequence[str] = (),
) -> A2AClient:
    """A client for one agent endpoint; pass the dialect's ``EXTENSIONS`` as ``extensions``."""
    return A2AClient(
        url,
        headers=headers,
        protocol_version=protocol_version,
        extensions=extensions,
        connect_timeout=settings.A2A_CONNECT_TIMEOUT,
        read_timeout=settings.A2A_READ_TIMEOUT,
        request_timeout=settings.A2A_REQUEST_TIMEOUT,
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
