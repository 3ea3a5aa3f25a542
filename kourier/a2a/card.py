"""Reading an agent card: which protocol version to speak, where, and which extensions the agent offers.

- A2A 1.0 cards list ``supportedInterfaces`` with ``protocolBinding`` and ``protocolVersion``.
- A2A 0.3 cards have a top-level ``protocolVersion`` ("0.3.0"), ``url`` and ``preferredTransport``,
  plus optional ``additionalInterfaces``.
- A card that names no version is 0.3 (the SDK's card resolver does the same).

Only the JSON-RPC binding is spoken here. A 1.0 interface wins over a 0.3 one when the card offers both.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from kourier.a2a import codec_v03, codec_v10
from kourier.a2a.errors import IncompatibleAgent, InvalidAgentResponse
from kourier.a2a.wire import AgentCard

JSONRPC_BINDING = "JSONRPC"


def parse_agent_card(raw: Any) -> AgentCard:
    if not isinstance(raw, dict):
        raise InvalidAgentResponse("agent card is not a JSON object")
    version, rpc_url = _pick_interface(raw)
    capabilities = raw.get("capabilities")
    if not isinstance(capabilities, dict):
        capabilities = {}
    extensions = tuple(
        extension["uri"]
        for extension in capabilities.get("extensions") or ()
        if isinstance(extension, dict) and isinstance(extension.get("uri"), str)
    )
    name = raw.get("name")
    modes = raw.get("defaultInputModes")
    return AgentCard(
        name=name if isinstance(name, str) else None,
        protocol_version=version,
        rpc_url=rpc_url,
        extensions=extensions,
        streaming=bool(capabilities.get("streaming")),
        raw=raw,
        input_modes=tuple(m for m in modes if isinstance(m, str)) if isinstance(modes, list) else (),
    )


def _pick_interface(card: dict[str, Any]) -> tuple[str, str | None]:
    offered: list[tuple[str, str | None]] = []  # (version as written, url) of each JSON-RPC interface
    if "supportedInterfaces" in card:  # a 1.x card
        for interface in card.get("supportedInterfaces") or ():
            if isinstance(interface, dict) and _is_jsonrpc(interface.get("protocolBinding")):
                offered.append((str(interface.get("protocolVersion") or ""), _url(interface.get("url"))))
    else:
        legacy_version = str(card.get("protocolVersion") or codec_v03.VERSION)
        if _is_jsonrpc(card.get("preferredTransport") or JSONRPC_BINDING):
            offered.append((legacy_version, _url(card.get("url"))))
        for interface in card.get("additionalInterfaces") or ():
            if isinstance(interface, dict) and _is_jsonrpc(interface.get("transport")):
                offered.append((legacy_version, _url(interface.get("url"))))

    for wanted in (codec_v10.VERSION, codec_v03.VERSION):
        for version, url in offered:
            if _major_minor(version) == wanted:
                return wanted, url
    # The versions are protocol facts, safe to name.
    raise IncompatibleAgent(
        "agent card offers no JSON-RPC interface for A2A 1.0 or 0.3 "
        f"(offered: {sorted({version for version, _ in offered}) or 'none'})"
    )


def _is_jsonrpc(binding: Any) -> bool:
    return isinstance(binding, str) and binding.upper() == JSONRPC_BINDING


def _url(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _major_minor(version: str) -> str:
    """ "0.3.0" -> "0.3", "1.0" -> "1.0"."""
    return ".".join(version.strip().split(".")[:2])


def same_origin(url: str, other: str) -> bool:
    """Same scheme, host and port: the card may move us to another path, never to another server.

    The client sends the Binding's service identity (Authorization) with every request; following a
    card to another origin would hand that identity to whoever the card names.
    """
    return _origin(url) == _origin(other)


def _origin(url: str) -> tuple[str, str | None, int | None]:
    parts = urlsplit(url)
    default_port = {"http": 80, "https": 443}.get(parts.scheme)
    return parts.scheme, parts.hostname, parts.port or default_port
