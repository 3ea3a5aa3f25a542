import pytest

from kourier.slack.incoming import ChatMessage, IgnoredEvent, read_message_event

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
        pytest.param({"user": None}, id="a message with no user"),
    ],
)
def test_what_is_not_a_new_message_from_a_person_is_ignored(overrides):
    assert isinstance(read_message_event(event(**overrides), team_id="T1", bot_user_id=BOT), IgnoredEvent)
