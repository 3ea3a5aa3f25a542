"""Building clients with the timeouts configured in Django settings.

The protocol code takes its timeouts as arguments; this is the one place that reads them from
settings (``A2A_CONNECT_TIMEOUT``, ``A2A_READ_TIMEOUT``, ``A2A_REQUEST_TIMEOUT``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from django.conf import settings

from kourier.a2a.client import A2AClient, ProtocolVersion


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
