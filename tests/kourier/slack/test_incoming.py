import pytest

from kourier.slack.incoming import (
    AppOpened,
    ChatMessage,
    IgnoredEvent,
    SessionStop,
    UnreadableEvent,
    is_redelivery,
    read_app_opened,
    read_message_event,
    read_session_stop,
    why_unreadable,
)

BOT = "U0BOT"


def event(**overrides) -> dict:
    return {"type": "message", "user": "U0ADA", "text": "hello", "ts": "1700000001.000100", "channel": "C1",
            "team": "T1", **overrides}  # fmt: skip


def test_a_mention_reads_as_a_message_that_mentions_the_bot():
    read = read_message_event(event(type="app_mention", text=f"<@{BOT}> hi"), team_id="T1", bot_user_id=BOT)
    assert read == ChatMessage(
        "T1", "C1", "1700000001.000100", None, "U0ADA", f"<@{BOT}> hi", mentions_bot=True
    )


def test_app_mention_and_message_for_one_mention_read_the_same():
    mention = read_message_event(
        event(type="app_mention", text=f"<@{BOT}> hi"), team_id="T1", bot_user_id=BOT
    )
    message = read_message_event(event(text=f"<@{BOT}> hi"), team_id="T1", bot_user_id=BOT)
    assert mention == message


def test_a_reply_carries_its_thread_root():
    read = read_message_event(event(thread_ts="1699999999.000001"), team_id="T1", bot_user_id=BOT)
    assert isinstance(read, ChatMessage)
    assert read.thread_ts == "1699999999.000001"
    assert read.mentions_bot is False


def test_a_thread_root_is_not_a_reply_to_itself():
    read = read_message_event(event(thread_ts="1700000001.000100"), team_id="T1", bot_user_id=BOT)
    assert isinstance(read, ChatMessage)
    assert read.thread_ts is None


@pytest.mark.parametrize(
    "overrides",
    [
        pytest.param({"subtype": "message_changed"}, id="an edit"),
        pytest.param({"subtype": "message_deleted"}, id="a deletion"),
        pytest.param({"subtype": "bot_message", "bot_id": "B1"}, id="a legacy bot message"),
        pytest.param({"bot_id": "B1"}, id="a bot's message"),
        pytest.param({"user": BOT}, id="the product's own message"),
        pytest.param({"subtype": "huddle_thread", "user": None}, id="a kind of message no person wrote"),
    ],
)
def test_what_is_not_a_new_message_from_a_person_is_ignored(overrides):
    assert isinstance(read_message_event(event(**overrides), team_id="T1", bot_user_id=BOT), IgnoredEvent)


@pytest.mark.parametrize(
    ("overrides", "reason"),
    [
        pytest.param({"user": None}, "no user", id="a person's message without a user"),
        pytest.param({"channel": None}, "no channel", id="no channel"),
        pytest.param({"channel": ""}, "no channel", id="an empty channel"),
        pytest.param({"ts": None}, "no ts", id="no ts"),
        pytest.param({"text": ["hello"]}, "text is not a string", id="text a list"),
        pytest.param({"channel": 42}, "channel is not a string", id="channel a number"),
        pytest.param({"thread_ts": {"ts": "1"}}, "thread_ts is not a string", id="thread_ts an object"),
        pytest.param({"user": {"id": "U0ADA"}}, "user is not a string", id="user an object"),
        pytest.param({"ts": 1700000001.0001}, "ts is not a string", id="ts a number"),
        pytest.param({"team": ["T1"]}, "team is not a string", id="team a list"),
        pytest.param({"subtype": ["bot_message"]}, "subtype is not a string", id="subtype a list"),
    ],
)
def test_an_event_with_a_field_missing_or_of_another_type_is_unreadable(overrides, reason):
    read = read_message_event(event(**overrides), team_id="T1", bot_user_id=BOT)
    assert read == UnreadableEvent(reason)


ENVELOPE = {"type": "event_callback", "team_id": "T1", "event_id": "Ev1", "event": event(),
            "authorizations": [{"team_id": "T1", "user_id": BOT}]}  # fmt: skip


@pytest.mark.parametrize(
    "payload",
    [
        pytest.param(ENVELOPE, id="an event"),
        pytest.param({**ENVELOPE, "event": {"type": "emoji_changed"}}, id="an event of a type not used"),
        pytest.param({"type": "url_verification", "challenge": "c-1"}, id="url_verification"),
        pytest.param({"type": "block_actions", "actions": [{"action_id": "a"}]}, id="block_actions"),
        pytest.param({"type": "shortcut"}, id="a payload type read no further here"),
        pytest.param(
            {"type": "view_submission", "view": {"callback_id": "kourier_deny_reason"}}, id="view_submission"
        ),
    ],
)
def test_a_payload_slack_sends_can_be_dispatched(payload):
    assert why_unreadable(payload) is None


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        pytest.param([ENVELOPE], "not a JSON object", id="a list"),
        pytest.param({"event": event()}, "no type", id="no type"),
        pytest.param({**ENVELOPE, "type": 7}, "no type", id="a type that is not a string"),
        pytest.param({"type": "event_callback"}, "event_callback without an event", id="no event"),
        pytest.param({**ENVELOPE, "event": "message"}, "event_callback without an event", id="event a string"),
        pytest.param({**ENVELOPE, "event": {"user": "U0ADA"}}, "event without a type", id="event without a type"),
        pytest.param({**ENVELOPE, "team_id": 1}, "team_id is not a string", id="team_id a number"),
        pytest.param({**ENVELOPE, "authorizations": ["T1"]}, "authorizations are not objects with a team_id",
                     id="authorizations strings"),
        pytest.param({**ENVELOPE, "authorizations": [{"team_id": 1}]},
                     "authorizations are not objects with a team_id", id="an authorization's team_id a number"),
        pytest.param({"type": "url_verification"}, "url_verification without a challenge", id="no challenge"),
        pytest.param({"type": "url_verification", "challenge": ["c"]}, "url_verification without a challenge",
                     id="challenge a list"),
        pytest.param({"type": "block_actions"}, "block_actions without actions", id="no actions"),
        pytest.param({"type": "block_actions", "actions": []}, "block_actions without actions", id="no action"),
        pytest.param({"type": "block_actions", "actions": ["a"]}, "block_actions without actions",
                     id="actions not objects"),
        pytest.param({"type": "view_submission"}, "view_submission without a view", id="no view"),
        pytest.param({"type": "view_closed", "view": {"callback_id": 3}}, "view_closed without a view",
                     id="callback_id not a string"),
    ],
)  # fmt: skip
def test_a_payload_slack_does_not_send_is_unreadable(payload, reason):
    assert why_unreadable(payload) == reason


# --- Direct messages ---------------------------------------------------------------------------------


def test_a_message_in_an_im_reads_as_a_direct_message():
    event = {
        "type": "message",
        "channel_type": "im",
        "user": "U0ADA",
        "channel": "D0001",
        "ts": "1.000001",
        "text": "hi",
    }

    read = read_message_event(event, team_id="T1", bot_user_id="U0BOT")

    assert isinstance(read, ChatMessage)
    assert read.direct
    assert not read_message_event(
        {**event, "channel_type": "channel"}, team_id="T1", bot_user_id="U0BOT"
    ).direct


def test_an_im_message_without_a_user_is_unreadable():
    event = {"type": "message", "channel_type": "im", "channel": "D0001", "ts": "1.000001", "text": "hi"}

    assert read_message_event(event, team_id="T1", bot_user_id="U0BOT") == UnreadableEvent("no user")


def test_opening_the_apps_messages_tab_reads_as_the_app_opened_without_a_thread():
    event = {
        "type": "app_home_opened",
        "user": "U0ADA",
        "channel": "D0001",
        "tab": "messages",
        "event_ts": "1.0",
    }

    assert read_app_opened(event) == AppOpened("U0ADA", "D0001", None)
    assert isinstance(read_app_opened({**event, "tab": "home"}), IgnoredEvent)
    assert read_app_opened({**event, "user": None}) == UnreadableEvent("no user")


def test_an_assistant_thread_started_reads_as_the_app_opened_in_its_thread():
    thread = {"user_id": "U0ADA", "channel_id": "D0001", "thread_ts": "1.000001", "context": {}}
    event = {"type": "assistant_thread_started", "assistant_thread": thread, "event_ts": "1.0"}

    assert read_app_opened(event) == AppOpened("U0ADA", "D0001", "1.000001")
    assert read_app_opened({**event, "assistant_thread": None}) == UnreadableEvent(
        "assistant_thread_started without an assistant_thread"
    )


@pytest.mark.parametrize(
    ("headers", "again"),
    [
        ({}, False),
        ({"x-slack-retry-num": ["0"]}, False),
        ({"x-slack-retry-num": ["1"], "x-slack-retry-reason": ["http_timeout"]}, True),
        ({"x-slack-retry-num": ["3"]}, True),
    ],
    ids=["first delivery", "retry zero", "first retry", "third retry"],
)
def test_a_delivery_is_a_redelivery_when_slack_numbers_its_retry(headers, again):
    assert is_redelivery(headers) is again


SESSION_STOPPED = {
    "type": "agent_session_stopped",
    "channel": "C1",
    "thread_ts": "1700000001.000100",
    "user": "U0GRACE",
    "event_ts": "1700000009.000200",
    "streaming_message_ts": ["1700000002.000300"],
}


def test_slacks_agent_session_stop_reads_as_who_stopped_which_thread():
    assert read_session_stop(SESSION_STOPPED) == SessionStop("U0GRACE", "C1", "1700000001.000100")


@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        ("thread_ts", None, "agent_session_stopped: no thread_ts"),
        ("user", "", "agent_session_stopped: no user"),
        ("channel", ["C1"], "agent_session_stopped: channel is not a string"),
    ],
)
def test_an_agent_session_stop_without_its_thread_person_or_channel_is_unreadable(field, value, reason):
    assert read_session_stop({**SESSION_STOPPED, field: value}) == UnreadableEvent(reason)
