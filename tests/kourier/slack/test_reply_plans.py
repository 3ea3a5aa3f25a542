"""How a reply is shown under Slack's budgets: streamed while stream starts are free, else posted and
updated, else posted once when final; chosen once and kept, through a restart, with nothing shown
twice and nothing sent to draw a 429."""

import asyncio
import time

import pytest
from django.test import override_settings

from kourier.slack.budgets import UPDATED_REPLIES, Budget
from kourier.slack.clients import RetryPolicy, async_web_client, workspace_key
from kourier.slack.reply_plans import ReplyPlan, recorded_plan
from kourier.slack.writer import ReplyTarget, SlackReply
from simulator import defaults
from tests.support.budgets import forget_shared_budgets
from tests.support.memory_outbox import MemoryOutbox

REPLY_KEY = "turn-key-plans"
QUICK = RetryPolicy(backoff=0.01, max_backoff=0.02)


@pytest.fixture
def slack(make_slack_fake):
    """Slack enforcing its budgets, as under load."""
    return make_slack_fake(rate_limits=True)


@pytest.fixture
def thread_ts(slack) -> str:
    return slack.user_says(defaults.ADA, defaults.CHANNEL_ID, f"{slack.bot_mention} hi")


def reply(slack, thread_ts, *, stream=True, outbox=None, existing_ts=None) -> SlackReply:
    with override_settings(SLACK_API_URL=slack.url):
        client = async_web_client(slack.bot_token, timeout=2, policy=QUICK)
    target = ReplyTarget(defaults.CHANNEL_ID, thread_ts, defaults.ADA, defaults.TEAM_ID, REPLY_KEY)
    return SlackReply(
        client, target, live=True, stream=stream, min_interval=0.0, outbox=outbox, existing_ts=existing_ts
    )


def spend(slack, *methods: str) -> None:
    """Other replies of the workspace took every slot of ``methods`` for the next while."""
    budget = Budget(workspace_key(slack.bot_token, None))
    for method in methods:
        while budget.reserve(method, time.time(), max_wait=0).reserved:
            pass


def replies(slack, thread_ts):
    return slack.thread(defaults.CHANNEL_ID, thread_ts)[1:]


def refused(slack) -> int:
    return sum(1 for call in slack.calls() if call.error == "ratelimited")


def test_a_reply_streams_while_the_workspace_has_stream_starts(slack, thread_ts):
    async def scenario():
        live = reply(slack, thread_ts)
        await live.show("Hello")
        await live.settled()
        await live.finish("Hello, world.")
        return live.plan

    assert asyncio.run(scenario()) is ReplyPlan.STREAM
    [message] = replies(slack, thread_ts)
    assert message.text == "Hello, world."
    assert slack.count("chat.startStream") == 1


def test_a_chat_reply_whose_stream_starts_are_spent_is_posted_and_updated_not_queued(slack, thread_ts):
    spend(slack, "chat.startStream")

    async def scenario():
        live = reply(slack, thread_ts)
        await live.show("Looking")
        await live.settled()
        shown = [m.text for m in replies(slack, thread_ts)]
        await live.finish("Looking done: all good.")
        return live.plan, shown

    plan, shown = asyncio.run(scenario())
    assert plan is ReplyPlan.UPDATES
    assert shown == ["Looking"]  # shown while the turn runs, in a message of its own
    [message] = replies(slack, thread_ts)
    assert message.text == "Looking done: all good."
    assert slack.count("chat.startStream") == 0
    assert (slack.count("chat.postMessage"), slack.count("chat.update")) == (1, 1)
    assert refused(slack) == 0


@pytest.mark.parametrize("stream", [True, False], ids=["chat thread", "alert thread"])
def test_past_the_updated_replies_budget_a_reply_is_posted_once_when_final(slack, thread_ts, stream):
    spend(slack, "chat.startStream", UPDATED_REPLIES)

    async def scenario():
        live = reply(slack, thread_ts, stream=stream)
        await live.show("Looking")
        await live.settled()
        shown = replies(slack, thread_ts)
        await live.finish("The whole answer.")
        return live.plan, shown

    plan, shown = asyncio.run(scenario())
    assert plan is ReplyPlan.FINAL
    assert shown == []  # nothing until the answer: no Working…, no partial text
    [message] = replies(slack, thread_ts)
    assert message.text == "The whole answer."
    assert slack.count("chat.startStream") + slack.count("chat.update") == 0
    assert slack.count("chat.postMessage") == 1
    assert refused(slack) == 0


@override_settings(SLACK_CALL_LIMITS="chat.update=1/2")
def test_an_update_with_no_slot_soon_is_kept_and_merged_and_the_last_waits_its_turn(slack, thread_ts):
    spend(slack, "chat.startStream")

    async def scenario():
        live = reply(slack, thread_ts)
        await live.show("One")
        await live.settled()  # posted
        spend(slack, "chat.update")  # another reply took the update budget's one slot
        await live.show("One, two")
        await live.show("One, two, three")
        await live.finish("One, two, three. Done.")

    asyncio.run(scenario())
    [message] = replies(slack, thread_ts)
    assert message.text == "One, two, three. Done."
    # The kept writes were merged into the last: one update, when a slot came, and no 429.
    assert slack.count("chat.update") == 1
    assert refused(slack) == 0


def test_a_restarted_runner_keeps_a_final_plan_and_posts_the_answer_once(slack, thread_ts):
    spend(slack, "chat.startStream", UPDATED_REPLIES)
    outbox = MemoryOutbox()

    async def first_runner():
        live = reply(slack, thread_ts, outbox=outbox)
        await live.show("Looking")
        await live.settled()
        return live.plan  # and the process dies here, its answer not posted

    async def second_runner():
        live = reply(slack, thread_ts, outbox=outbox)
        await live.show("Looking again")
        await live.settled()
        await live.finish("The whole answer.")
        return live.plan

    assert asyncio.run(first_runner()) is ReplyPlan.FINAL
    assert asyncio.run(recorded_plan(REPLY_KEY)) is ReplyPlan.FINAL
    assert replies(slack, thread_ts) == []
    forget_shared_budgets(plans=False)  # the budgets have room again: a new choice would stream
    assert asyncio.run(second_runner()) is ReplyPlan.FINAL
    [message] = replies(slack, thread_ts)
    assert message.text == "The whole answer."
    assert slack.count("chat.startStream") == 0


def test_a_restarted_runner_takes_over_a_posted_reply_and_updates_it_not_posting_again(slack, thread_ts):
    spend(slack, "chat.startStream")
    outbox = MemoryOutbox()

    async def first_runner():
        live = reply(slack, thread_ts, outbox=outbox)
        await live.show("Half of")
        await live.settled()
        return live.plan  # dies with its update waiting for the budget

    async def second_runner():
        live = reply(slack, thread_ts, outbox=outbox)
        await live.finish("Half of it, then the rest.")

    assert asyncio.run(first_runner()) is ReplyPlan.UPDATES
    asyncio.run(second_runner())
    [message] = replies(slack, thread_ts)
    assert message.text == "Half of it, then the rest."
    assert slack.count("chat.postMessage") == 1
    assert slack.count("chat.startStream") == 0


def test_without_budgets_every_chat_reply_streams_the_naive_bridge(slack, thread_ts):
    spend(slack, "chat.startStream")  # spent, but the naive bridge does not look

    async def scenario():
        live = reply(slack, thread_ts)
        await live.show("Hello")
        await live.settled()
        await live.finish("Hello, world.")
        return live.plan

    with override_settings(SLACK_CALL_BUDGETS=False):
        assert asyncio.run(scenario()) is ReplyPlan.STREAM
    assert slack.count("chat.startStream") == 1


def test_an_updated_reply_keeps_room_for_its_last_update_in_the_budget_it_was_admitted_with(slack, thread_ts):
    """Admitted as three of the workspace's updates: two before the last in any minute, however
    often the turn writes, so that its last update finds a slot at once."""
    spend(slack, "chat.startStream")

    async def scenario():
        live = reply(slack, thread_ts)
        for text in ("A", "A b", "A b c"):  # the post, then two updates
            await live.show(text)
            await live.settled()
        await live.show("A b c d")  # kept: merged into the last
        updates_before_the_last = slack.count("chat.update")
        await live.finish("A b c d. Done.")
        return updates_before_the_last

    assert asyncio.run(scenario()) == 2
    [message] = replies(slack, thread_ts)
    assert message.text == "A b c d. Done."
    assert (slack.count("chat.postMessage"), slack.count("chat.update")) == (1, 3)
