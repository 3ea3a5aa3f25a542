"""What the end-to-end tests share: waiting for the product (bounded, failing with what never came),
reading the thread as people see it, pressing a prompt's buttons, and the worlds they start. The
test modules import from here, never from one another."""

import subprocess
import sys
import time

import pytest

from kourier.a2a.dialects.kagent import DENIAL_REASON
from kourier.slack.outbox import PostKind
from sessions.models import PostIntent, Turn
from simulator import defaults
from tests.fakes.a2a_agent import HITL_EXTENSION, ReceivedMessage, kagent
from tests.fakes.a2a_agent.kagent import PendingTool
from tests.fakes.a2a_agent.steps import Step, text, tool_result
from tests.support.stack import REPO_ROOT

ACK = "hourglass_flowing_sand"
WAIT = 30.0  # a bound to fail on, not a speed: generous for a busy 2-core host


def replies(world, thread_ts):
    """The product's messages in the thread, in order."""
    return [message for message in world.slack.thread(world.channel, thread_ts)[1:] if message.is_bot]


def wait_for_reply_count(world, thread_ts, count, *, done=True):
    def ready():
        found = replies(world, thread_ts)
        return len(found) >= count and (not done or not any(m.streaming for m in found))

    world.slack.wait_until(ready, timeout=WAIT)
    return replies(world, thread_ts)


def poll_until(condition, timeout: float, interval: float = 0.1) -> bool:
    """Re-checks ``condition`` until it holds or ``timeout`` passes. For conditions that read the
    database: the Slack fake's ``wait_until`` holds the fake's lock while it checks, so a database read
    there would hold up every Slack call the product makes meanwhile."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)  # polling a condition, bounded by the deadline
    return True


def wait_for(condition, what: str, *, timeout: float = WAIT) -> None:
    """Waits until ``condition`` (a read of the database) holds; fails saying what never came."""
    if not poll_until(condition, timeout):
        pytest.fail(f"{what}: not within {timeout} s")


def wait_for_turns_to_end(world, count, *, timeout=WAIT):
    """Waits until ``count`` turns have ended and the product is done with each: its failure notice
    posted, its acknowledgment reaction taken off (the last thing a runner does for a turn). Only then
    can a test count what the product did, for nothing more is coming for those turns."""

    def ended():
        return Turn.objects.exclude(state__in=[Turn.State.QUEUED, Turn.State.RUNNING])

    def done():
        return (
            ended().count() >= count
            and not ended().filter(acknowledged=True).exists()
            and not PostIntent.objects.filter(
                turn__in=ended(), kind=PostKind.NOTICE, state=PostIntent.State.INTENDED
            ).exists()
        )

    if not poll_until(done, timeout):
        turns = list(Turn.objects.order_by("message_ts").values_list("message_ts", "state", "acknowledged"))
        owed = list(
            PostIntent.objects.filter(kind=PostKind.NOTICE, state=PostIntent.State.INTENDED).values_list(
                "turn__message_ts", flat=True
            )
        )
        pytest.fail(
            f"{count} turns were not over within {timeout} s; turns (message, state, reaction on): "
            f"{turns}; notices never posted for: {owed}"
        )


def bot_messages(world, thread_ts):
    """Every message of the product in the thread, the root left out."""
    return [m for m in world.slack.thread(world.channel, thread_ts)[1:] if m.is_bot]


def has_controls(blocks) -> bool:
    """Whether a message has a prompt's controls (buttons, or inputs with a Submit)."""
    return any(block.get("type") in ("actions", "input") for block in blocks)


def wait_for_prompt(world, thread_ts, *, timeout: float = WAIT):
    """The thread's prompt (a question's or an approval's), once the product has posted it."""

    def prompt():
        found = [m for m in bot_messages(world, thread_ts) if has_controls(m.blocks)]
        return found[0] if found else None

    world.slack.wait_until(lambda: prompt() is not None, timeout=timeout)
    return prompt()


def press(world, prompt_ts, action, *, user=defaults.GRACE, choices=None):
    """``user`` presses a prompt's button, as Slack delivers it; Slack needs its 200 whatever the press."""
    delivery = world.slack.press_button(user, world.channel, prompt_ts, action, choices=choices or {})
    assert delivery.status == 200
    return delivery


def approvals_world(make_world, agent, **fields):
    """A world whose Binding puts questions and tool approvals to the thread (kagent's dialect)."""
    return make_world(agent_url=agent.url, dialect="kagent-v1", ask_user=True, tool_approvals=True, **fields)


def decisions_received(received: ReceivedMessage) -> dict:
    """The tool decisions a continuation carried to the agent (kagent's HITL extension)."""
    return received.metadata[HITL_EXTENSION]


# The tools an approvals test pauses for (CHECK's token a secret the product must redact), and an
# agent that pauses for them, then runs those approved.
SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"  # a GitHub token's shape
ADD = PendingTool("call_add", "add_numbers", {"a": 2, "b": 3}, approval_id="adk-add")
CHECK = PendingTool("call_check", "check_status", {"service": "db", "token": SECRET}, approval_id="adk-check")


def pause_then_finish(tools):
    def script(received: ReceivedMessage) -> list[Step]:
        if received.is_continuation:
            approvals = decisions_received(received)["approvals"]
            ran = [
                tool
                for tool in tools
                if any(a["id"] == tool.approval_id and a["approved"] for a in approvals)
            ]
            results = [
                tool_result(tool.call_id, tool.name, {"result": "ok"})
                if tool in ran
                else tool_result(
                    tool.call_id,
                    tool.name,
                    {"result": f"Tool call was rejected by user. Reason: {DENIAL_REASON}"},
                )
                for tool in tools
            ]
            return [*results, text(f"Ran {len(ran)} of {len(tools)} tools.")]
        return [text("I need to run some tools."), *kagent.v1.approval_pause(tools)]

    return script


def manage(world, *args: str) -> subprocess.CompletedProcess:
    """Runs ``manage.py ARGS`` as an operator would beside the running product: its own process, the
    product's environment."""
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        env=world.stack.env,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
