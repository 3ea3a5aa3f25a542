"""What the demo agent does for one message: a list of steps, decided from the text alone. Pure.

- "plan a release": asks two questions with choices and a free-text one (kagent's ``ask_user``);
  the answers come back on the same task and the plan is written from them.
- "restart the api": asks approval for two tools at once; only the approved ones run.
- "scale the api": asks approval for one tool (the demo Binding offers "Allow for this thread" on it:
  allowed so, asked again in the thread, it runs without a prompt).
- a message with the word "fail": the task fails.
- "run the slow report": works for about two minutes, a tool call every ten seconds (a turn to stop
  with the Stop button, or Slack's own stop on a streamed reply).
- "Slack: alert: ..." (an alert thread's first turn): investigates the alert with two tools.
- "summarise this thread": says how many earlier messages of the thread it got and who wrote them
  (a mention under another app's message carries the thread so far: docs/prompt-format.md).
- a message with a text file attached (a log, say): reads it and tells how many lines it has and
  which of them say ERROR (the file came as a file part: docs/manifests.md "Files").
- "draw a chart": answers with a bar chart, a PNG file, which Agent Kourier uploads into the thread.
- anything else: a streamed answer with two tool calls, which says what else can be tried.

The ids of a pause are derived from the task's id, so a continuation is checked without any state
kept between requests: every pending id exactly once, as kagent requires, or the task fails.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from .chart import bar_chart

HITL_EXTENSION = "https://kagent.dev/extensions/hitl/v1"
ALERT_PREFIX = "Slack: alert:"
# kagent's denial result starts so (docs/kagent-dialect.md §2); a client shows it as a failed call.
DENIAL_PREFIX = "Tool call was rejected by user."
ASK_USER_TOOL = "ask_user"
ASK_USER_CALL_ID = "call_ask_user"

TRY_NEXT = (
    "Try mentioning me with *plan a release* (a question), *restart the api* (a tool approval), "
    "*scale the api* (one tool, to allow for the thread), "
    "*fail* (a failure), *run the slow report* (a turn to stop), *summarise this thread* in a thread (what I got of it), "
    "*draw a chart* (a file back), attach a log (I read it), or fire the README's trigger example (an alert thread)."
)
# The thread so far a turn carries (sessions/thread_context.py): its intro, and each quoted line's author.
THREAD_INTRO = re.compile(
    r"^The thread so far(?: \((\d+) earlier repl(?:y|ies) left out\))?, quoted", re.MULTILINE
)
QUOTED_AUTHOR = re.compile(r"^\[[^\]]*\] Slack: (app )?(.*?)(?: \(([UWB][A-Z0-9]+)\))?: ", re.MULTILINE)


@dataclass(frozen=True)
class Say:
    text: str


@dataclass(frozen=True)
class CallTool:
    call_id: str
    name: str
    args: Mapping[str, Any]


@dataclass(frozen=True)
class ToolResult:
    call_id: str
    name: str
    response: Mapping[str, Any]


@dataclass(frozen=True)
class AskedQuestion:
    question: str
    choices: Sequence[str] = ()
    multiple: bool = False

    def as_json(self) -> dict[str, Any]:
        return {"question": self.question, "choices": list(self.choices), "multiple": self.multiple}


@dataclass(frozen=True)
class AskUser:
    """kagent's ``ask_user`` pause: its call, its pending result, then ``ask_user_request``."""

    request_id: str
    questions: Sequence[AskedQuestion]


@dataclass(frozen=True)
class PendingTool:
    approval_id: str
    call_id: str
    name: str
    args: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class AskApproval:
    """kagent's tool approval pause: the calls, their placeholder results, ``tool_approval_request``."""

    tools: Sequence[PendingTool]


@dataclass(frozen=True)
class Fail:
    text: str


@dataclass(frozen=True)
class Wait:
    """The agent works on for a while, sending nothing."""

    seconds: float


@dataclass(frozen=True)
class SendFile:
    """A file the agent returns: an artifact of its own with one file part."""

    filename: str
    media_type: str
    content: bytes


@dataclass(frozen=True)
class SharedFile:
    """A file the message carried (a file part)."""

    filename: str
    media_type: str
    content: bytes


Step: TypeAlias = Say | CallTool | ToolResult | AskUser | AskApproval | Fail | Wait | SendFile

CHART_VALUES = (3, 7, 4, 9, 6, 11, 8)

# The slow report: this many parts, each a tool call that takes this long.
SLOW_PARTS = 12
SLOW_PART_SECONDS = 10.0

RELEASE_QUESTIONS = (
    AskedQuestion("Which version should the release be?", ("2.4.0", "3.0.0")),
    AskedQuestion("What goes into it?", ("Bug fixes", "The new dashboard", "Docs"), multiple=True),
    AskedQuestion("Anything the release notes must say?"),
)


def restart_tools(task_id: str) -> tuple[PendingTool, ...]:
    return (
        PendingTool(
            f"approve-restart-{task_id}",
            "call_restart",
            "restart_deployment",
            {"deployment": "api", "namespace": "production"},
        ),
        PendingTool(f"approve-flush-{task_id}", "call_flush", "flush_cache", {"service": "api"}),
    )


def scale_tools(task_id: str) -> tuple[PendingTool, ...]:
    return (
        PendingTool(
            f"approve-scale-{task_id}",
            "call_scale",
            "scale_deployment",
            {"deployment": "api", "replicas": 3},
        ),
    )


def ask_request_id(task_id: str) -> str:
    return f"ask-{task_id}"


def first_turn(text: str, task_id: str, files: Sequence[SharedFile] = ()) -> list[Step]:
    """The steps for a message that starts a task."""
    if text.startswith(ALERT_PREFIX):
        return investigate(text)
    said = person_text(text).lower()
    texts = [shared for shared in files if shared.media_type.startswith("text/")]
    if texts:
        return read_files(texts)
    if "draw a chart" in said:
        return [
            Say("Here is the week's error count as a chart. "),
            CallTool("call_chart", "render_chart", {"series": "errors", "days": len(CHART_VALUES)}),
            ToolResult("call_chart", "render_chart", {"format": "png"}),
            SendFile("errors-this-week.png", "image/png", bar_chart(CHART_VALUES)),
            Say("The peak was on day 6 (11 errors)."),
        ]
    if "plan a release" in said:
        return [
            Say("Happy to plan it. A few questions first."),
            AskUser(ask_request_id(task_id), RELEASE_QUESTIONS),
        ]
    if "restart the api" in said:
        return [
            Say("I will restart the api's deployment and flush its cache. "),
            AskApproval(restart_tools(task_id)),
        ]
    if "scale the api" in said:
        return [Say("I will scale the api to three replicas. "), AskApproval(scale_tools(task_id))]
    if re.search(r"\bsummari[sz]e (?:this|the) thread\b", said):
        return summarise_thread(text)
    if "run the slow report" in said:
        return slow_report()
    if re.search(r"\bfail\b", said):
        return [Say("Trying, as you asked… "), Fail("The demo agent failed on purpose.")]
    return answer(said)


def read_files(files: Sequence[SharedFile]) -> list[Step]:
    """What a shared text file says: its lines, and the ones that say ERROR (at most three shown)."""
    said = []
    for shared in files:
        lines = shared.content.decode("utf-8", errors="replace").splitlines()
        errors = [line.strip() for line in lines if "ERROR" in line]
        shown = "; ".join(f"`{line[:80]}`" for line in errors[:3])
        verb = "says" if len(errors) == 1 else "say"
        found = f"{len(errors)} {verb} ERROR: {shown}" if errors else "none says ERROR"
        said.append(f"*{shared.filename}* has {len(lines)} lines; {found}.")
    return [Say("I read the file you shared. "), Say(" ".join(said))]


def slow_report() -> list[Step]:
    """A turn that takes about two minutes: one slow tool call after another, then the report."""
    steps: list[Step] = [Say("Building the slow report, part by part. Press Stop if you do not need it. ")]
    for part in range(1, SLOW_PARTS + 1):
        call_id = f"call_part_{part}"
        steps += [
            CallTool(call_id, "build_report_part", {"part": part, "of": SLOW_PARTS}),
            Wait(SLOW_PART_SECONDS),
            ToolResult(call_id, "build_report_part", {"rows": 100 * part}),
        ]
    return [*steps, Say(f"The slow report is ready: {SLOW_PARTS} parts. " + TRY_NEXT)]


def person_text(text: str) -> str:
    """What the person wrote, without the ``Slack: Name (ID): `` prefix (docs/prompt-format.md) and
    without the blocks after it (the thread so far, earlier replies), which others wrote."""
    match = re.match(r"Slack: [^\n]*?\((?:U|W)[A-Z0-9]+\): ", text) or re.match(
        r"Slack: [UW][A-Z0-9]+: ", text
    )
    own = text[match.end() :] if match else text
    return re.split(r"\n\n(?=The thread so far|Earlier replies in this thread|The earlier messages of)", own)[
        0
    ]


def summarise_thread(text: str) -> list[Step]:
    """What the turn carried of the thread so far: how many messages, and who wrote them."""
    intro = THREAD_INTRO.search(text)
    if intro is None:
        return [
            Say(
                "I got no earlier messages of this thread: mention me in a thread under someone else's "
                "message (another app's alert, say) and I get the thread so far."
            )
        ]
    authors = [
        f"{name or ident} (app)" if app else (name or ident)
        for app, name, ident in QUOTED_AUTHOR.findall(text[intro.end() :])
    ]
    left_out = f", and {intro.group(1)} older ones were left out" if intro.group(1) else ""
    writers = ", ".join(dict.fromkeys(authors))
    return [
        Say(
            f"I got {len(authors)} earlier messages of this thread{left_out}. They were written by {writers}."
        )
    ]


def answer(said: str) -> list[Step]:
    topic = said.strip()[:80] or "your question"
    return [
        Say("Let me look that up. "),
        CallTool("call_search", "search_docs", {"query": topic}),
        ToolResult("call_search", "search_docs", {"hits": 3}),
        CallTool("call_status", "check_status", {"service": "api"}),
        ToolResult("call_status", "check_status", {"status": "healthy"}),
        Say(
            "I searched the docs (3 hits) and checked the api: it is healthy. "
            "I am the demo agent, scripted, with no model behind me. " + TRY_NEXT
        ),
    ]


def investigate(text: str) -> list[Step]:
    name = _alert_field(text, "name") or "the alert"
    return [
        Say(f"Investigating *{name}*. "),
        CallTool("call_metrics", "query_metrics", {"alert": name, "window": "1h"}),
        ToolResult("call_metrics", "query_metrics", {"series": 2, "trend": "rising"}),
        CallTool("call_logs", "search_logs", {"alert": name, "level": "error"}),
        ToolResult("call_logs", "search_logs", {"lines": 14}),
        Say(
            f"*{name}*: the metric has been rising for the last hour and the logs hold 14 errors "
            "around its start. Likely cause: the last deployment. Reply here to ask me more."
        ),
    ]


def _alert_field(text: str, name: str) -> str | None:
    """A field of the alert's details (alerts/messages.py ``first_turn_text``: ``name: value`` lines)."""
    match = re.search(rf"^{re.escape(name)}: (.+)$", text, flags=re.MULTILINE)
    return match.group(1).strip() if match else None


class BadContinuation(ValueError):
    """A continuation the paused task cannot take; its text is the task's failure message."""


def continuation(response: Mapping[str, Any] | None, task_id: str) -> list[Step]:
    """The steps for a message to a paused task: the hitl/v1 response in its metadata."""
    kind = (response or {}).get("type")
    if kind == "ask_user_response":
        return _release_plan(response or {}, task_id)
    if kind == "tool_approval_response":
        return _restart(response or {}, task_id)
    raise BadContinuation("The demo agent waits for an answer through the prompt's controls.")


def _release_plan(response: Mapping[str, Any], task_id: str) -> list[Step]:
    if response.get("id") != ask_request_id(task_id):
        raise BadContinuation("The answer names a question this task did not ask.")
    answers = response.get("answers")
    if not isinstance(answers, list) or len(answers) != len(RELEASE_QUESTIONS):
        raise BadContinuation(f"The answer needs {len(RELEASE_QUESTIONS)} answers.")
    picked = [
        [str(value) for value in item.get("answer", [])] if isinstance(item, dict) else [] for item in answers
    ]
    version = ", ".join(picked[0]) or "the next version"
    contents = ", ".join(picked[1]) or "nothing chosen yet"
    notes = " ".join(picked[2]).strip()
    plan = f"Release plan for {version}: {contents}. Freeze tomorrow, release on Thursday."
    if notes:
        plan += f" The notes will say: {notes}"
    return [ToolResult(ASK_USER_CALL_ID, ASK_USER_TOOL, {"answers": answers}), Say(plan)]


def _restart(response: Mapping[str, Any], task_id: str) -> list[Step]:
    """The decisions on the restart's tools, or the scale's: whichever pause the task made."""
    approvals = response.get("approvals")
    first = approvals[0] if isinstance(approvals, list) and approvals else {}
    scaling = isinstance(first, dict) and first.get("id") == f"approve-scale-{task_id}"
    tools = scale_tools(task_id) if scaling else restart_tools(task_id)
    decided: dict[str, Mapping[str, Any]] = {}
    for approval in approvals if isinstance(approvals, list) else []:
        if not isinstance(approval, dict) or approval.get("id") in decided:
            raise BadContinuation("Each pending tool needs exactly one decision.")
        decided[str(approval.get("id"))] = approval
    if set(decided) != {tool.approval_id for tool in tools}:
        raise BadContinuation("Each pending tool needs exactly one decision.")

    steps: list[Step] = []
    ran, skipped = [], []
    for tool in tools:
        approval = decided[tool.approval_id]
        if approval.get("approved") is True:
            ran.append(tool.name)
            steps.append(ToolResult(tool.call_id, tool.name, {"status": "done"}))
        else:
            skipped.append(tool.name)
            reason = str(approval.get("rejection_reason") or "")
            denial = DENIAL_PREFIX + (f" Reason: {reason}" if reason else "")
            steps.append(ToolResult(tool.call_id, tool.name, {"result": denial}))
    summary = f"Ran {', '.join(ran) or 'nothing'}"
    if skipped:
        summary += f"; did not run {', '.join(skipped)}, since it was denied"
    steps.append(Say(summary + "."))
    return steps
