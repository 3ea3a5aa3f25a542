"""A scriptable A2A agent for integration tests: the official a2a-sdk server on 127.0.0.1.

    from tests.fakes.a2a_agent import ScriptedAgent, Gate
    from tests.fakes.a2a_agent.steps import text, tool_call, tool_result, input_required, wait_for

    def test_something(a2a_agent):            # fixture: a started protocol-1.0 agent
        a2a_agent.script([text("Hel"), text("lo"), tool_call("c1", "search", {"q": "x"}),
                          tool_result("c1", "search", {"hits": 3}), text("Done.")])
        ...                                   # point the product at a2a_agent.url
        assert a2a_agent.calls("SendStreamingMessage")[0].a2a_version == "1.0"

Modules: steps (the script vocabulary), kagent (kagent's HITL pauses), rendering (text styles:
wire shapes), executor (plays scripts), wire (recording, faults, cutting connections), app (SDK
routes per protocol), card, store, records, gates, server (uvicorn thread), agent (ScriptedAgent),
raw_client (plain JSON-RPC/SSE over httpx, for tests that look at the wire), fixtures.
"""

from tests.fakes.a2a_agent import kagent, steps
from tests.fakes.a2a_agent.agent import ScriptedAgent
from tests.fakes.a2a_agent.card import CardExtension
from tests.fakes.a2a_agent.gates import Gate
from tests.fakes.a2a_agent.kagent import HITL_EXTENSION
from tests.fakes.a2a_agent.records import ReceivedMessage, RecordedRequest, TaskView
from tests.fakes.a2a_agent.steps import Script, in_order

__all__ = [
    "HITL_EXTENSION",
    "CardExtension",
    "Gate",
    "ReceivedMessage",
    "RecordedRequest",
    "Script",
    "ScriptedAgent",
    "TaskView",
    "in_order",
    "kagent",
    "steps",
]
