import pytest

from bindings.manifest import ThreadReplies
from kourier.slack.incoming import ChatMessage
from sessions.routing import Route, ThreadState, route


def message(*, thread_ts=None, mentions_bot=False) -> ChatMessage:
    return ChatMessage(
        team_id="T1", channel_id="C1", ts="1700000001.000100", thread_ts=thread_ts,
        user_id="U1", text="hello", mentions_bot=mentions_bot,
    )  # fmt: skip


NO_SESSION = ThreadState(has_session=False)
LIVE = ThreadState(has_session=True)
EXPIRED = ThreadState(has_session=True, expired=True)


@pytest.mark.parametrize(
    ("msg", "thread", "thread_replies", "expected"),
    [
        pytest.param(message(mentions_bot=True), NO_SESSION, "all", Route.TURN, id="top-level mention starts a session"),
        pytest.param(message(), NO_SESSION, "all", Route.IGNORE, id="top-level message without mention is ignored"),
        pytest.param(message(thread_ts="1.0", mentions_bot=True), NO_SESSION, "all", Route.TURN,
                     id="mention in a thread no session owns starts one"),
        pytest.param(message(thread_ts="1.0"), NO_SESSION, "all", Route.IGNORE,
                     id="reply in a thread no session owns is ignored"),
        pytest.param(message(thread_ts="1.0"), LIVE, "all", Route.TURN, id="every reply is a turn with threadReplies all"),
        pytest.param(message(thread_ts="1.0"), LIVE, "mention", Route.NOTE,
                     id="a reply without mention is a note with threadReplies mention"),
        pytest.param(message(thread_ts="1.0", mentions_bot=True), LIVE, "mention", Route.TURN,
                     id="a mentioned reply is a turn with threadReplies mention"),
        pytest.param(message(thread_ts="1.0"), EXPIRED, "all", Route.EXPIRED,
                     id="a reply the binding would take in an expired thread gets the notice"),
        pytest.param(message(thread_ts="1.0"), EXPIRED, "mention", Route.IGNORE,
                     id="a reply the binding would not take in an expired thread is ignored"),
        pytest.param(message(thread_ts="1.0", mentions_bot=True), EXPIRED, "mention", Route.EXPIRED,
                     id="a mention in an expired thread gets the notice"),
        pytest.param(message(mentions_bot=True), LIVE, "all", Route.TURN,
                     id="a redelivered top-level mention is a turn of its own session"),
    ],
)  # fmt: skip
def test_route(msg, thread, thread_replies, expected):
    assert route(msg, thread, thread_replies=ThreadReplies(thread_replies)) is expected


def test_root_of_a_reply_is_its_thread_and_of_a_top_level_message_itself():
    assert message(thread_ts="1.0").root_ts == "1.0"
    assert message().root_ts == "1700000001.000100"
