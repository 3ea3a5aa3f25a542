import pytest

from kourier.a2a.card import parse_agent_card, same_origin
from kourier.a2a.errors import IncompatibleAgent, InvalidAgentResponse
from tests.a2a.transcripts import V010, V1ALPHA, agent_card

HITL = "https://kagent.dev/extensions/hitl/v1"


def test_kagent_1_0_card():
    card = parse_agent_card(agent_card(V1ALPHA))
    assert (card.name, card.protocol_version, card.rpc_url) == (
        "probe_agent",
        "1.0",
        "http://127.0.0.1:52653/",
    )
    assert card.extensions == (HITL,)
    assert card.streaming


def test_kagent_0_10_card():
    card = parse_agent_card(agent_card(V010))
    assert (card.protocol_version, card.rpc_url, card.extensions) == ("0.3", "http://127.0.0.1:52613/", ())


def test_a_card_without_a_version_is_0_3():
    card = parse_agent_card({"name": "old", "url": "http://agent/"})
    assert (card.protocol_version, card.rpc_url) == ("0.3", "http://agent/")


def test_1_0_wins_over_0_3_and_only_json_rpc_counts():
    card = parse_agent_card(
        {
            "supportedInterfaces": [
                {"url": "http://agent/grpc", "protocolBinding": "GRPC", "protocolVersion": "1.0"},
                {"url": "http://agent/v03", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
                {"url": "http://agent/v1", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            ]
        }
    )
    assert (card.protocol_version, card.rpc_url) == ("1.0", "http://agent/v1")


def test_0_3_additional_json_rpc_interface():
    card = parse_agent_card(
        {
            "protocolVersion": "0.3.0",
            "url": "http://agent/grpc",
            "preferredTransport": "GRPC",
            "additionalInterfaces": [{"url": "http://agent/rpc", "transport": "JSONRPC"}],
        }
    )
    assert (card.protocol_version, card.rpc_url) == ("0.3", "http://agent/rpc")


@pytest.mark.parametrize(
    "raw",
    [
        {"supportedInterfaces": [{"url": "http://a/", "protocolBinding": "GRPC", "protocolVersion": "1.0"}]},
        {
            "supportedInterfaces": [
                {"url": "http://a/", "protocolBinding": "JSONRPC", "protocolVersion": "2.0"}
            ]
        },
        {"protocolVersion": "0.2.5", "url": "http://a/"},
    ],
)
def test_cards_without_a_version_and_binding_we_speak(raw):
    with pytest.raises(IncompatibleAgent):
        parse_agent_card(raw)


def test_a_card_that_is_not_an_object():
    with pytest.raises(InvalidAgentResponse):
        parse_agent_card(["not", "a", "card"])


@pytest.mark.parametrize(
    ("first", "second", "same"),
    [
        ("http://agent:8080/a2a/", "http://agent:8080/", True),
        ("https://agent/", "https://agent:443/x", True),
        ("http://agent/", "https://agent/", False),
        ("http://agent/", "http://agent:8080/", False),
        ("http://agent/", "http://other/", False),
    ],
)
def test_same_origin(first, second, same):
    assert same_origin(first, second) is same


def test_a_card_names_the_media_types_the_agent_takes():
    card = parse_agent_card(
        {
            "name": "a",
            "url": "http://a/",
            "protocolVersion": "0.3.0",
            "defaultInputModes": ["text", "image/*", 3],
        }
    )
    assert card.input_modes == ("text", "image/*")
    assert parse_agent_card({"name": "a", "url": "http://a/"}).input_modes == ()
