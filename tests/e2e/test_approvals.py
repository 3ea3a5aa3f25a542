"""Tool approvals end to end: a kagent 1.0 agent (the scripted fake) pauses for its tools, people
decide in the thread through signed block_actions into Daphne, a Celery worker sends the decision,
and every failure path of the approver check, the timeout and an unusable prompt is forced in the
Slack fake or the agent."""

import json
import signal
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from audit.models import AuditEvent
from interactions import deny_reasons, reminders, sweeps
from interactions.approval_prompts import (
    ALLOW_FOR_THREAD_ACTION,
    APPROVE_ACTION,
    DECIDE_ACTION,
    DENY_ACTION,
    TIMED_OUT_LINE,
)
from interactions.approvals import APPROVAL
from interactions.bound import ANOTHER_APP
from interactions.kinds import Refusal
from interactions.models import Interaction, KeptPress
from interactions.presses import KEPT_FOR_RETRY
from kourier.a2a.dialects.kagent import DENIAL_REASON, TIMEOUT_DENIAL_REASON
from kourier.progress import STOPPED, WAITING_FOR_YOUR_ANSWER
from sessions import notices
from sessions.models import Turn
from simulator import defaults
from tests.e2e.helpers import (
    ADD,
    CHECK,
    SECRET,
    another_app,
    approvals_world,
    bot_messages,
    decisions_received,
    has_controls,
    manage,
    pause_then_finish,
    press,
    through_another_app,
    wait_for,
    wait_for_prompt,
)
from tests.factories import StaffUserFactory
from tests.fakes.a2a_agent import HITL_EXTENSION, kagent
from tests.fakes.a2a_agent.kagent import PendingTool

pytestmark = [pytest.mark.slow, pytest.mark.shares_stacks]  # tests/support/stack.py: StackPool

WAIT = 20.0
# A killed worker's try is sent again by the sweep once overdue: its backoff, LOST_AFTER, a sweep's
# interval; or, had it been killed mid-try, TRY_TAKES_AT_MOST (60 s).
RESTART_WAIT = 90.0
APPROVERS, OPERATORS = "S0APPROVE", "S0OPERATE"


@pytest.fixture
def kagent_agent(make_a2a_agent):
    agent = make_a2a_agent(text_style="kagent-1.0", extensions=[HITL_EXTENSION])
    agent.on_message(pause_then_finish([ADD, CHECK]))
    return agent


def test_approving_one_tool_and_denying_the_other_sends_one_response_naming_both(make_world, kagent_agent):
    world = approvals_world(make_world, kagent_agent, progress="steps")
    ts = world.mention("check the service")
    prompt = wait_for_prompt(world, ts)
    shown = json.dumps(prompt.blocks)
    assert "add_numbers" in shown
    assert "check_status" in shown
    assert SECRET not in shown
    assert "[redacted]" in shown
    actions = [e["action_id"] for b in prompt.blocks if b["type"] == "actions" for e in b["elements"]]
    assert actions == [DECIDE_ACTION, APPROVE_ACTION, DENY_ACTION]  # Submit, Approve all, Deny all

    press(world, prompt.ts, DECIDE_ACTION, choices={"verdict-0": "approve", "verdict-1": "deny"})

    world.slack.wait_until(lambda: len(kagent_agent.received) == 2, timeout=WAIT)
    decision = kagent_agent.received[1]
    assert decision.task_id == kagent_agent.received[0].server_task_id
    assert decisions_received(decision) == {
        "type": "tool_approval_response",
        "approvals": [
            {"id": "adk-add", "approved": True},
            {"id": "adk-check", "approved": False, "rejection_reason": DENIAL_REASON},
        ],
    }
    world.slack.wait_until(
        lambda: any("Ran 1 of 2 tools." in m.text for m in bot_messages(world, ts)), timeout=WAIT
    )
    ended = world.slack.message(world.channel, prompt.ts)
    assert not has_controls(ended.blocks)
    assert "Approved: add_numbers" in json.dumps(ended.blocks)
    assert "Denied: check_status" in json.dumps(ended.blocks)
    [row] = AuditEvent.objects.filter(action="interaction.decided")
    assert (row.actor_id, row.binding_name) == (defaults.GRACE, world.binding.name)
    assert row.details == {
        "tools": 2, "approved": 1, "denied": 1, "approved_tools": ["add_numbers"], "denied_tools": ["check_status"],
    }  # fmt: skip
    asking, *_, after = [m for m in bot_messages(world, ts) if m.cards]
    assert [card.title for card in asking.cards] == [
        "Approval requested: add_numbers",
        "Approval requested: check_status",
    ]
    # The reply that follows the decision shows how each call ended.
    assert [(card.title, card.status) for card in after.cards] == [
        ("add_numbers", "complete"),
        ("check_status", "error"),
    ]
    everything = json.dumps(
        [list(Interaction.objects.values()), list(AuditEvent.objects.values())], default=str
    )
    assert SECRET not in everything
    assert SECRET not in "".join(world.stack.log_text(name) for name in world.stack.processes)


def test_one_tool_is_approved_with_its_approve_button(make_world, make_a2a_agent):
    agent = make_a2a_agent(text_style="kagent-1.0", extensions=[HITL_EXTENSION])
    agent.on_message(pause_then_finish([ADD]))
    world = approvals_world(make_world, agent)
    ts = world.mention("add")
    prompt = wait_for_prompt(world, ts)
    assert not any(b["type"] == "input" for b in prompt.blocks)
    press(world, prompt.ts, APPROVE_ACTION)
    world.slack.wait_until(
        lambda: any("Ran 1 of 1 tools." in m.text for m in bot_messages(world, ts)), timeout=WAIT
    )
    assert decisions_received(agent.received[1])["approvals"] == [{"id": "adk-add", "approved": True}]


def test_a_tool_allowed_for_the_thread_runs_again_there_without_a_prompt_and_the_audit_says_on_what(
    make_world, make_a2a_agent
):
    agent = make_a2a_agent(text_style="kagent-1.0", extensions=[HITL_EXTENSION])
    agent.on_message(pause_then_finish([ADD]))
    world = approvals_world(make_world, agent, allow_for_thread=True)
    ts = world.mention("add")
    prompt = wait_for_prompt(world, ts)
    actions = [e["action_id"] for b in prompt.blocks if b["type"] == "actions" for e in b["elements"]]
    assert actions == [APPROVE_ACTION, DENY_ACTION, ALLOW_FOR_THREAD_ACTION]

    press(world, prompt.ts, ALLOW_FOR_THREAD_ACTION)
    world.slack.wait_until(lambda: len(agent.received) == 2, timeout=WAIT)
    world.slack.wait_until(
        lambda: not has_controls(world.slack.message(world.channel, prompt.ts).blocks), timeout=WAIT
    )
    assert "Allowed for this thread: add_numbers" in json.dumps(
        world.slack.message(world.channel, prompt.ts).blocks
    )

    world.mention("add again", thread_ts=ts)

    world.slack.wait_until(lambda: len(agent.received) == 4, timeout=WAIT)
    assert decisions_received(agent.received[3])["approvals"] == [{"id": "adk-add", "approved": True}]
    world.slack.wait_until(
        lambda: sum("Ran 1 of 1 tools." in m.text for m in bot_messages(world, ts)) == 2, timeout=WAIT
    )
    prompts = [m.ts for m in bot_messages(world, ts) if "asks for approval" in m.text]
    assert prompts == [prompt.ts]  # the first call's alone: the second ran without one
    assert not any(has_controls(m.blocks) for m in bot_messages(world, ts))
    decision, allowed = AuditEvent.objects.filter(action="interaction.decided").order_by("pk")
    assert (decision.actor_id, decision.details["allowed_for_thread"]) == (defaults.GRACE, True)
    assert allowed.actor_kind == "policy"
    assert allowed.details["allowed_by"][0]["decision"] == decision.pk


def test_a_decision_sent_by_another_app_of_the_workspace_is_refused_privately_and_reaches_nothing(
    make_world, kagent_agent
):
    world = approvals_world(make_world, kagent_agent, env=another_app())
    ts = world.mention("check the service")
    prompt = wait_for_prompt(world, ts)
    through_another_app(world)

    press(world, prompt.ts, APPROVE_ACTION)  # Approve all

    world.slack.wait_until(lambda: world.slack.ephemerals(defaults.GRACE), timeout=WAIT)
    [told] = world.slack.ephemerals(defaults.GRACE)
    assert told.text == ANOTHER_APP
    assert len(kagent_agent.received) == 1
    assert Interaction.objects.get().state == Interaction.State.OPEN
    assert not AuditEvent.objects.filter(action="interaction.decided").exists()


def test_an_incomplete_submit_is_turned_away_privately_and_reaches_nothing(make_world, kagent_agent):
    world = approvals_world(make_world, kagent_agent, progress="steps")
    ts = world.mention("check the service")
    prompt = wait_for_prompt(world, ts)
    press(world, prompt.ts, DECIDE_ACTION, choices={"verdict-0": "approve"})
    world.slack.wait_until(lambda: world.slack.ephemerals(defaults.GRACE), timeout=WAIT)
    [told] = world.slack.ephemerals(defaults.GRACE)
    assert told.text.startswith("Your decision was not sent")
    assert "check_status" in told.text
    assert len(kagent_agent.received) == 1
    assert Interaction.objects.get().state == Interaction.State.OPEN
    assert not AuditEvent.objects.filter(action="interaction.decided").exists()


class TestApproverGroups:
    """Every sentence of the approver check, each with its failure injected into the Slack fake."""

    def world(self, make_world, agent, groups):
        world = approvals_world(make_world, agent, approver_groups=groups)
        world.slack.add_usergroup(APPROVERS, "approvers", [defaults.ADA])
        world.slack.add_usergroup(OPERATORS, "operators", [defaults.GRACE])
        return world

    def test_a_member_of_a_later_group_decides_after_the_earlier_groups_are_read_in_order(
        self, make_world, kagent_agent
    ):
        world = self.world(make_world, kagent_agent, [APPROVERS, OPERATORS])
        prompt = wait_for_prompt(world, world.mention("check the service"))
        press(world, prompt.ts, DENY_ACTION)
        world.slack.wait_until(lambda: len(kagent_agent.received) == 2, timeout=WAIT)
        assert [c.args["usergroup"] for c in world.slack.calls("usergroups.users.list")] == [
            APPROVERS,
            OPERATORS,
        ]

    def test_membership_is_read_on_every_press_never_cached(self, make_world, kagent_agent):
        world = self.world(make_world, kagent_agent, [OPERATORS])
        world.slack.add_user("U0EVE", "Eve Member")
        world.slack.join(world.channel, "U0EVE")
        prompt = wait_for_prompt(world, world.mention("check the service"))
        press(world, prompt.ts, APPROVE_ACTION, user="U0EVE")
        world.slack.wait_until(lambda: world.slack.ephemerals("U0EVE"), timeout=WAIT)
        assert world.slack.ephemerals("U0EVE")[0].text == APPROVAL.refusals[Refusal.NOT_AN_APPROVER]
        world.slack.add_usergroup(OPERATORS, "operators", [defaults.GRACE, "U0EVE"])  # joins the group
        press(world, prompt.ts, APPROVE_ACTION, user="U0EVE")
        world.slack.wait_until(lambda: len(kagent_agent.received) == 2, timeout=WAIT)
        assert world.slack.count("usergroups.users.list") == 2

    def test_a_non_member_of_the_channel_and_a_bot_are_refused_even_in_a_group(
        self, make_world, kagent_agent
    ):
        world = self.world(make_world, kagent_agent, [OPERATORS])
        world.slack.add_user("U0OUT", "Outsider")
        world.slack.add_usergroup(OPERATORS, "operators", [defaults.GRACE, "U0OUT"])
        prompt = wait_for_prompt(world, world.mention("check the service"))
        press(world, prompt.ts, APPROVE_ACTION, user="U0OUT")
        world.slack.wait_until(lambda: world.slack.ephemerals("U0OUT"), timeout=WAIT)
        assert world.slack.ephemerals("U0OUT")[0].text == APPROVAL.refusals[Refusal.NOT_A_MEMBER]
        assert len(kagent_agent.received) == 1

    @pytest.mark.parametrize("error", ["no_such_subteam", "missing_scope", "plan_upgrade_required"])
    def test_a_permanent_group_read_failure_ends_the_press_privately_and_leaves_the_approval_pending(
        self, make_world, kagent_agent, error
    ):
        world = self.world(make_world, kagent_agent, [OPERATORS])
        prompt = wait_for_prompt(world, world.mention("check the service"))
        world.slack.fail("usergroups.users.list", error)
        press(world, prompt.ts, APPROVE_ACTION)
        world.slack.wait_until(lambda: world.slack.ephemerals(defaults.GRACE), timeout=WAIT)
        assert world.slack.ephemerals(defaults.GRACE)[0].text == APPROVAL.refusals[Refusal.GROUPS_UNREADABLE]
        interaction = Interaction.objects.get()
        assert interaction.state == Interaction.State.OPEN
        assert not AuditEvent.objects.filter(action="interaction.decided").exists()
        assert len(kagent_agent.received) == 1
        world.stack.wait_for_log("web", "interaction.approver_group_unreadable", timeout=WAIT)
        [line] = [
            json.loads(line)
            for line in world.stack.log_text("web").splitlines()
            if "interaction.approver_group_unreadable" in line
        ]
        assert (line["level"], line["binding"], line["interaction_id"]) == (
            "ERROR",
            world.binding.name,
            interaction.pk,
        )
        # The approval is still pending: the next press decides.
        press(world, prompt.ts, APPROVE_ACTION)
        world.slack.wait_until(lambda: len(kagent_agent.received) == 2, timeout=WAIT)

    @pytest.mark.parametrize("error", ["ratelimited", "http_503", "timeout"])
    def test_a_transient_group_read_failure_keeps_the_press_and_retries_it(
        self, make_world, kagent_agent, error
    ):
        world = self.world(make_world, kagent_agent, [OPERATORS])
        prompt = wait_for_prompt(world, world.mention("check the service"))
        world.slack.fail("usergroups.users.list", error, times=2)
        press(world, prompt.ts, APPROVE_ACTION)
        world.slack.wait_until(lambda: len(kagent_agent.received) == 2, timeout=WAIT)
        assert world.slack.count("usergroups.users.list") >= 3
        assert AuditEvent.objects.get(action="interaction.decided").actor_id == defaults.GRACE
        # Told once, privately, that the press is being retried; nothing more once it is decided.
        assert [told.text for told in world.slack.ephemerals(defaults.GRACE)] == [KEPT_FOR_RETRY]

    def test_the_first_group_read_error_stops_the_check_though_a_later_group_holds_the_person(
        self, make_world, kagent_agent
    ):
        world = self.world(make_world, kagent_agent, [APPROVERS, OPERATORS])  # Grace is in the second
        prompt = wait_for_prompt(world, world.mention("check the service"))
        world.slack.fail(
            "usergroups.users.list", "no_such_subteam", when=lambda args: args.get("usergroup") == APPROVERS
        )
        press(world, prompt.ts, APPROVE_ACTION)
        world.slack.wait_until(lambda: world.slack.ephemerals(defaults.GRACE), timeout=WAIT)
        assert world.slack.ephemerals(defaults.GRACE)[0].text == APPROVAL.refusals[Refusal.GROUPS_UNREADABLE]
        assert [c.args["usergroup"] for c in world.slack.calls("usergroups.users.list")] == [APPROVERS]
        assert len(kagent_agent.received) == 1

    def test_a_member_found_in_an_earlier_group_decides_though_a_later_group_fails(
        self, make_world, kagent_agent
    ):
        world = self.world(make_world, kagent_agent, [OPERATORS, APPROVERS])  # Grace is in the first
        prompt = wait_for_prompt(world, world.mention("check the service"))
        world.slack.fail(
            "usergroups.users.list",
            "no_such_subteam",
            times=None,
            when=lambda args: args.get("usergroup") == APPROVERS,
        )
        press(world, prompt.ts, APPROVE_ACTION)
        world.slack.wait_until(lambda: len(kagent_agent.received) == 2, timeout=WAIT)
        assert [c.args["usergroup"] for c in world.slack.calls("usergroups.users.list")] == [OPERATORS]


def test_at_the_deadline_every_tool_is_denied_with_the_timeout_reason_and_the_thread_told_once(
    make_world, kagent_agent
):
    world = approvals_world(
        make_world, kagent_agent, interaction_timeout=timedelta(seconds=1), beat=True,
        env={"RECOVERY_INTERVAL_SECONDS": "1"},
    )  # fmt: skip
    ts = world.mention("check the service")
    prompt = wait_for_prompt(world, ts)
    world.slack.wait_until(lambda: len(kagent_agent.received) == 2, timeout=WAIT)
    assert decisions_received(kagent_agent.received[1])["approvals"] == [
        {"id": "adk-add", "approved": False, "rejection_reason": TIMEOUT_DENIAL_REASON},
        {"id": "adk-check", "approved": False, "rejection_reason": TIMEOUT_DENIAL_REASON},
    ]
    world.slack.wait_until(
        lambda: any(m.text == notices.APPROVAL_TIMED_OUT for m in bot_messages(world, ts)), timeout=WAIT
    )
    world.slack.wait_until(
        lambda: TIMED_OUT_LINE in json.dumps(world.slack.message(world.channel, prompt.ts).blocks),
        timeout=WAIT,
    )
    world.slack.wait_until(
        lambda: any("Ran 0 of 2 tools." in m.text for m in bot_messages(world, ts)), timeout=WAIT
    )
    world.stack.wait_for_log("beat", "sweeps.time-out-interactions", count=3, timeout=WAIT)
    assert [m.text for m in bot_messages(world, ts)].count(notices.APPROVAL_TIMED_OUT) == 1
    assert AuditEvent.objects.filter(action="interaction.timed_out").count() == 1
    assert len(kagent_agent.received) == 2
    assert not kagent_agent.calls("CancelTask")


def test_a_request_too_big_for_one_message_is_refused_the_thread_told_and_the_task_cancelled(
    make_world, make_a2a_agent
):
    many = [PendingTool(f"call_{n}", f"tool_{n}", {"n": n}) for n in range(30)]  # over 50 blocks
    agent = make_a2a_agent(text_style="kagent-1.0", extensions=[HITL_EXTENSION])
    agent.on_message(pause_then_finish(many))
    world = approvals_world(make_world, agent)
    ts = world.mention("do everything")
    world.slack.wait_until(
        lambda: any(m.text == notices.APPROVAL_UNUSABLE for m in bot_messages(world, ts)), timeout=WAIT
    )
    world.slack.wait_until(lambda: len(agent.calls("CancelTask")) == 1, timeout=WAIT)
    interaction = Interaction.objects.get()
    assert interaction.state == Interaction.State.CANCELLED
    world.slack.wait_until(lambda: Interaction.objects.get().task_cancelled_at is not None, timeout=WAIT)
    assert not any(has_controls(m.blocks) for m in bot_messages(world, ts))
    world.slack.wait_until(lambda: Turn.objects.get().outcome == Turn.Outcome.QUESTION_UNUSABLE, timeout=WAIT)


class TestAKeptPressSurvivesARestart:
    """A press whose approver groups Slack cannot read for now is kept; the worker that holds its next
    try is stopped (SIGTERM, as Kubernetes stops a pod) or killed (SIGKILL), Slack recovers, and a new
    worker decides it exactly once."""

    # Slack fails the group read until the test clears it; the worker then holds the retry message of
    # the third try, 4 s before it runs, unacknowledged.
    TRIES_BEFORE_THE_RESTART = 3

    def world(self, make_world, agent, **options):
        world = approvals_world(make_world, agent, approver_groups=[OPERATORS], **options)
        world.slack.add_usergroup(OPERATORS, "operators", [defaults.GRACE])
        return world

    def press_while_slack_fails_then_restart(self, world, sig):
        thread_ts = world.mention("check the service")
        prompt = wait_for_prompt(world, thread_ts)
        world.slack.fail("usergroups.users.list", "http_503", times=None)
        press(world, prompt.ts, APPROVE_ACTION)
        wait_for(
            lambda: self.tries_held(world) >= self.TRIES_BEFORE_THE_RESTART,
            "the worker holding a later try of the kept press",
        )
        world.stack.kill("worker", sig)
        world.slack.clear_faults()
        world.stack.start_worker(name="worker2")
        return thread_ts

    @staticmethod
    def tries_held(world) -> int:
        """Retry messages the worker has taken in to run later (Celery logs each with its ETA)."""
        held = 0
        for line in world.stack.log_text("worker").splitlines():
            if not line.startswith("{"):
                continue
            data = json.loads(line).get("data") or {}
            held += (
                data.get("name") == "interactions.tasks.retry_approval_press" and data.get("eta") is not None
            )
        return held

    def assert_decided_once(self, world, agent, thread_ts):
        world.slack.wait_until(
            lambda: any("Ran 2 of 2 tools." in m.text for m in bot_messages(world, thread_ts)), timeout=WAIT
        )
        assert len(agent.received) == 2
        assert [a["approved"] for a in decisions_received(agent.received[1])["approvals"]] == [True, True]
        assert AuditEvent.objects.get(action="interaction.decided").actor_id == defaults.GRACE
        assert not KeptPress.objects.exists()
        assert [told.text for told in world.slack.ephemerals(defaults.GRACE)] == [KEPT_FOR_RETRY]

    def test_a_worker_stopped_with_sigterm_gives_the_try_back_and_the_next_worker_decides_once(
        self, make_world, kagent_agent
    ):
        world = self.world(make_world, kagent_agent)  # no beat: the broker gets the held try back at once
        thread_ts = self.press_while_slack_fails_then_restart(world, signal.SIGTERM)
        world.slack.wait_until(lambda: len(kagent_agent.received) == 2, timeout=WAIT)
        self.assert_decided_once(world, kagent_agent, thread_ts)

    def test_a_worker_killed_with_sigkill_leaves_the_try_to_the_sweep_and_the_next_worker_decides_once(
        self, make_world, kagent_agent
    ):
        world = self.world(make_world, kagent_agent, beat=True, env={"RECOVERY_INTERVAL_SECONDS": "1"})
        thread_ts = self.press_while_slack_fails_then_restart(world, signal.SIGKILL)
        # The broker would give the killed worker's message back after its visibility timeout (an
        # hour); the sweep sends the try again once it is overdue (its backoff and LOST_AFTER).
        world.slack.wait_until(lambda: len(kagent_agent.received) == 2, timeout=RESTART_WAIT)
        self.assert_decided_once(world, kagent_agent, thread_ts)
        swept = world.stack.log_text("beat").count("sweeps.retry-kept-presses")
        world.stack.wait_for_log("beat", "sweeps.retry-kept-presses", count=swept + 3, timeout=WAIT)
        assert len(kagent_agent.received) == 2
        assert AuditEvent.objects.filter(action="interaction.decided").count() == 1


def silent_pause_then_finish(tools):
    """The calls and the pause with no text before them, so the activity card is open when it comes."""
    script = pause_then_finish(tools)
    return lambda received: script(received) if received.is_continuation else kagent.v1.approval_pause(tools)


class TestAPromptThatCannotBePostedNow:
    """The prompt's posting paths: Slack refusing it for good is refused as unusable (the notice, the
    Interaction closed, the task cancelled); a transient failure leaves the approval open and the
    sweep posts the prompt once Slack takes it. Either way the reply ends as the prompt turned out."""

    @pytest.fixture
    def agent(self, make_a2a_agent):
        agent = make_a2a_agent(text_style="kagent-1.0", extensions=[HITL_EXTENSION])
        agent.on_message(silent_pause_then_finish([ADD, CHECK]))
        return agent

    @staticmethod
    def is_the_prompt(args) -> bool:
        return APPROVE_ACTION in str(args)

    @staticmethod
    def activity_card(world, ts):
        [reply] = [m for m in bot_messages(world, ts) if m.cards]
        [card] = reply.cards
        return card.title, card.status

    def test_one_slack_refuses_for_good_is_refused_as_unusable_and_the_task_cancelled(
        self, make_world, agent
    ):
        world = approvals_world(make_world, agent, progress="activity")
        world.slack.fail("chat.postMessage", "invalid_blocks", when=self.is_the_prompt)
        ts = world.mention("check the service")
        world.slack.wait_until(
            lambda: any(m.text == notices.APPROVAL_UNUSABLE for m in bot_messages(world, ts)), timeout=WAIT
        )
        world.slack.wait_until(lambda: len(agent.calls("CancelTask")) == 1, timeout=WAIT)
        world.slack.wait_until(lambda: Interaction.objects.get().task_cancelled_at is not None, timeout=WAIT)
        interaction = Interaction.objects.get()
        assert (interaction.state, interaction.prompt_ts) == (Interaction.State.CANCELLED, "")
        [refused] = AuditEvent.objects.filter(action="interaction.refused")
        assert refused.details == {"reason": "prompt-refused", "tools": 2}
        assert not any(has_controls(m.blocks) for m in bot_messages(world, ts))
        world.slack.wait_until(
            lambda: Turn.objects.get().outcome == Turn.Outcome.QUESTION_UNUSABLE, timeout=WAIT
        )
        assert self.activity_card(world, ts) == (STOPPED, "error")
        assert len(agent.received) == 1

    def test_one_slack_fails_for_now_is_posted_by_the_sweep_and_decided(self, make_world, agent):
        world = approvals_world(
            make_world, agent, progress="activity", beat=True, env={"RECOVERY_INTERVAL_SECONDS": "1"}
        )
        world.slack.fail("chat.postMessage", "http_503", times=None, when=self.is_the_prompt)
        ts = world.mention("check the service")
        world.stack.wait_for_log("worker", "interaction.prompt_deferred", timeout=WAIT)
        world.slack.wait_until(lambda: Turn.objects.get().outcome == Turn.Outcome.ASKED, timeout=WAIT)
        interaction = Interaction.objects.get()
        assert (interaction.state, interaction.prompt_ts) == (Interaction.State.OPEN, "")
        assert self.activity_card(world, ts) == (WAITING_FOR_YOUR_ANSWER, "complete")
        world.slack.clear_faults()  # Slack takes posts again: the sweep posts the prompt

        prompt = wait_for_prompt(world, ts)
        world.slack.wait_until(lambda: Interaction.objects.get().prompt_ts == prompt.ts, timeout=WAIT)
        press(world, prompt.ts, APPROVE_ACTION)
        world.slack.wait_until(
            lambda: any("Ran 2 of 2 tools." in m.text for m in bot_messages(world, ts)), timeout=WAIT
        )
        assert [a["approved"] for a in decisions_received(agent.received[1])["approvals"]] == [True, True]
        assert (
            sum("approval to run" in json.dumps(m.blocks) for m in bot_messages(world, ts)) == 1
        )  # posted once
        assert not agent.calls("CancelTask")
        assert notices.APPROVAL_UNUSABLE not in [m.text for m in bot_messages(world, ts)]

    def test_without_toolapprovals_the_task_is_cancelled_and_the_reply_ends_as_stopped(
        self, make_world, agent
    ):
        world = make_world(
            agent_url=agent.url, dialect="kagent-v1", tool_approvals=False, progress="activity"
        )
        ts = world.mention("check the service")
        world.slack.wait_until(
            lambda: any(m.text == notices.APPROVAL_NOT_ENABLED for m in bot_messages(world, ts)), timeout=WAIT
        )
        world.slack.wait_until(lambda: len(agent.calls("CancelTask")) == 1, timeout=WAIT)
        world.slack.wait_until(
            lambda: Turn.objects.get().outcome == Turn.Outcome.QUESTION_CANCELED, timeout=WAIT
        )
        assert self.activity_card(world, ts) == (STOPPED, "error")


def test_with_deny_reasons_a_denial_asks_why_in_a_modal_and_the_model_reads_the_reason(
    make_world, kagent_agent
):
    world = approvals_world(make_world, kagent_agent, deny_reasons=True)
    ts = world.mention("check the service")
    prompt = wait_for_prompt(world, ts)

    # Deny all opens the modal; closing it decides nothing.
    press(world, prompt.ts, DENY_ACTION)
    modal = world.slack.wait_for_modal(defaults.GRACE)
    assert modal.title == deny_reasons.TITLE
    assert "add_numbers" in json.dumps(modal.blocks)
    assert world.slack.close_modal(defaults.GRACE).status == 200
    assert Interaction.objects.get().state == Interaction.State.OPEN
    assert len(kagent_agent.received) == 1

    # A blank reason is turned away in the modal; a reason (its secret redacted) decides.
    press(world, prompt.ts, DENY_ACTION)
    world.slack.wait_until(lambda: len(world.slack.modals(defaults.GRACE)) == 1)
    world.slack.submit_modal(defaults.GRACE, {deny_reasons.REASON_ACTION: "   "})
    [still_open] = world.slack.modals(defaults.GRACE)
    assert still_open.errors == {deny_reasons.REASON_BLOCK: deny_reasons.REASON_BLANK}
    world.slack.submit_modal(
        defaults.GRACE, {deny_reasons.REASON_ACTION: f"db in maintenance, token={SECRET}"}
    )
    assert world.slack.modals(defaults.GRACE) == []

    world.slack.wait_until(lambda: len(kagent_agent.received) == 2, timeout=WAIT)
    reasons = [a.get("rejection_reason") for a in decisions_received(kagent_agent.received[1])["approvals"]]
    assert reasons == ["db in maintenance, token=[redacted]"] * 2
    [row] = AuditEvent.objects.filter(action="interaction.decided")
    assert row.details["reason"] == "db in maintenance, token=[redacted]"
    assert SECRET not in json.dumps(list(Interaction.objects.values()), default=str)


def test_the_approvers_are_reminded_once_then_one_decides_from_the_command_line(
    make_world, kagent_agent, settings, monkeypatch
):
    """interactions.remindBefore and manage.py interactions (issue 21, points 4 and 5). The sweep is
    driven here (its time brought forward by moving the deadline) and the decision is made by
    ``manage.py interactions decide`` in its own process beside the product's."""
    world = approvals_world(
        make_world, kagent_agent, approver_groups=[APPROVERS], remind_before=timedelta(minutes=10)
    )
    settings.SLACK_API_URL = world.slack.url
    monkeypatch.setenv(world.connection.bot_token_env, defaults.BOT_TOKEN)
    StaffUserFactory(username="ada", permissions=["interactions.decide_interaction"])
    ts = world.mention("check the service")
    prompt = wait_for_prompt(world, ts)
    world.slack.wait_until(lambda: Interaction.objects.get().prompt_ts == prompt.ts, timeout=WAIT)
    interaction = Interaction.objects.get()
    assert sweeps.remind_approvers().counts == {"approvers reminded": 0}  # not its time yet
    Interaction.objects.filter(pk=interaction.pk).update(deadline=timezone.now() + timedelta(minutes=5))
    interaction.refresh_from_db()

    assert sweeps.remind_approvers().counts == {"approvers reminded": 1}
    assert sweeps.remind_approvers().counts == {"approvers reminded": 0}
    reminder = reminders.reminder_text([APPROVERS], defaults.ADA, interaction.deadline)
    assert reminder.startswith(f"<!subteam^{APPROVERS}> the agent's tool request")
    assert [m.text for m in bot_messages(world, ts)].count(reminder) == 1

    listed = StringIO()
    call_command("interactions", "list", "--pending", stdout=listed)
    assert (
        listed.getvalue()
        .splitlines()[1]
        .startswith(
            f"{interaction.pk}\t{world.binding.name}\t{world.channel}/{ts}\tadd_numbers, check_status\t"
        )
    )
    decided = manage(
        world, "interactions", "decide", str(interaction.pk), "--approve", "add_numbers", "--deny", "check_status",
        "--as", "ada",
    )  # fmt: skip
    assert (decided.returncode, decided.stdout) == (
        0,
        f"Interaction {interaction.pk} decided as ada; the agent is sent the decision.\n",
    )

    world.slack.wait_until(lambda: len(kagent_agent.received) == 2, timeout=WAIT)
    assert decisions_received(kagent_agent.received[1])["approvals"] == [
        {"id": "adk-add", "approved": True},
        {"id": "adk-check", "approved": False, "rejection_reason": DENIAL_REASON},
    ]
    world.slack.wait_until(
        lambda: any("Ran 1 of 2 tools." in m.text for m in bot_messages(world, ts)), timeout=WAIT
    )
    world.slack.wait_until(
        lambda: (
            "Decided by ada from the command line"
            in json.dumps(world.slack.message(world.channel, prompt.ts).blocks)
        ),
        timeout=WAIT,
    )
    [row] = AuditEvent.objects.filter(action="interaction.decided")
    assert (row.actor_kind, row.actor_id, row.details["decided_in"]) == ("django-user", "ada", "cli")
    with pytest.raises(CommandError, match="was decided already; this decision was not sent"):
        call_command("interactions", "decide", str(interaction.pk), "--deny-all", "--as", "ada")
    assert sweeps.remind_approvers().counts == {"approvers reminded": 0}
    assert [m.text for m in bot_messages(world, ts)].count(reminder) == 1
