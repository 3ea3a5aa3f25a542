"""The demo workspace `make serve` offers when no Slack app is configured: who is in it, and the
manifest that binds its #demo channel to the demo agent.

One workspace with the app's bot (*Agent Kourier*), three people to act as, the approver group
*oncall* (Linus alone, so that approving a tool is a choice of who you are), another app
(*Alertmanager*, whose alert the page posts) and the channel #demo.
Its tokens and signing secret are made per run (``DemoSecrets``): nothing outside the machine knows
them, and the product reads them from the environment like any Connection's.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from .fake import SlackFake

TEAM_ID = "T0DEMO"
TEAM_NAME = "Kourier Demo"
BOT_NAME = "Agent Kourier"
BOT_USER_ID = "U0KOURIER"
BOT_ID = "B0KOURIER"
APP_ID = "A0KOURIER"
CHANNEL_ID = "C0DEMO"
CHANNEL_NAME = "demo"
ONCALL_ID = "S0ONCALL"
ONCALL_HANDLE = "oncall"
# Another app in #demo: an alerting integration whose alert a person can post from the page, to call
# the agent into its thread (a mention there carries the thread so far: docs/prompt-format.md).
ALERTS_APP_USER_ID = "U0ALERTMGR"
ALERTS_APP_BOT_ID = "B0ALERTMGR"
ALERTS_APP_NAME = "Alertmanager"
# What Alertmanager's own Slack receiver posts with its default templates: an attachment, no text.
DEMO_ALERT = {
    "color": "danger",
    "title": "[FIRING:1] HighLatency (api production critical)",
    "title_link": "http://alertmanager.example/#/alerts?receiver=slack",
    "text": "p99 latency of the api above 2s for 10 minutes",
    "fallback": "[FIRING:1] HighLatency (api production critical)",
    "fields": [{"title": "severity", "value": "critical", "short": True}],
}

# The Connection and Binding the demo applies, and the variables their secrets are read from. The
# Binding's name is the demo's own: `make serve` never writes over a Binding it did not create.
CONNECTION_NAME = "simulator"
BINDING_NAME = "simulator-demo"
BOT_TOKEN_ENV = "SIMULATOR_BOT_TOKEN"
SIGNING_SECRET_ENV = "SIMULATOR_SIGNING_SECRET"
TRIGGER_NAME = "hooks"
TRIGGER_TOKEN_ENV = "HOOKS_TRIGGER_TOKEN"


@dataclass(frozen=True)
class Person:
    id: str
    real_name: str
    display_name: str


PEOPLE = (
    Person("U0ADA", "Ada Lovelace", "ada"),
    Person("U0GRACE", "Grace Hopper", "grace"),
    Person("U0LINUS", "Linus Torvalds", "linus"),
)
ONCALL_MEMBERS = ("U0LINUS",)


@dataclass(frozen=True)
class DemoSecrets:
    bot_token: str
    signing_secret: str

    @classmethod
    def new(cls) -> DemoSecrets:
        return cls(bot_token=f"xoxb-demo-{secrets.token_hex(16)}", signing_secret=secrets.token_hex(32))


def build(secrets_: DemoSecrets, *, port: int = 0) -> SlackFake:
    """The demo workspace, not yet started (``port`` 0: a free one)."""
    # Rate limits stay on: the demo shows what the product does within Slack's budgets.
    fake = SlackFake(port=port, rate_limits=True)
    fake.add_workspace(
        TEAM_ID,
        domain="kourier-demo",
        name=TEAM_NAME,
        app_name=BOT_NAME,
        app_id=APP_ID,
        bot_user_id=BOT_USER_ID,
        bot_id=BOT_ID,
        bot_token=secrets_.bot_token,
    )
    for person in PEOPLE:
        fake.add_user(person.id, person.real_name, display_name=person.display_name)
    fake.add_usergroup(ONCALL_ID, ONCALL_HANDLE, list(ONCALL_MEMBERS))
    fake.add_bot(ALERTS_APP_USER_ID, ALERTS_APP_NAME, bot_id=ALERTS_APP_BOT_ID)
    fake.add_channel(
        CHANNEL_ID, CHANNEL_NAME, members=[*(person.id for person in PEOPLE), ALERTS_APP_USER_ID]
    )
    return fake


def manifest(agent_url: str) -> str:
    """The Connection to the demo workspace and the Binding of #demo to the demo agent, as YAML."""
    return f"""\
apiVersion: kourier/v1
kind: Connection
metadata: {{name: {CONNECTION_NAME}}}
spec:
  botToken: {{fromEnv: {BOT_TOKEN_ENV}}}
  signingSecret: {{fromEnv: {SIGNING_SECRET_ENV}}}
---
apiVersion: kourier/v1
kind: Binding
metadata: {{name: {BINDING_NAME}}}
spec:
  connection: {CONNECTION_NAME}
  channels: [{CHANNEL_ID}]
  agent:
    url: {agent_url}
    dialect: kagent-v1
  interactions:
    askUser: true
    toolApprovals: true
    approverGroups: [{ONCALL_ID}]
    allowForThread: true
  triggers:
    - name: {TRIGGER_NAME}
      kind: generic
      token: {{fromEnv: {TRIGGER_TOKEN_ENV}}}
"""
