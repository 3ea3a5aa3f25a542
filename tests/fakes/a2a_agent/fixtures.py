"""pytest fixtures for the scripted A2A agent (registered as a plugin by tests/conftest.py).

- `a2a_agent`: a started protocol-1.0 agent ("artifact" text style), stopped after the test.
- `a2a_agent_v03`: the same on protocol 0.3.
- `make_a2a_agent(protocol=..., text_style=..., extensions=..., **ScriptedAgent options)`: as many
  agents as the test needs, all stopped afterwards.

An exception raised by an `on_message` function fails the test at teardown, even when the code
under test swallowed the resulting failed task.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pytest

from tests.fakes.a2a_agent.agent import ScriptedAgent
from tests.fakes.a2a_agent.card import CardExtension, Protocol
from tests.fakes.a2a_agent.steps import TextStyle

MakeAgent = Callable[..., ScriptedAgent]


@pytest.fixture
def make_a2a_agent() -> Iterator[MakeAgent]:
    agents: list[ScriptedAgent] = []

    def make(
        protocol: Protocol = "1.0",
        text_style: TextStyle = "artifact",
        extensions: Iterable[str | CardExtension] = (),
        **options: Any,
    ) -> ScriptedAgent:
        agent = ScriptedAgent(protocol, text_style=text_style, extensions=extensions, **options)
        agents.append(agent)
        return agent.start()

    yield make

    for agent in agents:
        agent.stop()
    errors = [error for agent in agents for error in agent.script_errors]
    if errors:
        pytest.fail(f"scripted A2A agent: on_message raised {errors[0]!r} (and {len(errors) - 1} more)")


@pytest.fixture
def a2a_agent(make_a2a_agent: MakeAgent) -> ScriptedAgent:
    return make_a2a_agent(protocol="1.0")


@pytest.fixture
def a2a_agent_v03(make_a2a_agent: MakeAgent) -> ScriptedAgent:
    return make_a2a_agent(protocol="0.3")
