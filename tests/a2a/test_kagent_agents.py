"""Finding a kagent agent by name: a stand-in controller (tests/fakes/kagent_controller.py) serves real
A2A agents (the scripted a2a-sdk agent, its 1.0 and 0.3 cards) at kagent 1.0's and kagent 0.10's
addresses, and ``find_kagent_agent`` says which line serves the agent, where, in which A2A version; or,
in words an operator can act on, why it found none."""

import json
import socket

import pytest

from kourier.a2a.kagent_agents import (
    KAGENT_0_10,
    KAGENT_1_0,
    KagentAgent,
    KagentAgentNotFound,
    find_kagent_agent,
)

pytestmark = pytest.mark.anyio


async def test_an_agent_served_at_kagent_1_0s_address_is_a_kagent_1_0_agent_speaking_a2a_1_0(
    kagent_controller, a2a_agent
):
    address = kagent_controller.add("1.0", "ops", "k8s-agent", a2a_agent.url)

    found = await find_kagent_agent(kagent_controller.url, "ops", "k8s-agent")

    assert found == KagentAgent(line=KAGENT_1_0, url=address, protocol_version="1.0")
    assert address == f"{kagent_controller.url}/agents/ops/k8s-agent"


async def test_an_agent_served_at_kagent_0_10s_address_is_a_kagent_0_10_agent_speaking_a2a_0_3(
    kagent_controller, a2a_agent_v03
):
    address = kagent_controller.add("0.10", "ops", "k8s-agent", a2a_agent_v03.url)

    found = await find_kagent_agent(kagent_controller.url + "/", "ops", "k8s-agent")

    assert found == KagentAgent(line=KAGENT_0_10, url=address, protocol_version="0.3")
    assert address == f"{kagent_controller.url}/api/a2a/ops/k8s-agent/"


async def test_the_lookup_carries_the_headers_it_is_given(kagent_controller, a2a_agent):
    kagent_controller.add("1.0", "ops", "k8s-agent", a2a_agent.url)

    await find_kagent_agent(
        kagent_controller.url, "ops", "k8s-agent", headers={"Authorization": "Bearer t0ken"}
    )

    [(method, path, headers)] = kagent_controller.requests
    assert (method, path) == ("GET", "/agents/ops/k8s-agent/.well-known/agent-card.json")
    assert headers["authorization"] == "Bearer t0ken"


async def test_a_name_the_controller_does_not_know_names_both_addresses_it_tried(
    kagent_controller, a2a_agent
):
    kagent_controller.add("1.0", "ops", "k8s-agent", a2a_agent.url)

    with pytest.raises(KagentAgentNotFound) as refused:
        await find_kagent_agent(kagent_controller.url, "ops", "k8s-agnet")

    assert str(refused.value) == (
        f'the kagent controller at {kagent_controller.url} has no agent "ops/k8s-agnet" (no agent card at '
        f"{kagent_controller.url}/agents/ops/k8s-agnet/.well-known/agent-card.json nor "
        f"{kagent_controller.url}/api/a2a/ops/k8s-agnet/.well-known/agent-card.json)"
    )


async def test_a_controller_nobody_listens_at_is_unreachable():
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{closed.getsockname()[1]}"

    with pytest.raises(KagentAgentNotFound) as refused:
        await find_kagent_agent(url, "ops", "k8s-agent")

    assert str(refused.value) == f"cannot reach the kagent controller at {url} (ConnectError)"


@pytest.mark.parametrize(
    ("line", "body", "why"),
    [
        pytest.param(
            "1.0",
            json.dumps({"name": "x", "url": "http://agent/", "protocolVersion": "0.3.0"}).encode(),
            "offers A2A 0.3, where kagent 1.0 serves A2A 1.0: it is neither kagent 1.0's nor kagent 0.10's",
            id="an A2A 0.3 card at the 1.0 address",
        ),
        pytest.param(
            "0.10",
            json.dumps(
                {
                    "supportedInterfaces": [
                        {"url": "http://a/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
                    ]
                }
            ).encode(),
            "offers A2A 1.0, where kagent 0.10 serves A2A 0.3: it is neither kagent 1.0's nor kagent 0.10's",
            id="an A2A 1.0 card at the 0.10 address",
        ),
        pytest.param(
            "1.0",
            json.dumps({"supportedInterfaces": [{"url": "http://a/", "protocolBinding": "GRPC"}]}).encode(),
            "is neither kagent 1.0's nor kagent 0.10's (agent card offers no JSON-RPC interface for A2A 1.0 or "
            "0.3 (offered: none))",
            id="a card without a JSON-RPC interface",
        ),
        pytest.param(
            "1.0",
            b"<html>gateway</html>",
            "is neither kagent 1.0's nor kagent 0.10's (not JSON)",
            id="garbage",
        ),
        pytest.param(
            "1.0",
            b'["a", "list"]',
            "is neither kagent 1.0's nor kagent 0.10's (agent card is not a JSON object)",
            id="a list",
        ),
    ],
)
async def test_a_card_that_is_neither_lines_is_refused_saying_why(kagent_controller, line, body, why):
    kagent_controller.serve_card(line, "ops", "k8s-agent", body)

    with pytest.raises(KagentAgentNotFound) as refused:
        await find_kagent_agent(kagent_controller.url, "ops", "k8s-agent")

    assert str(refused.value).endswith(why)
    assert '"ops/k8s-agent"' in str(refused.value)
