"""Direct messages (spec.directMessages): routing a person's message to the Connection's DM Binding,
who may talk to the agent, the refusal, and the thread's title."""

from dataclasses import replace
from datetime import timedelta

import pytest
from asgiref.sync import async_to_sync
from django.utils import timezone

from bindings import directory
from bindings.manifest import DirectMessagesSpec
from kourier.slack.incoming import ChatMessage
from sessions import notices
from sessions.direct_messages import Access, access_of, may_act, take_direct_message, thread_title
from sessions.models import Session, ThreadNote, Turn
from sessions.routing import Route
from sessions.services import route_message, tell_expired
from simulator import defaults
from tests.factories import BindingFactory

pytestmark = pytest.mark.django_db

IM = "D0000000001"


def direct(text="hello", *, ts="1700000001.000100", thread_ts=None, user=defaults.ADA) -> ChatMessage:
    return ChatMessage("T1", IM, ts, thread_ts, user, text, mentions_bot=False, direct=True)


@pytest.fixture
def dm_binding():
    directory.forget()
    # threadReplies: mention would make replies notes in a channel; a direct message ignores it.
    return BindingFactory(channels=[], direct_messages={}, thread_replies="mention")


def test_every_top_level_direct_message_starts_a_session_and_every_reply_is_a_turn(dm_binding):
    first = route_message(dm_binding.connection, direct())
    reply = route_message(
        dm_binding.connection, direct("more", ts="1700000002.000100", thread_ts="1700000001.000100")
    )
    other = route_message(dm_binding.connection, direct("again", ts="1700000003.000100"))

    assert [(r.route, r.created) for r in (first, reply, other)] == [(Route.TURN, True)] * 3
    assert Session.objects.count() == 2
    assert Turn.objects.filter(session__thread_ts="1700000001.000100").count() == 2
    assert not ThreadNote.objects.exists()


def test_a_direct_message_no_binding_takes_is_not_routed():
    binding = BindingFactory(channels=[IM.replace("D", "C")])
    directory.forget()

    assert route_message(binding.connection, direct()).route is None
    assert not Session.objects.exists()


def test_a_channel_binding_never_takes_a_direct_message_even_of_a_bound_id():
    binding = BindingFactory(channels=[IM])
    directory.forget()

    assert route_message(binding.connection, direct()).route is None


def test_a_direct_message_binding_takes_no_channel_message(dm_binding):
    in_channel = replace(direct(), channel_id="C0000000001", direct=False, mentions_bot=True)

    assert route_message(dm_binding.connection, in_channel).route is None


# --- Who may talk ------------------------------------------------------------------------------------


@pytest.fixture
def ops_group(slack_fake):
    slack_fake.add_usergroup("S0OPS", "ops", [defaults.GRACE])


def access(client, user, **spec) -> Access:
    return async_to_sync(access_of)(client, DirectMessagesSpec(**spec), user, binding="ops")


def test_without_lists_everyone_may_talk(async_slack_client):
    assert access(async_slack_client, defaults.GRACE) is Access.ALLOWED


def test_a_listed_user_or_a_member_of_a_listed_group_may_talk_and_nobody_else(async_slack_client, ops_group):
    lists = {"allowed_users": (defaults.ADA,), "allowed_groups": ("S0OPS",)}
    assert access(async_slack_client, defaults.ADA, **lists) is Access.ALLOWED
    assert access(async_slack_client, defaults.GRACE, **lists) is Access.ALLOWED
    assert access(async_slack_client, "U0EVE", **lists) is Access.REFUSED


def test_a_group_slack_will_not_read_refuses(async_slack_client, slack_fake, ops_group, caplog):
    slack_fake.configure_workspace(usergroups_available=False)

    assert access(async_slack_client, defaults.GRACE, allowed_groups=("S0OPS",)) is Access.REFUSED
    assert "direct_message.allowed_group_unreadable" in caplog.text


def test_a_group_slack_cannot_read_just_now_is_unknown(async_slack_client, slack_fake, ops_group):
    slack_fake.fail("usergroups.users.list", "http_503")

    assert access(async_slack_client, defaults.GRACE, allowed_groups=("S0OPS",)) is Access.UNKNOWN


def test_a_refused_person_is_told_once_in_the_thread_and_nothing_is_stored(
    async_slack_client, slack_fake, caplog
):
    directory.forget()
    binding = BindingFactory(channels=[], direct_messages={"allowed_users": [defaults.GRACE]})
    im = slack_fake.user_opens_app(defaults.ADA)
    ts = slack_fake.user_says(defaults.ADA, im, "my secret plan")
    message = ChatMessage(defaults.TEAM_ID, im, ts, None, defaults.ADA, "my secret plan", False, direct=True)
    directory.current()  # read here: the test's transaction is not another thread's to see

    for _ in range(2):  # Slack delivers it again
        async_to_sync(take_direct_message)(
            binding.connection_id, message, async_slack_client, team_id=defaults.TEAM_ID, bot_user_id="U0BOT"
        )

    assert [m.text for m in slack_fake.thread(im, ts)[1:]] == [notices.DIRECT_MESSAGE_REFUSED]
    assert not Session.objects.exists()
    assert not Turn.objects.exists()
    assert "my secret plan" not in caplog.text


def test_a_refused_person_is_refused_again_without_asking_slack_and_told_once_a_while(
    async_slack_client, slack_fake, ops_group
):
    directory.forget()
    binding = BindingFactory(channels=[], direct_messages={"allowed_groups": ["S0OPS"]})
    im = slack_fake.user_opens_app(defaults.ADA)
    directory.current()
    slack_fake.reset_calls()

    roots = [slack_fake.user_says(defaults.ADA, im, f"spam {n}", deliver="none") for n in range(5)]
    for ts in roots:
        message = ChatMessage(defaults.TEAM_ID, im, ts, None, defaults.ADA, "spam", False, direct=True)
        async_to_sync(take_direct_message)(
            binding.connection_id, message, async_slack_client, team_id=defaults.TEAM_ID, bot_user_id="U0BOT"
        )

    assert len(slack_fake.calls("usergroups.users.list")) == 1
    told = [[m.text for m in slack_fake.thread(im, ts)[1:]] for ts in roots]
    assert told == [[notices.DIRECT_MESSAGE_REFUSED], [], [], [], []]
    assert not Turn.objects.exists()


# --- Presses and forms in the conversation ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("channel", "user", "allowed"),
    [
        (IM, defaults.GRACE, Access.ALLOWED),  # listed
        (IM, "U0EVE", Access.REFUSED),  # in the conversation's payload, not listed
        ("C0000000001", "U0EVE", Access.ALLOWED),  # a channel: its own rules decide
    ],
)
def test_a_press_in_a_direct_message_answers_to_the_allow_list(async_slack_client, channel, user, allowed):
    directory.forget()
    binding = BindingFactory(channels=[], direct_messages={"allowed_users": [defaults.GRACE]})
    directory.current()

    access = async_to_sync(may_act)(
        binding.connection_id, async_slack_client, channel_id=channel, user_id=user
    )

    assert access is allowed


@pytest.mark.parametrize(
    ("text", "title"),
    [
        ("What is deploying?", "What is deploying?"),
        ("\n  first line  \nsecond", "first line"),
        ("x" * 100, "x" * 79 + "…"),
        ("   ", "New conversation"),
    ],
)
def test_a_thread_is_titled_by_its_first_line(text, title):
    assert thread_title(text) == title


@pytest.mark.django_db(transaction=True)  # the notice's outbox is written from another thread
def test_a_reply_in_an_expired_direct_message_thread_is_told_to_send_a_new_message(
    dm_binding, slack_fake, settings, monkeypatch
):
    settings.SLACK_API_URL = slack_fake.url
    monkeypatch.setenv("SLACK_BOT_TOKEN", slack_fake.bot_token)
    im = slack_fake.user_opens_app(defaults.ADA)
    root = slack_fake.user_says(defaults.ADA, im, "hello")
    reply = slack_fake.user_says(defaults.ADA, im, "still there?", thread_ts=root)
    route_message(dm_binding.connection, replace(direct(ts=root), channel_id=im))
    Session.objects.update(expires_at=timezone.now() - timedelta(minutes=1))
    expired = route_message(dm_binding.connection, replace(direct(ts=reply, thread_ts=root), channel_id=im))

    tell_expired(expired.turn_id)

    assert [m.text for m in slack_fake.thread(im, root) if m.is_bot] == [notices.EXPIRED_DIRECT_MESSAGE]
