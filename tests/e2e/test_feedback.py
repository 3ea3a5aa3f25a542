"""Feedback on answers end to end (spec.feedback): the answer's final reply carries thumbs up and
down; people press them through the real door (HTTP) or the socket process (Socket Mode), the worker
records them, a thumbs down's modal takes a comment, and each change reaches kagent's controller."""

import pytest

from interactions import feedback
from interactions.models import Feedback
from kourier.slack.blocks import FEEDBACK_DOWN_ACTION, FEEDBACK_UP_ACTION
from sessions.models import Session
from simulator import defaults
from tests.e2e.helpers import WAIT, wait_for_reply_count
from tests.fakes.a2a_agent import steps

pytestmark = [pytest.mark.slow]


@pytest.fixture
def agent(a2a_agent):
    a2a_agent.on_message(lambda received: [steps.text("The pods are fine.")])
    return a2a_agent


def thumbs_buttons(message) -> list[str]:
    return [e["action_id"] for b in message.blocks if b["type"] == "actions" for e in b["elements"]]


def test_thumbs_are_recorded_once_per_person_a_comment_taken_and_sent_to_kagent(
    make_world, agent, kagent_controller
):
    world = make_world(
        agent_url=agent.url,
        feedback=True,
        kagent_controller=kagent_controller.url,
        kagent_namespace="ops",
        kagent_name="k8s-agent",
        user_identity="slack-user-id",  # turns and feedback name the person by their Slack ID
    )
    ts = world.mention("how are the pods?")
    [reply] = wait_for_reply_count(world, ts, 1)
    assert "The pods are fine." in reply.text  # the answer's wording is as it was
    assert thumbs_buttons(reply) == [FEEDBACK_UP_ACTION, FEEDBACK_DOWN_ACTION]

    assert world.slack.press_button(defaults.GRACE, world.channel, reply.ts, FEEDBACK_UP_ACTION).status == 200
    world.slack.press_button(defaults.GRACE, world.channel, reply.ts, FEEDBACK_UP_ACTION)  # again: no change
    world.slack.press_button(defaults.ADA, world.channel, reply.ts, FEEDBACK_DOWN_ACTION)
    modal = world.slack.wait_for_modal(defaults.ADA)
    assert modal.title == feedback.TITLE
    world.slack.submit_modal(
        defaults.ADA,
        {feedback.COMMENT_ACTION: "It missed the crashing pod", feedback.ISSUE_ACTION: "incomplete"},
    )

    world.slack.wait_until(
        lambda: (
            {user for user, _ in kagent_controller.feedback} == {defaults.GRACE, defaults.ADA}
            and any(body.get("issue_type") for _, body in kagent_controller.feedback)
        ),
        timeout=WAIT,
    )
    assert sorted(Feedback.objects.values_list("user_id", "is_positive", "comment", "issue_type")) == [
        (defaults.ADA, False, "It missed the crashing pod", "incomplete"),
        (defaults.GRACE, True, "", ""),
    ]
    sent_by_grace = [body for user, body in kagent_controller.feedback if user == defaults.GRACE]
    assert [body["is_positive"] for body in sent_by_grace] == [True]  # the second press changed nothing
    assert any(
        body.get("issue_type") == "incomplete"
        and body["feedback_text"].startswith("It missed the crashing pod")
        for user, body in kagent_controller.feedback
        if user == defaults.ADA
    )

    # A press on an answer whose thread was deleted: Slack gets its 200, nothing is stored.
    Session.objects.all().delete()
    assert (
        world.slack.press_button(defaults.GRACE, world.channel, reply.ts, FEEDBACK_DOWN_ACTION).status == 200
    )
    assert not Feedback.objects.exists()
    assert world.slack.modals(defaults.GRACE) == []


def test_a_thumbs_down_and_its_comment_over_the_socket(make_socket_world, agent):
    world = make_socket_world(agent_url=agent.url, feedback=True)
    ts = world.mention("how are the pods?")
    [reply] = wait_for_reply_count(world, ts, 1)

    world.slack.press_button(defaults.ADA, world.channel, reply.ts, FEEDBACK_DOWN_ACTION)
    world.slack.wait_for_modal(defaults.ADA, timeout=WAIT)
    world.slack.submit_modal(defaults.ADA, {feedback.COMMENT_ACTION: "Too vague"})

    world.slack.wait_until(lambda: Feedback.objects.filter(comment="Too vague").exists(), timeout=WAIT)
    assert Feedback.objects.get().is_positive is False
    assert world.slack.modals(defaults.ADA) == []
