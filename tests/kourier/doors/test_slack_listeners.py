"""The Bolt app of a Connection: its authorization asks Slack who the bot is once per process; a press
or a form in a direct-message conversation answers to its Binding's allow-list."""

import asyncio
import json
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import pytest
from django.db.models import QuerySet
from slack_sdk.errors import SlackApiError

from bindings import directory
from interactions import feedback, prompts, questions, services
from interactions.models import Feedback, Interaction
from kourier.doors.slack_listeners import authorize_once
from kourier.slack.blocks import FEEDBACK_UP_ACTION
from sessions import notices
from sessions.models import Turn
from simulator import defaults
from simulator.events import signed_headers
from simulator.interactivity import state_values
from tests.factories import BindingFactory, TurnFactory
from tests.interactions.questions import ONE_OF_THREE, question
from tests.support.web_routes import request

ASKED = question(ONE_OF_THREE)

pytestmark = pytest.mark.anyio

IDENTITY = {"ok": True, "team_id": "T1", "user_id": "U0BOT", "bot_id": "B1", "enterprise_id": None}


class Identity(dict):
    headers = {"x-oauth-scopes": "app_mentions:read,chat:write"}


class AuthTestClient:
    """auth.test that answers only when the test lets it, and counts its calls."""

    token = "xoxb-test"

    def __init__(self, failures: int = 0) -> None:
        self.calls = 0
        self.failures = failures
        self.called = asyncio.Event()
        self.answer = asyncio.Event()

    async def auth_test(self) -> Identity:
        self.calls += 1
        self.called.set()
        await self.answer.wait()
        if self.calls <= self.failures:
            raise SlackApiError("invalid_auth", {"ok": False, "error": "invalid_auth"})
        return Identity(IDENTITY)


async def test_requests_arriving_before_the_first_answer_share_one_auth_test():
    client = AuthTestClient()
    authorize = authorize_once(client)  # type: ignore[arg-type]
    requests = [asyncio.create_task(authorize(user_id=f"U{index}")) for index in range(5)]  # type: ignore[var-annotated]
    await client.called.wait()  # every request has started and is waiting for the one call
    client.answer.set()
    results = await asyncio.gather(*requests)
    assert client.calls == 1
    assert [result.user_id for result in results] == ["U0", "U1", "U2", "U3", "U4"]
    assert {(r.team_id, r.bot_user_id, r.bot_id, r.bot_token) for r in results} == {
        ("T1", "U0BOT", "B1", "xoxb-test")
    }
    later = await authorize(user_id="U9")
    assert (client.calls, later.bot_user_id) == (1, "U0BOT")


async def test_a_failed_auth_test_is_not_kept_and_the_next_request_asks_again():
    client = AuthTestClient(failures=1)
    client.answer.set()
    authorize = authorize_once(client)  # type: ignore[arg-type]
    with pytest.raises(SlackApiError):
        await authorize(user_id="U1")
    assert (await authorize(user_id="U1")).bot_user_id == "U0BOT"
    assert client.calls == 2


# --- A press or a form in a direct-message conversation, through the door --------------------------------

DM_SECRET = "direct-messages-test-signing-secret"


@dataclass(frozen=True)
class Conversation:
    """Ada's direct-message conversation with the app: an answer with thumbs, and a question's prompt."""

    ada_allowed: bool
    connection: str
    im: str
    answer_ts: str
    turn_id: int
    prompt_ts: str
    interaction_id: int


@pytest.fixture
def conversation(request, slack_fake, slack_client, settings, monkeypatch):
    """Ada talked to the agent in private while she was allowed; the Binding allows the users the test
    names now (Grace alone unless told)."""
    allowed_users = getattr(request, "param", [defaults.GRACE])
    settings.SLACK_API_URL = slack_fake.url
    monkeypatch.setenv("SLACK_BOT_TOKEN", slack_fake.bot_token)
    monkeypatch.setenv("SLACK_SIGNING_SECRET", DM_SECRET)
    directory.forget()
    binding = BindingFactory(
        channels=[], direct_messages={"allowed_users": allowed_users}, feedback=True, ask_user=True
    )
    im = slack_fake.user_opens_app(defaults.ADA)
    root = slack_fake.user_says(defaults.ADA, im, "hello", deliver="none")
    answer_ts = slack_client.chat_postMessage(channel=im, thread_ts=root, text="An answer.")["ts"]
    turn = TurnFactory(
        session__binding=binding,
        session__channel_id=im,
        session__thread_ts=root,
        channel_id=im,
        message_ts=root,
        state=Turn.State.DONE,
        outcome=Turn.Outcome.ASKED,
        reply_ts=answer_ts,
    )
    interaction = questions.open_question(turn.pk, ASKED)
    blocks = prompts.open_prompt(ASKED, interaction.pk, typed_replies=False)
    prompt_ts = slack_client.chat_postMessage(channel=im, thread_ts=root, blocks=blocks, text="?")["ts"]
    services.record_prompt(interaction.pk, prompt_ts)
    directory.current()
    return Conversation(
        defaults.ADA in allowed_users,
        binding.connection.name,
        im,
        answer_ts,
        turn.pk,
        prompt_ts,
        interaction.pk,
    )


def block_actions(slack_fake, conversation, ts: str, action_id: str, value: str, values=None) -> dict:
    return {
        "type": "block_actions",
        "user": {"id": defaults.ADA},
        "team": {"id": defaults.TEAM_ID},
        "channel": {"id": conversation.im, "name": "directmessage"},
        "container": {"type": "message", "message_ts": ts, "channel_id": conversation.im},
        "trigger_id": "trigger-1",
        "state": {"values": values or {}},
        "response_url": slack_fake.response_url(defaults.ADA, conversation.im, ts),
        "actions": [{"type": "button", "action_id": action_id, "block_id": "b", "value": value}],
    }


def comment_submission(feedback_id: int) -> dict:
    return {
        "type": "view_submission",
        "user": {"id": defaults.ADA},
        "team": {"id": defaults.TEAM_ID},
        "view": {
            "type": "modal",
            "callback_id": feedback.CALLBACK_ID,
            "private_metadata": json.dumps({"f": feedback_id}),
            "state": {"values": {feedback.COMMENT_BLOCK: {feedback.COMMENT_ACTION: {"value": "a comment"}}}},
        },
    }


async def send(conversation, payload: dict) -> int:
    body = urlencode({"payload": json.dumps(payload)}).encode()
    headers = signed_headers(
        DM_SECRET, body, now=time.time(), content_type="application/x-www-form-urlencoded"
    )
    status, _, _ = await request(f"/slack/events/{conversation.connection}", body, headers=headers)
    return status


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("what", ["thumbs", "question", "comment"])
@pytest.mark.parametrize(
    "conversation", [[defaults.GRACE], [defaults.ADA]], indirect=True, ids=["ada-not-allowed", "ada-allowed"]
)
async def test_a_press_or_a_form_in_a_direct_message_is_taken_only_from_a_person_its_binding_allows(
    slack_fake, conversation, what
):
    turn_id, interaction_id = conversation.turn_id, conversation.interaction_id
    taken: QuerySet[Any]
    if what == "thumbs":
        payload = block_actions(
            slack_fake, conversation, conversation.answer_ts, FEEDBACK_UP_ACTION, str(turn_id)
        )
        taken = Feedback.objects.filter(is_positive=True)
    elif what == "question":
        values = state_values(
            prompts.open_prompt(ASKED, interaction_id, typed_replies=False), {"answer-0": "0"}
        )
        payload = block_actions(
            slack_fake,
            conversation,
            conversation.prompt_ts,
            prompts.SUBMIT_ACTION,
            str(interaction_id),
            values,
        )
        taken = Interaction.objects.filter(state=Interaction.State.ANSWERED)
    else:
        kept = await Feedback.objects.acreate(turn_id=turn_id, user_id=defaults.ADA, is_positive=False)
        payload = comment_submission(kept.pk)
        taken = Feedback.objects.exclude(comment="")

    assert await send(conversation, payload) == 200

    assert await taken.aexists() is conversation.ada_allowed
    refusals = [e.text for e in slack_fake.ephemerals(defaults.ADA)]
    assert refusals == (
        [] if conversation.ada_allowed or what == "comment" else [notices.DIRECT_MESSAGE_PRESS_REFUSED]
    )
