"""No secret of the redaction corpus leaves the agent's tool arguments: a kagent 1.0 agent (the
scripted fake) calls a tool and asks approval for three more, their arguments holding every value of
the corpus (in lists, nested objects and running text); a person approves, the task ends. Then
nothing the product wrote holds a run of any of those secrets: not a request to Slack, not a column
of any table, not an audit row, not a log line of its processes."""

import json

import pytest
from django.db import connection

from audit.models import AuditEvent
from interactions.approval_prompts import APPROVE_ACTION
from interactions.models import Interaction
from kourier.redaction import REDACTED
from tests.e2e.helpers import (
    WAIT,
    approvals_world,
    bot_messages,
    decisions_received,
    press,
    wait_for_prompt,
    wait_for_turns_to_end,
)
from tests.fakes.a2a_agent import HITL_EXTENSION, ReceivedMessage, kagent
from tests.fakes.a2a_agent.kagent import PendingTool
from tests.fakes.a2a_agent.steps import Step, text, tool_call, tool_result
from tests.support.secret_corpus import CORPUS, leaked

pytestmark = pytest.mark.slow

VALUES = list(CORPUS.values())
# Argument names that name no secret, so that only the values' shapes can give them away.
TOOLS = [
    PendingTool("call_store", "store_values", {"values": VALUES}, approval_id="adk-store"),
    PendingTool(
        "call_configure",
        "configure",
        {"layers": [{"settings": {f"v{n}": value}} for n, value in enumerate(VALUES)]},
        approval_id="adk-configure",
    ),
    PendingTool(
        "call_run",
        "run_command",
        {"script": "\n".join(f"echo 'using {value}' >> notes.txt" for value in VALUES)},
        approval_id="adk-run",
    ),
]


def look_then_ask(received: ReceivedMessage) -> list[Step]:
    if received.is_continuation:
        approved = {a["id"] for a in decisions_received(received)["approvals"] if a["approved"]}
        results = [tool_result(tool.call_id, tool.name, {"result": "ok"}) for tool in TOOLS]
        return [*results, text(f"Ran {len(approved)} of {len(TOOLS)} tools.")]
    return [
        tool_call("call_look", "look_up", {"found": VALUES[::2], "note": f"saw {VALUES[1]} there"}),
        tool_result("call_look", "look_up", {"count": len(VALUES)}),
        text("I need to run some tools."),
        *kagent.v1.approval_pause(TOOLS),
    ]


def every_request_slack_received(world) -> str:
    calls = [[call.method, call.args, call.response] for call in world.slack.calls()]
    return json.dumps(calls, ensure_ascii=False, default=str)


def every_table() -> str:
    rows: list[str] = []
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names(cursor):
            cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")
            rows.extend(f"{table}: {row}" for row in cursor.fetchall())
    return "\n".join(rows)


def every_log_line(world) -> str:
    return "".join(path.read_text(errors="replace") for path in sorted(world.stack.logs.glob("*.log")))


def test_no_secret_of_the_corpus_reaches_slack_the_database_the_audit_or_the_logs(make_world, make_a2a_agent):
    agent = make_a2a_agent(text_style="kagent-1.0", extensions=[HITL_EXTENSION])
    agent.on_message(look_then_ask)
    world = approvals_world(make_world, agent, progress="steps")
    ts = world.mention("tidy the settings")
    prompt = wait_for_prompt(world, ts)
    press(world, prompt.ts, APPROVE_ACTION)  # Approve all
    world.slack.wait_until(
        lambda: any("Ran 3 of 3 tools." in m.text for m in bot_messages(world, ts)), timeout=WAIT
    )
    wait_for_turns_to_end(world, 2)
    world.slack.wait_until(lambda: Interaction.objects.get().closed_at is not None, timeout=WAIT)

    slack = every_request_slack_received(world)
    audit = json.dumps(list(AuditEvent.objects.values()), default=str)
    logs = every_log_line(world)
    assert leaked(slack) == []
    assert leaked(every_table()) == []
    assert leaked(audit) == []
    assert leaked(logs) == []
    # Nor for want of looking: the arguments reached the product, and were shown and stored redacted.
    assert json.dumps(Interaction.objects.get().pause).count(REDACTED) >= 3 * len(VALUES)
    assert "store_values" in json.dumps(prompt.blocks)
    assert "chat.postMessage" in slack
    assert AuditEvent.objects.filter(action="interaction.decided").exists()
    assert "interaction.decided" in logs
