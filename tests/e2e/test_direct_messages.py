"""Talking to the agent in private (issue 22), end to end over HTTP and over Socket Mode: a person
opens the app, gets the Binding's suggested prompts, writes; the thread gets its title, Slack's status
shows while the turn runs, the answer streams in the thread and a reply continues the session. A
person the Binding does not let talk gets the refusal and nothing of theirs is stored or logged."""

import pytest

from kourier.slack.status import ASSISTANT_STATUS_WORKING
from sessions import notices
from sessions.models import Session, ThreadNote, Turn
from simulator import defaults
from tests.e2e.helpers import wait_for_turns_to_end
from tests.fakes.a2a_agent import steps

pytestmark = pytest.mark.slow

PROMPT = {"title": "Deploys", "message": "What is deploying right now?"}
DIRECT_MESSAGES = {"allowed_users": [defaults.ADA], "allowed_groups": [], "suggested_prompts": [PROMPT]}


@pytest.fixture
def agent(a2a_agent):
    a2a_agent.script([steps.text("Hello "), steps.text("in private.")])
    return a2a_agent


def bot_replies(slack, channel, root):
    return [m for m in slack.thread(channel, root)[1:] if m.is_bot]


def wait_for_bot_replies(slack, channel, root, count):
    slack.wait_until(
        lambda: (
            len(found := bot_replies(slack, channel, root)) >= count and not any(m.streaming for m in found)
        ),
        timeout=30,
    )
    return bot_replies(slack, channel, root)


def every_log_line(world) -> str:
    return "".join(path.read_text(errors="replace") for path in sorted(world.stack.logs.glob("*.log")))


def test_a_person_talks_to_the_agent_in_private_and_a_stranger_is_refused(make_world, agent):
    world = make_world(agent_url=agent.url, channels=[], direct_messages=DIRECT_MESSAGES)
    slack = world.slack

    im = slack.user_opens_app(defaults.ADA)
    slack.wait_until(
        lambda: slack.suggested_prompts(im) == [(PROMPT["title"], PROMPT["message"])], timeout=10
    )

    root = slack.user_says(defaults.ADA, im, "what is up in private?")
    [answer] = wait_for_bot_replies(slack, im, root, 1)
    assert answer.text == "Hello in private."
    assert slack.thread_title(im, root) == "what is up in private?"
    wait_for_turns_to_end(world, 1)
    assert slack.assistant_status_history(im, root)[0] == ASSISTANT_STATUS_WORKING
    assert slack.assistant_status(im, root) is None  # cleared when the turn ended
    slack.user_says(defaults.ADA, im, "and then?", thread_ts=root)
    wait_for_bot_replies(slack, im, root, 2)
    wait_for_turns_to_end(world, 2)
    first, second = agent.received
    assert first.text == "Slack: Ada Lovelace (U0ADA): what is up in private?"
    assert second.context_id == first.context_id
    assert Session.objects.get().channel_id == im

    stranger_im = slack.user_opens_app(defaults.GRACE)
    secret = "grace's private plan"
    asked = slack.user_says(defaults.GRACE, stranger_im, secret)
    [refusal] = wait_for_bot_replies(slack, stranger_im, asked, 1)
    assert refusal.text == notices.DIRECT_MESSAGE_REFUSED
    assert Turn.objects.count() == 2
    assert not ThreadNote.objects.exists()
    assert len(agent.received) == 2
    logs = every_log_line(world)
    assert "direct_message.refused" in logs
    for text in ("what is up in private?", "and then?", secret, "Hello in private."):
        assert text not in logs


def test_a_direct_message_over_socket_mode_is_answered_in_its_thread(make_socket_world, agent):
    world = make_socket_world(agent_url=agent.url, channels=[], direct_messages=DIRECT_MESSAGES)
    slack = world.slack
    im = slack.user_opens_app(defaults.ADA)
    slack.wait_until(lambda: slack.suggested_prompts(im) != [], timeout=10)
    root = slack.user_says(defaults.ADA, im, "hello over the socket")
    [answer] = wait_for_bot_replies(slack, im, root, 1)
    assert answer.text == "Hello in private."
    assert slack.thread_title(im, root) == "hello over the socket"
    assert ASSISTANT_STATUS_WORKING in slack.assistant_status_history(im, root)


APPROVALS_CHANNEL = "C0APPROVE"


def test_a_direct_messages_approval_is_decided_in_the_approvals_channel_and_ends_both_prompts(
    make_world, make_a2a_agent
):
    from interactions.approval_prompts import APPROVE_ACTION
    from interactions.models import Interaction
    from tests.e2e.helpers import ADD, has_controls, pause_then_finish
    from tests.fakes.a2a_agent import HITL_EXTENSION

    agent = make_a2a_agent(text_style="kagent-1.0", extensions=[HITL_EXTENSION])
    agent.on_message(pause_then_finish([ADD]))
    world = make_world(
        agent_url=agent.url,
        dialect="kagent-v1",
        tool_approvals=True,
        approver_groups=["S0APPROVE"],
        channels=[],
        direct_messages={"allowed_users": [defaults.ADA], "approvals_channel": APPROVALS_CHANNEL},
    )
    slack = world.slack
    slack.add_usergroup("S0APPROVE", "approvers", [defaults.GRACE])
    slack.add_channel(APPROVALS_CHANNEL, "approvals", members=[defaults.GRACE, slack.bot_user_id])
    im = slack.user_opens_app(defaults.ADA)
    root = slack.user_says(defaults.ADA, im, "add two and three")

    def prompts():
        in_dm = [m for m in bot_replies(slack, im, root) if has_controls(m.blocks)]
        copies = [m for m in slack.messages(APPROVALS_CHANNEL) if m.is_bot and has_controls(m.blocks)]
        return in_dm, copies

    slack.wait_until(lambda: all(prompts()), timeout=30)
    [in_dm], [copy] = prompts()
    assert f"<@{defaults.ADA}>" in copy.blocks[0]["elements"][0]["text"]  # whose conversation, with a link
    assert f"/archives/{im}/p{in_dm.ts.replace('.', '')}" in copy.blocks[0]["elements"][0]["text"]

    # Ada is in the conversation but not an approver: her press is refused; Grace decides from the channel.
    assert slack.press_button(defaults.ADA, im, in_dm.ts, APPROVE_ACTION).status == 200
    assert slack.press_button(defaults.GRACE, APPROVALS_CHANNEL, copy.ts, APPROVE_ACTION).status == 200
    slack.wait_until(lambda: not any(prompts()), timeout=30)
    interaction = Interaction.objects.get()
    assert (interaction.state, interaction.answered_by) == (Interaction.State.ANSWERED, defaults.GRACE)
    slack.wait_until(
        lambda: any("Ran 1 of 1 tools." in m.text for m in bot_replies(slack, im, root)), timeout=30
    )
