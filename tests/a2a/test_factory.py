import asyncio

import httpx
from django.test import override_settings

from kourier.a2a import factory
from kourier.a2a.factory import make_client, shared_connections
from tests.a2a.wire_stub import AGENT_URL, WireStub


@override_settings(A2A_CONNECT_TIMEOUT=1.5, A2A_READ_TIMEOUT=20.0, A2A_REQUEST_TIMEOUT=600.0)
def test_timeouts_come_from_settings():
    client = make_client(
        "http://agent/", headers={"Authorization": "Bearer x"}, protocol_version="1.0", extensions=["urn:x"]
    )
    assert (client.connect_timeout, client.read_timeout, client.request_timeout) == (1.5, 20.0, 600.0)
    assert (client.url, client.protocol_version, client.extensions) == ("http://agent/", "1.0", ("urn:x",))


class KeptTransport(httpx.MockTransport):
    def __init__(self, stub: WireStub) -> None:
        super().__init__(stub.handle)
        self.closed = False

    async def aclose(self) -> None:
        self.closed = True


def test_the_clients_made_on_a_loop_with_shared_connections_send_through_one_transport(monkeypatch):
    stub = WireStub()
    made: list[KeptTransport] = []

    def shared_transport() -> KeptTransport:
        made.append(KeptTransport(stub))
        return made[-1]

    monkeypatch.setattr(factory, "shared_transport", shared_transport)

    async def scenario() -> tuple[bool, int]:
        async with shared_connections():
            for _ in range(2):  # one client per turn, each closed at the turn's end
                async with make_client(AGENT_URL) as client:
                    assert await client.resolved_version() == "1.0"
            closed_with_the_clients = made[0].closed
        return closed_with_the_clients, len(stub.requests)

    closed_with_the_clients, requests_through_it = asyncio.run(scenario())
    assert len(made) == 1
    assert not closed_with_the_clients
    assert made[0].closed
    assert requests_through_it == 1  # the card, read once for both (factory.AGENT_CARDS)
