"""What the interactions app's tests share: approval requests as an agent sends them, and an opened prompt."""

from interactions import approvals
from interactions.models import Interaction
from kourier.a2a.events import AnswerFormat, ApprovalRequest, ToolToApprove

PROMPT_TS = "1700000000.000900"


SECRET = "xoxb-" + "1234567890-abcdefghijklmnop"


def tool(name="add_numbers", args=None, n=0):
    return ToolToApprove(
        approval_id=f"adk-{n}", call_id=f"call-{n}", name=name, args=args if args is not None else {"a": n}
    )


def request(*tools, agent=None):
    return ApprovalRequest(
        tools=tools or (tool(),),
        task_id="task-1",
        context_id="ctx-1",
        answer_format=AnswerFormat.HITL_V1,
        agent=agent,
    )


def opened(turn, req=None):
    interaction = approvals.open_approval(
        turn.pk, req or request(tool(args={"token": SECRET, "n": 1}), tool("check_status", n=1))
    )
    Interaction.objects.filter(pk=interaction.pk).update(prompt_ts=PROMPT_TS)
    interaction.refresh_from_db()
    return interaction
