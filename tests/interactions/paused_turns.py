"""A turn whose task pauses, run by the runner against the scripted A2A agent and the Slack fake, for
the interactions app's tests of what becomes of the pause: a question (the a2a dialect's text pause)
or a tool approval (kagent 1.0's), each under a Binding that puts it to people unless told not to."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from interactions import approval_prompts, prompts
from interactions.models import Interaction
from sessions.models import Turn
from simulator import defaults
from tests.factories import BindingFactory, TurnFactory
from tests.fakes.a2a_agent import HITL_EXTENSION, kagent
from tests.fakes.a2a_agent.kagent import PendingTool
from tests.fakes.a2a_agent.steps import input_required

ADD = PendingTool("call_add", "add_numbers", {"a": 2, "b": 3}, approval_id="adk-add")


@dataclass(frozen=True)
class Pausing:
    """An agent whose task pauses for ``kind``, the Binding fields that put that pause to people, and
    what tells its prompt among the posts (a button's action)."""

    kind: Interaction.Kind
    agent: Any
    asked: dict[str, Any]
    not_asked: dict[str, Any]
    button: str

    def is_the_prompt(self, args: dict[str, Any]) -> bool:
        return self.button in str(args)


def pausing_for(kind: Interaction.Kind, make_a2a_agent) -> Pausing:
    if kind == Interaction.Kind.QUESTION:
        agent = make_a2a_agent()
        agent.script([input_required("Which environment?")])
        return Pausing(kind, agent, {"ask_user": True}, {"ask_user": False}, prompts.SUBMIT_ACTION)
    agent = make_a2a_agent(text_style="kagent-1.0", extensions=[HITL_EXTENSION])
    agent.script(kagent.v1.approval_pause([ADD]))
    return Pausing(
        kind,
        agent,
        {"dialect": "kagent-v1", "tool_approvals": True},
        {"dialect": "kagent-v1", "tool_approvals": False},
        approval_prompts.APPROVE_ACTION,
    )


def said(slack_fake, agent, **binding: Any) -> Turn:
    """Ada mentions the bot at the top level of the fake's channel; the turn is queued, not yet run."""
    bound = BindingFactory(
        channels=[defaults.CHANNEL_ID],
        agent_url=agent.url,
        connection__bot_user_id=slack_fake.bot_user_id,
        **{"output": "final", **binding},
    )
    words = f"{slack_fake.bot_mention} deploy it"
    ts = slack_fake.user_says(defaults.ADA, defaults.CHANNEL_ID, words, deliver="none")
    return TurnFactory.create(
        session__binding=bound, session__thread_ts=ts, message_ts=ts, user_id=defaults.ADA, text=words
    )
