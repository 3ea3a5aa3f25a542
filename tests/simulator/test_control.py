"""The simulator page's API on the fake: people act in the demo workspace as the page makes them, and
bad input is refused with Slack's error names before anything is stored or sent."""

from __future__ import annotations

import base64
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs

import httpx
import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from simulator import control, demo
from simulator.fake import SlackFake

from .receiver import SIGNING_SECRET, Receiver

ADA, GRACE, LINUS = (person.id for person in demo.PEOPLE)
CHANNEL = demo.CHANNEL_ID

PROMPT_BLOCKS = [
    {"type": "section", "block_id": "asked", "text": {"type": "mrkdwn", "text": "Which version?"}},
    {
        "type": "input",
        "block_id": "question-0",
        "label": {"type": "plain_text", "text": "Version"},
        "element": {
            "type": "radio_buttons",
            "action_id": "answer-0",
            "options": [
                {"text": {"type": "plain_text", "text": "2.4.0"}, "value": "0"},
                {"text": {"type": "plain_text", "text": "3.0.0"}, "value": "1"},
            ],
        },
    },
    {
        "type": "actions",
        "block_id": "submit",
        "elements": [
            {
                "type": "button",
                "action_id": "submit",
                "text": {"type": "plain_text", "text": "Submit"},
                "value": "go",
            }
        ],
    },
]


@pytest.fixture
def demo_fake(receiver: Receiver) -> Iterator[SlackFake]:
    fake = demo.build(demo.DemoSecrets("xoxb-demo-test", SIGNING_SECRET))
    control.mount_on(fake)
    fake.start()
    fake.deliver_events_to(receiver.url, SIGNING_SECRET, echo_own_messages=False)
    yield fake
    fake.stop()
    assert fake.internal_errors == []


@pytest.fixture
def api(demo_fake: SlackFake) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=demo_fake.url.removesuffix("api/") + "simulator/api/", timeout=10) as client:
        yield client


@pytest.fixture
def bot(demo_fake: SlackFake) -> WebClient:
    return WebClient(token=demo_fake.bot_token, base_url=demo_fake.url)


def refusal(answer: httpx.Response) -> tuple[int, str]:
    return answer.status_code, answer.json()["error"]


def say(api: httpx.Client, **body: Any) -> httpx.Response:
    return api.post("messages", json={"as": ADA, "channel": CHANNEL, **body})


def test_the_world_lists_the_people_to_act_as_and_the_approver_group(api: httpx.Client) -> None:
    world = api.get("world").json()
    assert world["bot"] == {"id": demo.BOT_USER_ID, "name": "Agent Kourier"}
    assert [(p["name"], p["groups"]) for p in world["people"]] == [
        ("Ada Lovelace", []),
        ("Grace Hopper", []),
        ("Linus Torvalds", ["oncall"]),
    ]
    assert world["channels"] == [{"id": CHANNEL, "name": "demo"}]


def test_a_typed_bot_name_reaches_the_app_as_a_signed_mention(
    api: httpx.Client, demo_fake: SlackFake, receiver: Receiver
) -> None:
    said = say(api, text="@Agent Kourier what can you do?")

    assert said.status_code == 200
    assert said.json()["text"] == f"<@{demo.BOT_USER_ID}> what can you do?"
    mention = next(e for e in receiver.events() if e["type"] == "app_mention")
    assert (mention["user"], mention["channel"], mention["ts"]) == (ADA, CHANNEL, said.json()["ts"])
    assert all(request.signature_valid for request in receiver.received)
    [shown] = api.get("channel", params={"as": GRACE, "channel": CHANNEL}).json()["messages"]
    assert (shown["author"]["name"], shown["text"]) == (
        "Ada Lovelace",
        f"<@{demo.BOT_USER_ID}> what can you do?",
    )


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"as": "U0NOBODY", "channel": CHANNEL, "text": "hi"}, (400, "user_not_found")),
        ({"as": ADA, "channel": "C0NOPE", "text": "hi"}, (400, "channel_not_found")),
        ({"as": ADA, "channel": CHANNEL, "text": "   "}, (400, "no_text")),
        ({"as": ADA, "channel": CHANNEL, "text": 42}, (400, "no_text")),
        ({"as": ADA, "channel": CHANNEL, "text": "x" * 40_001}, (400, "msg_too_long")),
        ({"as": ADA, "channel": CHANNEL, "text": "hi", "thread_ts": "1.000001"}, (400, "thread_not_found")),
        ({"as": ADA, "channel": CHANNEL, "text": "hi", "thread_ts": "yesterday"}, (400, "invalid_ts")),
    ],
)
def test_a_message_slack_would_refuse_is_refused_and_neither_stored_nor_sent(
    api: httpx.Client,
    demo_fake: SlackFake,
    receiver: Receiver,
    body: dict[str, Any],
    expected: tuple[int, str],
) -> None:
    answer = api.post("messages", json=body)

    assert refusal(answer) == expected
    assert answer.json()["message"]
    assert demo_fake.messages(CHANNEL) == []
    assert receiver.received == []


def test_a_body_that_is_not_a_json_object_is_refused(api: httpx.Client) -> None:
    assert refusal(api.post("messages", content=b"as=U0ADA")) == (400, "invalid_json")
    assert refusal(api.post("messages", json=["hi"])) == (400, "invalid_json")


def test_unknown_paths_and_wrong_verbs_are_refused(api: httpx.Client) -> None:
    assert refusal(api.get("nothing")) == (404, "unknown_method")
    assert refusal(api.get("messages")) == (405, "method_not_allowed")


def test_a_reaction_is_added_once_with_a_known_emoji(
    api: httpx.Client, demo_fake: SlackFake, receiver: Receiver
) -> None:
    ts = say(api, text="deploying").json()["ts"]
    react = {"as": GRACE, "channel": CHANNEL, "ts": ts}

    assert refusal(api.post("reactions", json={**react, "name": "not_an_emoji"})) == (400, "invalid_name")
    assert refusal(api.post("reactions", json={**react, "ts": "1.000001", "name": "eyes"})) == (
        400,
        "message_not_found",
    )
    assert api.post("reactions", json={**react, "name": "eyes"}).status_code == 200
    assert refusal(api.post("reactions", json={**react, "name": "eyes"})) == (400, "already_reacted")

    assert demo_fake.message(CHANNEL, ts).reactions == {"eyes": [GRACE]}
    assert [e["reaction"] for e in receiver.events() if e["type"] == "reaction_added"] == ["eyes"]
    [shown] = api.get("channel", params={"as": ADA, "channel": CHANNEL}).json()["messages"]
    assert shown["reactions"] == [{"name": "eyes", "count": 1, "people": ["Grace Hopper"]}]


def test_a_button_pressed_sends_block_actions_with_what_the_person_chose(
    api: httpx.Client, bot: WebClient, receiver: Receiver
) -> None:
    ts = bot.chat_postMessage(channel=CHANNEL, text="Which version?", blocks=PROMPT_BLOCKS)["ts"]

    pressed = api.post(
        "actions",
        json={"as": LINUS, "channel": CHANNEL, "ts": ts, "action_id": "submit", "values": {"answer-0": "1"}},
    )

    assert pressed.status_code == 200
    [payload] = receiver.interactions()
    assert payload["type"] == "block_actions"
    assert payload["user"]["id"] == LINUS
    assert [(a["action_id"], a["value"]) for a in payload["actions"]] == [("submit", "go")]
    assert payload["state"]["values"]["question-0"]["answer-0"]["selected_option"]["value"] == "1"


def test_a_control_the_message_does_not_have_is_refused_and_nothing_is_sent(
    api: httpx.Client, bot: WebClient, receiver: Receiver
) -> None:
    ts = bot.chat_postMessage(channel=CHANNEL, text="Which version?", blocks=PROMPT_BLOCKS)["ts"]
    body = {"as": LINUS, "channel": CHANNEL, "ts": ts}

    assert refusal(api.post("actions", json={**body, "action_id": "approve"})) == (400, "cannot_do_that")
    assert refusal(api.post("actions", json={**body, "action_id": ""})) == (400, "invalid_arguments")
    assert refusal(api.post("actions", json={**body, "action_id": "submit", "values": {"answer-0": 1}})) == (
        400,
        "invalid_arguments",
    )
    assert receiver.interactions() == []


def test_a_private_message_shows_only_to_its_person_in_its_thread(api: httpx.Client, bot: WebClient) -> None:
    root = say(api, text="@Agent Kourier restart the api").json()["ts"]
    bot.chat_postEphemeral(channel=CHANNEL, user=ADA, thread_ts=root, text="Only approvers decide.")

    def replies(person: str) -> list[dict[str, Any]]:
        [shown] = api.get("channel", params={"as": person, "channel": CHANNEL}).json()["messages"]
        return shown["replies"]

    [private] = replies(ADA)
    assert (private["text"], private["only_visible_to_you"]) == ("Only approvers decide.", True)
    assert replies(GRACE) == []


def test_reading_the_channel_needs_a_known_person_and_channel(api: httpx.Client) -> None:
    assert refusal(api.get("channel", params={"channel": CHANNEL})) == (400, "user_not_found")
    assert refusal(api.get("channel", params={"as": ADA, "channel": "C0NOPE"})) == (400, "channel_not_found")


def test_a_long_poll_answers_when_the_channel_changes_for_the_person(
    api: httpx.Client, bot: WebClient
) -> None:
    version = api.get("channel", params={"as": ADA, "channel": CHANNEL}).json()["version"]
    unchanged = api.get("channel", params={"as": ADA, "channel": CHANNEL, "since": version, "wait": "0.2"})
    assert unchanged.json()["version"] == version

    threading.Timer(0.2, lambda: bot.chat_postMessage(channel=CHANNEL, text="Deployed.")).start()
    changed = api.get(
        "channel", params={"as": ADA, "channel": CHANNEL, "since": version, "wait": "10"}
    ).json()

    assert changed["version"] != version
    assert [m["text"] for m in changed["messages"]] == ["Deployed."]
    assert refusal(api.get("channel", params={"as": ADA, "channel": CHANNEL, "wait": "soon"})) == (
        400,
        "invalid_arguments",
    )


@pytest.fixture
def guarded_fake() -> Iterator[SlackFake]:
    """The demo's fake as `manage.py serve` mounts it: its API for one run's token."""
    fake = demo.build(demo.DemoSecrets("xoxb-demo-test", SIGNING_SECRET))
    control.mount_on(fake, token="this-runs-token")
    fake.start()
    yield fake
    fake.stop()


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({}, 403),
        ({"X-Simulator-Token": "an-earlier-runs-token"}, 403),
        ({"X-Simulator-Token": ""}, 403),
        ({"X-Simulator-Token": "this-runs-token"}, 200),
    ],
)
def test_a_runs_api_answers_only_the_page_that_carries_its_token(
    guarded_fake: SlackFake, headers: dict[str, str], status: int
) -> None:
    base = guarded_fake.url.removesuffix("api/") + "simulator/api/"
    said = httpx.post(
        base + "messages", json={"as": ADA, "channel": CHANNEL, "text": "hi"}, headers=headers, timeout=10
    )

    assert said.status_code == status
    assert len(guarded_fake.messages(CHANNEL)) == (status == 200)
    if status == 403:
        assert said.json()["error"] == "not_authed"


def test_another_app_posts_an_alert_the_page_draws_and_the_app_reads_as_slack_shows_it(
    api: httpx.Client, bot: WebClient, receiver: Receiver
) -> None:
    posted = api.post("alerts", json={"channel": CHANNEL})

    assert posted.status_code == 200
    ts = posted.json()["ts"]
    [shown] = api.get("channel", params={"as": ADA, "channel": CHANNEL}).json()["messages"]
    assert shown["author"] == {"id": demo.ALERTS_APP_USER_ID, "name": "Alertmanager", "is_bot": True}
    assert shown["attachments"] == [
        {
            "color": "danger",
            "title": demo.DEMO_ALERT["title"],
            "text": demo.DEMO_ALERT["text"],
            "fields": [{"title": "severity", "value": "critical"}],
        }
    ]
    [root] = bot.conversations_replies(channel=CHANNEL, ts=ts)["messages"]
    assert (root["bot_id"], root["text"], root["attachments"][0]["title"]) == (
        demo.ALERTS_APP_BOT_ID,
        "",
        demo.DEMO_ALERT["title"],
    )
    assert root["bot_profile"]["name"] == "Alertmanager"


def test_an_alert_in_a_channel_the_workspace_does_not_have_is_refused_and_nothing_posted(
    api: httpx.Client, demo_fake: SlackFake
) -> None:
    assert refusal(api.post("alerts", json={"channel": "C0NOPE"})) == (400, "channel_not_found")
    assert demo_fake.messages(CHANNEL) == []


def test_a_typed_slash_command_reaches_the_app_as_its_signed_form(
    api: httpx.Client, demo_fake: SlackFake, receiver: Receiver
) -> None:
    answer = api.post("commands", json={"as": ADA, "channel": CHANNEL, "text": "/kourier why is it slow?"})
    assert answer.status_code == 200
    [request] = receiver.received
    fields = {key: values[0] for key, values in parse_qs(request.body.decode()).items()}
    assert (fields["command"], fields["text"], fields["user_id"]) == ("/kourier", "why is it slow?", ADA)
    assert api.get("channel", params={"as": ADA, "channel": CHANNEL}).json()["messages"] == []


@pytest.mark.parametrize("text", ["kourier help", "/", 42])
def test_a_command_that_is_not_one_is_refused_and_not_sent(
    api: httpx.Client, receiver: Receiver, text: object
) -> None:
    answer = api.post("commands", json={"as": ADA, "channel": CHANNEL, "text": text})
    assert refusal(answer) == (400, "invalid_command")
    assert receiver.received == []


def test_the_shortcut_in_a_messages_menu_reaches_the_app(
    api: httpx.Client, demo_fake: SlackFake, receiver: Receiver
) -> None:
    ts = say(api, text="the build is red").json()["ts"]
    receiver.received.clear()
    assert api.post("shortcuts", json={"as": GRACE, "channel": CHANNEL, "ts": ts}).status_code == 200
    [request] = receiver.received
    payload = request.json()
    assert (payload["type"], payload["message_ts"], payload["user"]["id"]) == ("message_action", ts, GRACE)
    missing = api.post("shortcuts", json={"as": GRACE, "channel": CHANNEL, "ts": "1700000000.000100"})
    assert refusal(missing) == (400, "message_not_found")


def test_opening_the_home_tab_shows_what_the_app_published_and_its_buttons_work(
    api: httpx.Client,
    demo_fake: SlackFake,
    bot: WebClient,
    receiver: Receiver,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(control, "HOME_WAIT_SECONDS", 0.2)  # this receiver publishes nothing new
    bot.views_publish(
        user_id=ADA,
        view={
            "type": "home",
            "blocks": [
                {
                    "type": "actions",
                    "block_id": "decide",
                    "elements": [
                        {
                            "type": "button",
                            "action_id": "approve",
                            "text": {"type": "plain_text", "text": "Approve"},
                            "value": "7",
                        }
                    ],
                }
            ],
        },
    )
    opened = api.post("home", json={"as": ADA})
    assert opened.json()["view"]["blocks"][0]["block_id"] == "decide"
    assert any(e["type"] == "app_home_opened" and e["tab"] == "home" for e in receiver.events())
    pressed = api.post("home-actions", json={"as": ADA, "action_id": "approve", "block_id": "decide"})
    assert pressed.status_code == 200
    assert receiver.received[-1].json()["container"]["type"] == "view"
    assert refusal(api.post("home-actions", json={"as": GRACE, "action_id": "approve"})) == (
        400,
        "cannot_do_that",
    )


def test_slacks_own_stop_on_a_stream_is_only_the_recipients_and_ends_the_apps_appends(
    api: httpx.Client, bot: WebClient
) -> None:
    root = say(api, text="why is the disk full?").json()["ts"]
    ts = bot.chat_startStream(
        channel=CHANNEL,
        thread_ts=root,
        recipient_user_id=ADA,
        recipient_team_id=demo.TEAM_ID,
        markdown_text="Looking",
    )["ts"]
    body = {"channel": CHANNEL, "ts": ts}

    assert refusal(api.post("stream-stops", json={**body, "as": GRACE})) == (400, "cannot_do_that")
    bot.chat_appendStream(channel=CHANNEL, ts=ts, markdown_text="…")  # Grace's press stopped nothing
    assert refusal(api.post("stream-stops", json={**body, "as": ADA, "ts": "1.000001"})) == (
        400,
        "message_not_found",
    )
    assert api.post("stream-stops", json={**body, "as": ADA}).status_code == 200

    with pytest.raises(SlackApiError) as refused:
        bot.chat_appendStream(channel=CHANNEL, ts=ts, markdown_text=" more")
    assert refused.value.response["error"] == "stopped_by_user"
    assert refusal(api.post("stream-stops", json={**body, "as": ADA})) == (
        400,
        "cannot_do_that",
    )  # no longer streams


def test_a_file_attached_on_the_page_is_shared_and_an_image_shows_inline(
    api: httpx.Client, demo_fake: SlackFake, receiver: Receiver
) -> None:
    png = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16
    content = base64.b64encode(png).decode()
    said = say(
        api, text="@Agent Kourier look", files=[{"name": "a.png", "type": "image/png", "content": content}]
    )

    assert said.status_code == 200
    mention = next(e for e in receiver.events() if e["type"] == "app_mention")
    assert [f["name"] for f in mention["files"]] == ["a.png"]
    [shown] = api.get("channel", params={"as": GRACE, "channel": CHANNEL}).json()["messages"]
    [file] = shown["files"]
    assert (file["name"], file["mimetype"], file["size"]) == ("a.png", "image/png", len(png))
    assert file["image"] == f"data:image/png;base64,{content}"


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ([{"name": "a.txt", "type": "text/plain", "content": "!!"}], (400, "invalid_files")),
        ([{"type": "text/plain", "content": ""}], (400, "invalid_files")),
        ([{"name": "a.txt", "content": base64.b64encode(b"x" * 150_001).decode()}], (400, "file_too_large")),
        ([{"name": f"{n}.txt", "content": ""} for n in range(4)], (400, "invalid_files")),
    ],
)
def test_a_file_the_page_cannot_attach_is_refused_and_nothing_is_sent(
    api: httpx.Client, demo_fake: SlackFake, receiver: Receiver, files: list, expected: tuple[int, str]
) -> None:
    assert refusal(say(api, text="hi", files=files)) == expected
    assert demo_fake.messages(CHANNEL) == []
    assert receiver.received == []


def test_slacks_stop_of_an_agent_session_shows_while_it_processes_and_tells_the_app(
    api: httpx.Client, bot: WebClient, receiver: Receiver
) -> None:
    root = say(api, text="@Agent Kourier why is the disk full?").json()["ts"]
    body = {"as": GRACE, "channel": CHANNEL, "thread_ts": root}

    assert refusal(api.post("session-stops", json=body)) == (400, "cannot_do_that")  # no session yet
    bot.agents_sessions_setStatus(channel_id=CHANNEL, thread_ts=root, status="processing")
    [shown] = api.get("channel", params={"as": GRACE, "channel": CHANNEL}).json()["messages"]
    assert shown["session"] == "processing"
    assert refusal(api.post("session-stops", json={**body, "thread_ts": "1.000001"})) == (
        400,
        "thread_not_found",
    )

    assert api.post("session-stops", json=body).json() == {"ok": True, "status": 200}

    stopped = next(e for e in receiver.events() if e["type"] == "agent_session_stopped")
    assert (stopped["user"], stopped["channel"], stopped["thread_ts"]) == (GRACE, CHANNEL, root)
