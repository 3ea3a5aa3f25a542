"""The demo agent's card: where it is reached, that it streams, and kagent's hitl extension."""

import asyncio

import httpx

from demo_agent.script import HITL_EXTENSION
from demo_agent.server import build_app


async def get_card(url: str) -> dict:
    transport = httpx.ASGITransport(app=build_app(url=url, pace=0))
    async with httpx.AsyncClient(transport=transport, base_url="http://demo") as client:
        return (await client.get("/.well-known/agent-card.json")).json()


def test_the_card_names_the_url_clients_reach_it_at_and_kagents_hitl_extension():
    card = asyncio.run(get_card("http://demo.example:8083/"))

    assert card["supportedInterfaces"] == [
        {"url": "http://demo.example:8083/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
    ]
    assert card["capabilities"]["streaming"] is True
    assert [extension["uri"] for extension in card["capabilities"]["extensions"]] == [HITL_EXTENSION]
