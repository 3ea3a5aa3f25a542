"""A turn as a mention queues it and a coroutine run as the worker's loop runs it, for the tests of the
runner (runner.py) and of one turn's run (turn_run.py), against the scripted A2A agent and the Slack fake."""

from __future__ import annotations

from typing import Any

from sessions.models import Turn
from sessions.services import start_alert_thread
from simulator import defaults
from tests.factories import BindingFactory, TurnFactory


def said(slack_fake, a2a_agent, words: str = "what is the weather", **binding: Any):
    """Ada mentions the bot at the top level of the fake's channel; the turn is queued, not yet run."""
    bound = BindingFactory(
        channels=[defaults.CHANNEL_ID],
        agent_url=a2a_agent.url,
        connection__bot_user_id=slack_fake.bot_user_id,
        **{"output": "final", **binding},
    )
    ts = slack_fake.user_says(
        defaults.ADA, defaults.CHANNEL_ID, f"{slack_fake.bot_mention} {words}", deliver="none"
    )
    return TurnFactory(
        session__binding=bound,
        session__thread_ts=ts,
        message_ts=ts,
        user_id=defaults.ADA,
        text=f"{slack_fake.bot_mention} {words}",
    )


def alerted(slack_fake, a2a_agent, alert: str = "Disk is full on db-1", **binding: Any) -> Turn:
    """A trigger started an alert thread in the fake's channel; its first turn is queued, not yet run."""
    bound = BindingFactory(
        channels=[defaults.CHANNEL_ID],
        agent_url=a2a_agent.url,
        connection__bot_user_id=slack_fake.bot_user_id,
        **{"output": "final", **binding},
    )
    root = slack_fake.bot_says(slack_fake.bot_user_id, defaults.CHANNEL_ID, alert)
    return start_alert_thread(bound, alert, root_ts=root)
