"""The thread so far (kourier/slack/thread_history.py): what a person sees of each message, and the
read of a thread with conversations.replies against the Slack fake (pages, the mention left out,
Slack's refusals)."""

import asyncio
import uuid

import pytest
from django.test import override_settings
from slack_sdk.web.async_client import AsyncWebClient

from kourier.slack.clients import async_web_client
from kourier.slack.thread_history import ThreadUnread, earlier_message, read_thread_so_far, seen_text
from simulator import defaults

ALERTMANAGER = "U0ALERTS"

# What Alertmanager's own Slack receiver posts (its default templates): no text, one attachment.
ALERTMANAGER_ATTACHMENT = {
    "color": "danger",
    "title": "[FIRING:1] HighLatency (api critical)",
    "title_link": "http://alertmanager.example/#/alerts?receiver=slack",
    "text": "p99 latency above 2s for 10m",
    "fallback": "[FIRING:1] HighLatency | http://alertmanager.example/",
    "fields": [{"title": "severity", "value": "critical", "short": True}],
    "footer": "Alertmanager",
}


@pytest.fixture
def client(slack_fake) -> AsyncWebClient:
    slack_fake.add_bot(ALERTMANAGER, "Alertmanager", bot_id="B0ALERTS")
    slack_fake.join(defaults.CHANNEL_ID, ALERTMANAGER)
    return AsyncWebClient(token=slack_fake.bot_token, base_url=slack_fake.url, timeout=5)


def read(client, thread_ts: str, before_ts: str, keep: int = 50):
    return asyncio.run(
        read_thread_so_far(
            client,
            defaults.CHANNEL_ID,
            thread_ts,
            before_ts=before_ts,
            keep=keep,
            bot_user_id=defaults.BOT_USER_ID,
        )
    )


def test_an_attachment_reads_as_slack_lays_it_out_and_its_fallback_only_when_it_shows_nothing():
    assert seen_text({"text": "", "attachments": [ALERTMANAGER_ATTACHMENT]}) == (
        "[FIRING:1] HighLatency (api critical) (http://alertmanager.example/#/alerts?receiver=slack)\n"
        "p99 latency above 2s for 10m\nseverity: critical\nAlertmanager"
    )
    assert seen_text({"attachments": [{"fallback": "only this", "color": "good"}]}) == "only this"


def test_blocks_are_read_instead_of_the_text_they_stand_for():
    message = {
        "text": "notification fallback",
        "blocks": [
            {"type": "header", "text": {"type": "plain_text", "text": "Incident #42"}},
            {
                "type": "section",
                "text": {"type": "mrkdwn", "text": "*api* is down"},
                "fields": [{"type": "mrkdwn", "text": "sev1"}],
            },
            {"type": "divider"},
            {"type": "context", "elements": [{"type": "mrkdwn", "text": "PagerDuty"}]},
            {
                "type": "actions",
                "elements": [{"type": "button", "text": {"type": "plain_text", "text": "Ack"}}],
            },
        ],
    }
    assert seen_text(message) == "Incident #42\n*api* is down\nsev1\nPagerDuty"


def test_a_persons_rich_text_reads_as_they_typed_it():
    message = {
        "text": "ignored",
        "blocks": [
            {
                "type": "rich_text",
                "elements": [
                    {
                        "type": "rich_text_section",
                        "elements": [
                            {"type": "text", "text": "see "},
                            {"type": "user", "user_id": "U0ADA"},
                            {"type": "text", "text": " and "},
                            {"type": "link", "url": "https://x.example/"},
                        ],
                    },
                    {
                        "type": "rich_text_list",
                        "elements": [
                            {"type": "rich_text_section", "elements": [{"type": "text", "text": "one"}]}
                        ],
                    },
                ],
            }
        ],
    }
    assert seen_text(message) == "see <@U0ADA> and https://x.example/\n- one"


@pytest.mark.parametrize(
    ("raw", "author"),
    [
        ({"ts": "1.0", "user": "U0ADA", "text": "hi"}, ("U0ADA", None, None, False)),
        (
            {"ts": "1.0", "user": "U0X", "bot_id": "B0X", "bot_profile": {"name": "PagerDuty"}, "text": "hi"},
            (None, "B0X", "PagerDuty", False),
        ),
        (
            {
                "ts": "1.0",
                "subtype": "bot_message",
                "bot_id": "B0HOOK",
                "username": "alertmanager",
                "text": "hi",
            },
            (None, "B0HOOK", "alertmanager", False),
        ),
        (
            {"ts": "1.0", "user": defaults.BOT_USER_ID, "bot_id": defaults.BOT_ID, "text": "hi"},
            (None, defaults.BOT_ID, None, True),
        ),
    ],
)
def test_a_message_is_a_persons_or_an_apps_and_this_apps_own_is_told(raw, author):
    message = earlier_message(raw, bot_user_id=defaults.BOT_USER_ID)
    assert (message.user_id, message.app_id, message.app_name, message.own) == author


@pytest.mark.parametrize(
    "raw",
    [
        {
            "ts": "1.0",
            "subtype": "tombstone",
            "user": "USLACKBOT",
            "text": "This message was deleted.",
            "hidden": True,
        },
        {"ts": "1.0", "subtype": "channel_join", "user": "U0ADA", "text": "<@U0ADA> has joined"},
        {"ts": "1.0", "user": "U0ADA", "text": "  "},
    ],
)
def test_what_no_person_reads_as_a_message_is_left_out(raw):
    assert earlier_message(raw, bot_user_id=defaults.BOT_USER_ID) is None


def test_a_thread_under_another_apps_alert_is_read_up_to_the_mention_in_one_call(slack_fake, client):
    root = slack_fake.bot_says(ALERTMANAGER, defaults.CHANNEL_ID, "", attachments=[ALERTMANAGER_ATTACHMENT])
    slack_fake.user_says(defaults.GRACE, defaults.CHANNEL_ID, "on it", thread_ts=root)
    mention = slack_fake.user_says(
        defaults.ADA,
        defaults.CHANNEL_ID,
        f"{slack_fake.bot_mention} summarise",
        thread_ts=root,
        deliver="none",
    )
    slack_fake.user_says(
        defaults.GRACE, defaults.CHANNEL_ID, "after the mention", thread_ts=root, deliver="none"
    )
    slack_fake.reset_calls()

    thread = read(client, root, mention)

    assert thread.root.app_name == "Alertmanager"
    assert "HighLatency" in thread.root.text
    assert [(m.user_id, m.text) for m in thread.replies] == [(defaults.GRACE, "on it")]
    assert thread.replies_not_kept == 0
    assert slack_fake.count("conversations.replies") == 1


def test_a_long_thread_is_paged_and_only_its_latest_replies_kept(slack_fake, client):
    root = slack_fake.user_says(defaults.ADA, defaults.CHANNEL_ID, "incident", deliver="none")
    for n in range(450):
        slack_fake.user_says(
            defaults.GRACE, defaults.CHANNEL_ID, f"reply {n}", thread_ts=root, deliver="none"
        )
    mention = slack_fake.user_says(
        defaults.ADA, defaults.CHANNEL_ID, "sum up", thread_ts=root, deliver="none"
    )
    slack_fake.reset_calls()

    thread = read(client, root, mention, keep=5)

    assert [m.text for m in thread.replies] == [f"reply {n}" for n in range(445, 450)]
    assert thread.replies_not_kept == 445
    assert thread.root.text == "incident"
    calls = slack_fake.calls("conversations.replies")
    assert len(calls) == 3
    assert all(call.args.get("latest") == mention for call in calls)


@pytest.mark.parametrize("error", ["missing_scope", "not_in_channel", "ratelimited"])
def test_a_thread_slack_does_not_give_raises_with_slacks_reason(slack_fake, client, error):
    root = slack_fake.user_says(defaults.ADA, defaults.CHANNEL_ID, "incident", deliver="none")
    mention = slack_fake.user_says(
        defaults.ADA, defaults.CHANNEL_ID, "sum up", thread_ts=root, deliver="none"
    )
    slack_fake.fail("conversations.replies", error, times=None, retry_after=30)

    with pytest.raises(ThreadUnread) as unread:
        read(client, root, mention)
    assert unread.value.reason == error


def test_a_rate_limit_that_outlasts_the_products_clients_wait_is_not_waited_for(slack_fake):
    root = slack_fake.user_says(defaults.ADA, defaults.CHANNEL_ID, "incident", deliver="none")
    mention = slack_fake.user_says(
        defaults.ADA, defaults.CHANNEL_ID, "sum up", thread_ts=root, deliver="none"
    )
    slack_fake.fail("conversations.replies", "ratelimited", times=None, retry_after=600)
    # A workspace of its own: the block a 429 leaves is shared through Redis.
    with override_settings(SLACK_API_URL=slack_fake.url):
        client = async_web_client(slack_fake.bot_token, workspace=f"T{uuid.uuid4().hex[:10].upper()}")

    with pytest.raises(ThreadUnread) as unread:
        read(client, root, mention)
    assert unread.value.reason == "ratelimited"
    assert slack_fake.count("conversations.replies") == 1  # the block outlasts the wait: not sent again
