"""Finding a kagent agent by name on its controller: which kagent line serves it, and at which address.

kagent's controller serves each agent at an address made of its namespace and name, and the two lines
use different ones (docs/kagent-dialect.md, "The controller"; kagent's controller source):

- kagent 1.0: ``<controller>/agents/<namespace>/<name>`` (A2A 1.0; its card at
  ``.well-known/agent-card.json`` below it);
- kagent 0.10: ``<controller>/api/a2a/<namespace>/<name>/`` (A2A 0.3; the card likewise below it).

``find_kagent_agent`` asks for the card at the 1.0 address, then at the 0.10 one, and answers the first
that is there, with the A2A version its card offers. A card that does not match its address (a 0.3
card at the 1.0 address, no JSON-RPC interface, not JSON) is neither line's and is refused, as are a
name the controller does not know on either address and a controller that cannot be reached. The
errors are sentences for the operator; they name the controller, the agent and HTTP facts, never a
card's content.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

import httpx
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH

from kourier import egress
from kourier.a2a import codec_v03, codec_v10
from kourier.a2a.card import parse_agent_card
from kourier.a2a.errors import IncompatibleAgent, InvalidAgentResponse
from kourier.credentials import without_credentials

KAGENT_1_0 = "kagent 1.0"
KAGENT_0_10 = "kagent 0.10"
# (line, the agent's address below the controller, the A2A version that line's card offers)
ADDRESSES = (
    (KAGENT_1_0, "/agents/{namespace}/{name}", codec_v10.VERSION),
    (KAGENT_0_10, "/api/a2a/{namespace}/{name}/", codec_v03.VERSION),
)
LOOKUP_TIMEOUT_SECONDS = 10.0


class KagentAgentNotFound(Exception):
    """The agent could not be found, or what was found is not a kagent agent; the message says which
    (apply and the admin show it: the controller's URL without its credentials)."""

    def __init__(self, message: str) -> None:
        super().__init__(without_credentials(message))


@dataclass(frozen=True)
class KagentAgent:
    line: str  # KAGENT_1_0 or KAGENT_0_10
    url: str  # the agent's A2A address (its card is below it)
    protocol_version: str  # "1.0" or "0.3", as its card offers

    def describe(self) -> str:
        return f"{self.line} agent at {self.url} (A2A {self.protocol_version})"


def line_of(protocol_version: str) -> str:
    """The kagent line that serves agents in this A2A version."""
    return KAGENT_1_0 if protocol_version == codec_v10.VERSION else KAGENT_0_10


def agent_address(controller: str, path: str, namespace: str, name: str) -> str:
    return controller.rstrip("/") + path.format(namespace=namespace, name=name)


async def find_kagent_agent(
    controller: str,
    namespace: str,
    name: str,
    *,
    headers: Mapping[str, str] | None = None,
    timeout_seconds: float = LOOKUP_TIMEOUT_SECONDS,
) -> KagentAgent:
    """The agent ``namespace/name`` on the controller at ``controller``; raises ``KagentAgentNotFound``."""
    agent = f'"{namespace}/{name}"'
    tried = []
    async with httpx.AsyncClient(
        headers=dict(headers or {}),
        timeout=httpx.Timeout(timeout_seconds),
        follow_redirects=False,
        transport=egress.RoutedTransport(),  # through the egress proxy (kourier/egress.py)
        trust_env=False,
    ) as http:
        for line, path, version in ADDRESSES:
            url = agent_address(controller, path, namespace, name)
            card_url = url.rstrip("/") + AGENT_CARD_WELL_KNOWN_PATH
            try:
                response = await http.get(card_url)
            except httpx.TransportError as error:
                raise KagentAgentNotFound(
                    f"cannot reach the kagent controller at {controller} ({type(error).__name__})"
                ) from error
            if response.status_code == 404:
                tried.append(card_url)
                continue
            if response.status_code != 200:
                raise KagentAgentNotFound(
                    f"the kagent controller at {controller} answered HTTP {response.status_code} "
                    f"for the agent card of {agent} at {card_url}"
                )
            try:
                card = parse_agent_card(json.loads(response.content))
            except (ValueError, UnicodeDecodeError, InvalidAgentResponse, IncompatibleAgent) as error:
                detail = (
                    error.detail
                    if isinstance(error, InvalidAgentResponse | IncompatibleAgent)
                    else "not JSON"
                )
                raise KagentAgentNotFound(
                    f"the agent card of {agent} at {card_url} is neither kagent 1.0's nor kagent 0.10's ({detail})"
                ) from error
            if card.protocol_version != version:
                raise KagentAgentNotFound(
                    f"the agent card of {agent} at {card_url} offers A2A {card.protocol_version}, where "
                    f"{line} serves A2A {version}: it is neither kagent 1.0's nor kagent 0.10's"
                )
            return KagentAgent(line=line, url=url, protocol_version=version)
    raise KagentAgentNotFound(
        f"the kagent controller at {controller} has no agent {agent} (no agent card at {' nor '.join(tried)})"
    )
