"""The agent card, shaped the way real 1.0 and 0.3 agents publish theirs.

- 1.0 (kagent 1.0 alpha): `supportedInterfaces: [{url, protocolBinding: "JSONRPC", protocolVersion: "1.0"}]`,
  served by the SDK's own card route.
- 0.3 (kagent 0.10, a2a-sdk 0.3): top-level `url`, `preferredTransport`, `protocolVersion: "0.3.0"`
  and no `supportedInterfaces`. The 1.x SDK's card route would serve a blend of both layouts for a
  0.3 interface, so the 0.3 card is served from the SDK's own 0.3 conversion instead.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from a2a.compat.v0_3.conversions import to_compat_agent_card
from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.types import AgentCapabilities, AgentCard, AgentExtension, AgentInterface, AgentSkill

Protocol: TypeAlias = Literal["1.0", "0.3"]
INTERFACE_VERSIONS: dict[Protocol, str] = {"1.0": "1.0", "0.3": "0.3.0"}


@dataclass(frozen=True)
class CardExtension:
    """An entry of `capabilities.extensions`, e.g. kagent's hitl/v1."""

    uri: str
    description: str = ""
    required: bool = False


def build_agent_card(
    *,
    protocol: Protocol,
    url: str,
    name: str,
    description: str,
    version: str,
    streaming: bool,
    extensions: Iterable[str | CardExtension],
    input_modes: Iterable[str] = ("text",),
) -> AgentCard:
    return AgentCard(
        name=name,
        description=description,
        version=version,
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version=INTERFACE_VERSIONS[protocol])
        ],
        capabilities=AgentCapabilities(
            streaming=streaming,
            extensions=[_card_extension(extension) for extension in extensions],
        ),
        default_input_modes=list(input_modes),
        default_output_modes=["text"],
        # Skills are required by the spec (the SDK warns about every card without one).
        skills=[AgentSkill(id="chat", name="chat", description="Answers chat messages", tags=["chat"])],
    )


def card_json(card: AgentCard, protocol: Protocol) -> dict[str, Any]:
    """The card exactly as a client fetching /.well-known/agent-card.json gets it."""
    if protocol == "0.3":
        return to_compat_agent_card(card).model_dump(mode="json", by_alias=True, exclude_none=True)
    return agent_card_to_dict(card)


def _card_extension(extension: str | CardExtension) -> AgentExtension:
    if isinstance(extension, str):
        extension = CardExtension(extension)
    return AgentExtension(uri=extension.uri, description=extension.description, required=extension.required)
