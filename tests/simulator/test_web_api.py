"""The Web API methods, called through the real slack_sdk WebClient over HTTP."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from simulator import SlackFake, defaults
from simulator.defaults import ADA, APP_TOKEN, CHANNEL_ID, GRACE, TEAM_ID
from simulator.web_api import METHODS
from tests.simulator.helpers import slack_error

# slack_sdk warns when a post has no top-level text; some tests leave it out on purpose.
missing_text_is_deliberate = pytest.mark.filterwarnings("ignore:The top-level `text` argument is missing")


def test_auth_test_names_the_bot(slack_client: WebClient, slack_fake: SlackFake) -> None:
    answer = slack_client.auth_test()
    assert answer["user_id"] == slack_fake.bot_user_id
    assert answer["bot_id"] == slack_fake.bot_id
    assert answer["team_id"] == TEAM_ID


def test_bad_tokens_are_refused(slack_fake: SlackFake) -> None:
    assert slack_error(WebClient(token="xoxb-nobody", base_url=slack_fake.url).auth_test) == "invalid_auth"
    assert slack_error(WebClient(base_url=slack_fake.url).auth_test) == "not_authed"
    app_token_client = WebClient(token=APP_TOKEN, base_url=slack_fake.url)
    assert (
        slack_error(app_token_client.chat_postMessage, channel=CHANNEL_ID, text="hi")
        == "not_allowed_token_type"
    )


def test_an_unknown_method_is_answered_200_not_ok(slack_client: WebClient) -> None:
    assert slack_error(slack_client.api_call, "chat.postMessages") == "unknown_method"


def test_form_bodies_with_a_token_field_and_get_queries_work(slack_fake: SlackFake) -> None:
    form = httpx.post(
        slack_fake.url + "chat.postMessage",
        data={
            "token": slack_fake.bot_token,
            "channel": CHANNEL_ID,
            "text": "from a form",
            "blocks": json.dumps([{"type": "section", "text": {"type": "mrkdwn", "text": "from a form"}}]),
        },
    ).json()
    assert form["ok"], form
    assert slack_fake.message(CHANNEL_ID, form["ts"]).blocks[0]["type"] == "section"
    query = httpx.get(
        slack_fake.url + "users.info",
        params={"user": ADA},
        headers={"Authorization": f"Bearer {slack_fake.bot_token}"},
    ).json()
    assert query["user"]["real_name"] == "Ada Lovelace"
    token_in_json = httpx.post(slack_fake.url + "auth.test", json={"token": slack_fake.bot_token}).json()
    assert token_in_json["error"] == "not_authed"  # Slack reads no token from a JSON body


def test_post_message_and_threads(slack_client: WebClient, slack_fake: SlackFake) -> None:
    root = slack_fake.user_says(ADA, CHANNEL_ID, "hello")
    reply = slack_client.chat_postMessage(channel=CHANNEL_ID, text="hi Ada", thread_ts=root)
    assert reply["message"]["bot_id"] == slack_fake.bot_id
    assert reply["message"]["thread_ts"] == root
    nested = slack_client.chat_postMessage(channel=CHANNEL_ID, text="again", thread_ts=reply["ts"])
    assert nested["message"]["thread_ts"] == root  # a reply's ts stands for its thread
    assert [m.text for m in slack_fake.thread(CHANNEL_ID, root)] == ["hello", "hi Ada", "again"]
    assert float(root) < float(reply["ts"]) < float(nested["ts"])


@missing_text_is_deliberate
def test_post_message_refusals(slack_client: WebClient, slack_fake: SlackFake) -> None:
    post = slack_client.chat_postMessage
    assert slack_error(post, channel="C9999", text="x") == "channel_not_found"
    slack_fake.add_channel("C0002", "elsewhere", bot_is_member=False)
    assert slack_error(post, channel="C0002", text="x") == "not_in_channel"
    slack_fake.add_channel("C0003", "old", archived=True)
    assert slack_error(post, channel="C0003", text="x") == "is_archived"
    assert slack_error(post, channel=CHANNEL_ID) == "no_text"
    assert slack_error(post, channel=CHANNEL_ID, text="x", markdown_text="**x**") == "markdown_text_conflict"
    assert slack_error(post, channel=CHANNEL_ID, text="x", thread_ts="0") == "invalid_thread_ts"
    too_many = [{"type": "divider"}] * 51
    assert slack_error(post, channel=CHANNEL_ID, text="x", blocks=too_many) == "invalid_blocks"
    bad_metadata = {"event_type": "x y", "event_payload": {}}
    assert slack_error(post, channel=CHANNEL_ID, text="x", metadata=bad_metadata) == "invalid_metadata_schema"
    assert slack_fake.messages(CHANNEL_ID) == []


def test_invalid_blocks_answers_name_the_problem(slack_client: WebClient) -> None:
    with pytest.raises(SlackApiError) as failure:
        slack_client.chat_postMessage(
            channel=CHANNEL_ID, text="x", blocks=[{"type": "header", "text": "plain"}]
        )
    assert failure.value.response["errors"] == ["must be a text object [json-pointer:/blocks/0/text]"]


def test_long_text_is_truncated_with_a_warning(slack_client: WebClient, slack_fake: SlackFake) -> None:
    answer = slack_client.chat_postMessage(channel=CHANNEL_ID, text="x" * 40_001)
    assert answer["response_metadata"]["warnings"] == ["message_truncated"]
    assert len(slack_fake.message(CHANNEL_ID, answer["ts"]).text) == 40_000


def test_a_reply_to_an_unknown_ts_is_accepted_but_shown_nowhere(
    slack_client: WebClient, slack_fake: SlackFake
) -> None:
    answer = slack_client.chat_postMessage(channel=CHANNEL_ID, text="lost", thread_ts="1500000000.000100")
    assert answer["ok"]
    assert slack_fake.messages(CHANNEL_ID) == []


@missing_text_is_deliberate
def test_update_rewrites_own_messages_only(slack_client: WebClient, slack_fake: SlackFake) -> None:
    blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": "v1"}}]
    posted = slack_client.chat_postMessage(channel=CHANNEL_ID, text="v1", blocks=blocks)
    slack_client.chat_update(channel=CHANNEL_ID, ts=posted["ts"], blocks=[*blocks, {"type": "divider"}])
    after_blocks = slack_fake.message(CHANNEL_ID, posted["ts"])
    assert (after_blocks.text, len(after_blocks.blocks), after_blocks.edited) == ("v1", 2, False)
    slack_client.chat_update(channel=CHANNEL_ID, ts=posted["ts"], text="v2")
    after_text = slack_fake.message(CHANNEL_ID, posted["ts"])
    assert (after_text.text, after_text.blocks, after_text.edited) == ("v2", [], True)

    update = slack_client.chat_update
    assert slack_error(update, channel=CHANNEL_ID, ts=posted["ts"], text="x" * 4001) == "msg_too_long"
    assert slack_error(update, channel=CHANNEL_ID, ts=posted["ts"], text="x", markdown_text="y") == (
        "markdown_text_conflict"
    )
    assert slack_error(update, channel=CHANNEL_ID, ts="1500000000.000100", text="x") == "message_not_found"
    human = slack_fake.user_says(ADA, CHANNEL_ID, "mine")
    assert slack_error(update, channel=CHANNEL_ID, ts=human, text="x") == "cant_update_message"


def test_delete(slack_client: WebClient, slack_fake: SlackFake) -> None:
    posted = slack_client.chat_postMessage(channel=CHANNEL_ID, text="bye")
    human = slack_fake.user_says(ADA, CHANNEL_ID, "mine")
    assert slack_error(slack_client.chat_delete, channel=CHANNEL_ID, ts=human) == "cant_delete_message"
    slack_client.chat_delete(channel=CHANNEL_ID, ts=posted["ts"])
    assert [m.ts for m in slack_fake.messages(CHANNEL_ID)] == [human]
    assert slack_error(slack_client.chat_delete, channel=CHANNEL_ID, ts=posted["ts"]) == "message_not_found"


def test_ephemeral_messages_are_kept_per_user(slack_client: WebClient, slack_fake: SlackFake) -> None:
    answer = slack_client.chat_postEphemeral(channel=CHANNEL_ID, user=ADA, text="only you")
    assert [e.text for e in slack_fake.ephemerals(ADA)] == ["only you"]
    assert slack_fake.ephemerals(GRACE) == []
    assert slack_fake.ephemerals(ADA)[0].ts == answer["message_ts"]
    slack_fake.add_user("U0OUT", "Out Sider")
    assert slack_error(slack_client.chat_postEphemeral, channel=CHANNEL_ID, user="U0OUT", text="x") == (
        "user_not_in_channel"
    )
    assert slack_error(slack_client.chat_update, channel=CHANNEL_ID, ts=answer["message_ts"], text="x") == (
        "message_not_found"
    )


def test_reactions(slack_client: WebClient, slack_fake: SlackFake) -> None:
    ts = slack_fake.user_says(ADA, CHANNEL_ID, "hello")
    slack_fake.user_reacts(GRACE, CHANNEL_ID, ts, "eyes")
    slack_client.reactions_add(channel=CHANNEL_ID, timestamp=ts, name="eyes")
    slack_client.reactions_add(channel=CHANNEL_ID, timestamp=ts, name="hourglass_flowing_sand")
    assert slack_fake.message(CHANNEL_ID, ts).reactions == {
        "eyes": [GRACE, slack_fake.bot_user_id],
        "hourglass_flowing_sand": [slack_fake.bot_user_id],
    }
    add, remove = slack_client.reactions_add, slack_client.reactions_remove
    assert slack_error(add, channel=CHANNEL_ID, timestamp=ts, name="eyes") == "already_reacted"
    assert slack_error(add, channel=CHANNEL_ID, timestamp=ts, name=":eyes:") == "invalid_name"
    assert slack_error(add, channel=CHANNEL_ID, timestamp=ts, name="no_such_emoji") == "invalid_name"
    assert (
        slack_error(add, channel=CHANNEL_ID, timestamp="1500000000.000100", name="eyes")
        == "message_not_found"
    )
    assert slack_error(add, channel=CHANNEL_ID, timestamp="yesterday", name="eyes") == "bad_timestamp"

    remove(channel=CHANNEL_ID, timestamp=ts, name="hourglass_flowing_sand")
    assert (
        slack_error(remove, channel=CHANNEL_ID, timestamp=ts, name="hourglass_flowing_sand") == "no_reaction"
    )
    assert slack_error(remove, channel=CHANNEL_ID, timestamp=ts, name="tada") == "no_reaction"
    remove(channel=CHANNEL_ID, timestamp=ts, name="eyes")
    assert slack_fake.message(CHANNEL_ID, ts).reactions == {"eyes": [GRACE]}  # only the bot's own goes

    slack_fake.add_emoji("kourier-spin")
    slack_client.reactions_add(channel=CHANNEL_ID, timestamp=ts, name="kourier-spin")


def test_conversations_members_pages_with_a_cursor(slack_client: WebClient, slack_fake: SlackFake) -> None:
    for number in range(5):
        slack_fake.add_user(f"U0P{number}", f"Person {number}")
        slack_fake.join(CHANNEL_ID, f"U0P{number}")
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        page = slack_client.conversations_members(channel=CHANNEL_ID, limit=3, cursor=cursor)
        seen += page["members"]
        pages += 1
        cursor = page["response_metadata"]["next_cursor"]
        if not cursor:
            break
    assert pages == 3
    assert seen == [ADA, GRACE, slack_fake.bot_user_id] + [f"U0P{n}" for n in range(5)]
    assert (
        slack_error(slack_client.conversations_members, channel=CHANNEL_ID, cursor="bm9wZQ==")
        == "invalid_cursor"
    )
    assert slack_error(slack_client.conversations_members, channel="C9999") == "channel_not_found"


def test_conversations_replies_pages_and_shows_metadata_on_request(
    slack_client: WebClient, slack_fake: SlackFake
) -> None:
    root = slack_fake.user_says(ADA, CHANNEL_ID, "question")
    metadata = {"event_type": "kourier_reply", "event_payload": {"turn": "t1"}}
    for number in range(5):
        slack_client.chat_postMessage(
            channel=CHANNEL_ID, thread_ts=root, text=f"r{number}", metadata=metadata
        )
    texts: list[str] = []
    cursor = None
    while True:
        page = slack_client.conversations_replies(channel=CHANNEL_ID, ts=root, limit=3, cursor=cursor)
        assert page["messages"][0]["ts"] == root  # the root heads every page
        texts += [m["text"] for m in page["messages"][1:]]
        cursor = page["response_metadata"]["next_cursor"]
        if not cursor:
            break
    assert texts == [f"r{n}" for n in range(5)]
    plain = slack_client.conversations_replies(channel=CHANNEL_ID, ts=root)
    assert "metadata" not in plain["messages"][1]
    with_metadata = slack_client.conversations_replies(channel=CHANNEL_ID, ts=root, include_all_metadata=True)
    assert with_metadata["messages"][1]["metadata"] == metadata
    assert with_metadata["messages"][0]["reply_count"] == 5
    assert slack_error(slack_client.conversations_replies, channel=CHANNEL_ID, ts="1500000000.000100") == (
        "thread_not_found"
    )


def test_users_info(slack_client: WebClient, slack_fake: SlackFake) -> None:
    ada = slack_client.users_info(user=ADA)["user"]
    assert (ada["real_name"], ada["profile"]["display_name"], ada["is_bot"], ada["deleted"]) == (
        "Ada Lovelace",
        "ada",
        False,
        False,
    )
    assert slack_client.users_info(user=slack_fake.bot_user_id)["user"]["is_bot"] is True
    slack_fake.deactivate_user(GRACE)
    assert slack_client.users_info(user=GRACE)["user"]["deleted"] is True
    assert slack_error(slack_client.users_info, user="U0NOBODY") == "user_not_found"


def test_usergroups_users_list(slack_client: WebClient, slack_fake: SlackFake) -> None:
    slack_fake.add_usergroup("S0APPROVERS", "approvers", [ADA, GRACE])
    assert slack_client.usergroups_users_list(usergroup="S0APPROVERS")["users"] == [ADA, GRACE]
    assert slack_error(slack_client.usergroups_users_list, usergroup="S0NONE") == "no_such_subteam"
    slack_fake.configure_workspace(usergroups_available=False)
    assert slack_error(slack_client.usergroups_users_list, usergroup="S0APPROVERS") == "plan_upgrade_required"


def test_assistant_status_is_set_cleared_and_taken_off_by_a_reply(
    slack_client: WebClient, slack_fake: SlackFake
) -> None:
    root = slack_fake.user_says(ADA, CHANNEL_ID, "alert")
    slack_client.assistant_threads_setStatus(channel_id=CHANNEL_ID, thread_ts=root, status="is working…")
    assert slack_fake.assistant_status(CHANNEL_ID, root) == "is working…"
    slack_client.chat_postMessage(channel=CHANNEL_ID, thread_ts=root, text="answer")
    assert slack_fake.assistant_status(CHANNEL_ID, root) is None
    slack_client.assistant_threads_setStatus(channel_id=CHANNEL_ID, thread_ts=root, status="is working…")
    slack_client.assistant_threads_setStatus(channel_id=CHANNEL_ID, thread_ts=root, status="")
    assert slack_fake.assistant_status_history(CHANNEL_ID, root) == ["is working…", "", "is working…", ""]
    set_status = slack_client.assistant_threads_setStatus
    assert slack_error(set_status, channel_id="C9999", thread_ts=root, status="x") == "channel_not_found"
    too_many = ["loading"] * 11
    assert slack_error(
        set_status, channel_id=CHANNEL_ID, thread_ts=root, status="x", loading_messages=too_many
    ) == ("invalid_arguments")


@pytest.mark.parametrize("support", ["missing_scope", "unknown_method"])
def test_assistant_status_can_be_unavailable(
    slack_client: WebClient, slack_fake: SlackFake, support: Any
) -> None:
    root = slack_fake.user_says(ADA, CHANNEL_ID, "alert")
    slack_fake.configure_workspace(assistant_status=support)
    set_status = slack_client.assistant_threads_setStatus
    assert slack_error(set_status, channel_id=CHANNEL_ID, thread_ts=root, status="is working…") == support


def test_the_async_client_gets_the_same_answers(
    async_slack_client: AsyncWebClient, slack_fake: SlackFake
) -> None:
    async def scenario() -> tuple[str, str, str]:
        posted = await async_slack_client.chat_postMessage(channel=CHANNEL_ID, text="async")
        user = await async_slack_client.users_info(user=ADA)  # a GET with a query string
        try:
            await async_slack_client.reactions_add(
                channel=CHANNEL_ID, timestamp=posted["ts"], name="nope_nope"
            )
        except SlackApiError as refusal:
            return posted["ts"], user["user"]["name"], refusal.response["error"]
        raise AssertionError("reactions.add should have failed")

    ts, name, error = asyncio.run(scenario())
    assert slack_fake.message(CHANNEL_ID, ts).text == "async"
    assert (name, error) == ("ada", "invalid_name")


def test_every_call_is_recorded(slack_client: WebClient, slack_fake: SlackFake) -> None:
    slack_client.chat_postMessage(channel=CHANNEL_ID, text="one")
    with pytest.raises(SlackApiError):
        slack_client.chat_postMessage(channel="C9999", text="two")
    posts = slack_fake.calls("chat.postMessage")
    assert [(c.args["text"], c.team_id, c.status, c.error, c.applied) for c in posts] == [
        ("one", TEAM_ID, 200, None, True),
        ("two", TEAM_ID, 200, "channel_not_found", False),
    ]
    assert slack_fake.count("chat.postMessage") == 2
    slack_fake.reset_calls()
    assert slack_fake.calls() == []


def test_workspaces_are_separate(slack_client: WebClient, slack_fake: SlackFake) -> None:
    other = slack_fake.add_workspace("T0002", domain="elsewhere")
    slack_fake.add_channel("C0200", "theirs", team="T0002")
    theirs = WebClient(token=other.app.bot_token, base_url=slack_fake.url)
    assert theirs.auth_test()["team_id"] == "T0002"
    theirs.chat_postMessage(channel="C0200", text="hello from T0002")
    assert slack_error(slack_client.chat_postMessage, channel="C0200", text="x") == "channel_not_found"
    assert slack_error(theirs.users_info, user=ADA) == "user_not_found"


def test_a_bug_in_the_fake_is_not_mistaken_for_slack(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(METHODS, "auth.test", lambda call: 1 / 0)
    with SlackFake() as fake:
        defaults.populate(fake)
        with pytest.raises(SlackApiError) as failure:
            WebClient(token=fake.bot_token, base_url=fake.url).auth_test()
        assert failure.value.response.status_code == 500
        assert "ZeroDivisionError" in fake.internal_errors[0]


@missing_text_is_deliberate
def test_a_posts_attachments_are_kept_and_shown_by_conversations_replies(
    slack_client: WebClient, slack_fake: SlackFake
) -> None:
    alert = {"color": "danger", "title": "[FIRING:1] HighLatency", "fallback": "HighLatency"}
    ts = slack_client.chat_postMessage(channel=CHANNEL_ID, attachments=[alert])["ts"]
    [root] = slack_client.conversations_replies(channel=CHANNEL_ID, ts=ts)["messages"]
    assert root["attachments"] == [{**alert, "id": 1}]
    assert slack_error(slack_client.chat_postMessage, channel=CHANNEL_ID, attachments=["not an object"]) == (
        "invalid_attachments"
    )


def test_conversations_replies_stops_before_latest_and_repeats_the_root_on_every_page(
    slack_client: WebClient, slack_fake: SlackFake
) -> None:
    root = slack_fake.user_says(ADA, CHANNEL_ID, "incident", deliver="none")
    said = [
        slack_fake.user_says(GRACE, CHANNEL_ID, f"r{n}", thread_ts=root, deliver="none") for n in range(5)
    ]
    first = slack_client.conversations_replies(channel=CHANNEL_ID, ts=root, latest=said[3], limit=3)
    second = slack_client.conversations_replies(
        channel=CHANNEL_ID, ts=root, latest=said[3], limit=3, cursor=first["response_metadata"]["next_cursor"]
    )
    assert [m["text"] for m in first["messages"]] == ["incident", "r0", "r1"]
    assert [m["text"] for m in second["messages"]] == ["incident", "r2"]
    assert second["has_more"] is False
