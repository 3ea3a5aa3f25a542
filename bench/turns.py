"""Turns benchmark: N people mention the bot at once, in N threads, and every answer streams back.

    .venv/bin/python bench/turns.py --sessions 10          # and 100, 1000
    .venv/bin/python bench/turns.py --sessions 1000 --pace 15 --workers 2 --timeout 900
    .venv/bin/python bench/turns.py --sessions 100 --sessions-per-workspace 100 \
        --channels-per-workspace 10 --control-threads 5          # one workspace's burst (issue 31)
    .venv/bin/python bench/turns.py --sessions 100 --traces   # the same, traces exported (OTLP/HTTP)
    .venv/bin/python bench/turns.py --sessions 100 --word-by-word   # the answer streamed a word at a time
    .venv/bin/python bench/turns.py --sessions 20 --file-bytes 5000000 --file-type image/png
                                        # each mention shares a 5 MB file (issue 30, point 6)

Starts on 127.0.0.1:
- the Slack fake (simulator) in this process, with its rate limits on and as Slack's (scaled only
  by --rate-limit-multiplier, which the report then states), one workspace per
  --sessions-per-workspace threads spread over --channels-per-workspace channels (each workspace is
  one Slack app installation: one Connection and one Binding, applied with `manage.py apply`), plus
  a warm-up workspace, and with --control-threads K a control workspace of K threads mentioned in
  the middle of the burst, whose latencies are reported apart (another workspace's burst should not
  slow them);
- the scripted A2A agent (bench/scripted_agent.py) in a process of its own: a few seconds per turn
  of text chunks, a tool call and its result, more text;
- Redis (REDIS_URL, else a private valkey-server), a database (DATABASE_URL, else SQLite in a
  temporary directory, or a throwaway PostgreSQL cluster with --database postgres);
- the product as tests/support/stack.py runs it: Daphne, --workers Celery worker processes with
  --pool and --concurrency, and Celery beat.

One warm-up turn runs first; CPU and memory are measured from there. Then N people each mention
the bot in a new thread of their workspace's channel, from --senders threads at once (the fake
delivers the app_mention and message events to Daphne, signed; an event not acked within 3 s is
retried as Slack does, at once and after 1 and 5 minutes), and the benchmark waits until every
turn has ended or --timeout passes (then it reports what it has).

Two costs of the fake that Slack does not put on the host are taken away (lighten_the_slack_fake);
the scripted agent runs in its own process so it does not share a GIL with the fake.

--naive runs the product as a stream-only bridge without the shared call budgets
(SLACK_CALL_BUDGETS=false: every reply streams, and a call waits only for a 429's Retry-After): the
baseline the budgets are measured against. A product that does not know the setting ignores it.

Reported: turns completed per second, turn durations, the time from each mention to its final
answer (the last Slack write to the answer's message; p50 / p99 / max, and the warm-up turn's as the
unloaded time), the share of Slack calls refused (429), Slack calls per turn by method (and 429s),
each workspace's busiest minute against Slack's budget, CPU seconds and peak memory of the worker
processes per turn, the latency from the agent emitting a text chunk to the first Slack write that
shows it, and whether any thread lost its answer or got it twice.

Pools (--pool): Celery's. The product runs every turn of a worker process on one event loop
(sessions/turn_loop.py); the pool's threads only hand sessions to it, so --concurrency is not the
number of turns a process runs at once (WORKER_MAX_SESSIONS is).
"""

from __future__ import annotations

import argparse
import bisect
import collections
import functools
import http.server
import json
import math
import os
import subprocess
import sys
import threading
import time
import types
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

import httpx

from bench import call_counting, profiling, support
from bench.scripted_agent import MARKER, is_the_answer
from simulator import delivery as slack_delivery
from simulator.delivery import Delivery
from simulator.fake import SlackFake
from simulator.pipeline import RecordedCall

WARM_UP_THREAD = 0
POLL_SECONDS = 1.0
SAMPLE_SECONDS = 0.25
SETTLE_SECONDS = 3.0  # after the last turn ends: its reaction removal and last echoes
WRITE_METHODS = (
    "chat.startStream",
    "chat.appendStream",
    "chat.stopStream",
    "chat.update",
    "chat.postMessage",
)


# --- the Slack world ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Workspace:
    """One Slack workspace with the app installed; for the product, one Connection and one Binding."""

    index: int
    channels: int = 1

    @property
    def team_id(self) -> str:
        return f"T{self.index:05d}"

    @property
    def bot_user_id(self) -> str:
        return f"UBOT{self.index:05d}"

    @property
    def bot_token(self) -> str:
        return f"xoxb-bench-{self.index:05d}"

    @property
    def signing_secret(self) -> str:
        return f"bench-signing-secret-{self.index:05d}"

    @property
    def channel(self) -> str:
        return f"CBENCH{self.index:05d}"

    @property
    def channel_ids(self) -> list[str]:
        """The workspace's channels: the first is ``channel``, as before there were more."""
        return [self.channel] + [f"{self.channel}X{n:02d}" for n in range(1, self.channels)]

    @property
    def name(self) -> str:
        return f"ws{self.index:05d}"

    @property
    def token_env(self) -> str:
        return f"BENCH_{self.index:05d}_BOT_TOKEN"

    @property
    def secret_env(self) -> str:
        return f"BENCH_{self.index:05d}_SIGNING_SECRET"


@dataclass
class Thread:
    number: int
    workspace: Workspace
    channel: str = ""  # the workspace's first channel unless set
    control: bool = False  # a thread of the control workspace
    root_ts: str = ""
    mentioned_at: float = 0.0  # epoch seconds, when the person's message was posted

    def __post_init__(self) -> None:
        self.channel = self.channel or self.workspace.channel

    @property
    def person(self) -> str:
        return f"UP{self.number:06d}"


def build_world(
    slack: SlackFake, sessions: int, per_workspace: int, *, channels: int = 1, control: int = 0
) -> tuple[list[Workspace], list[Thread]]:
    """Workspace 0 and thread 0 are the warm-up's; threads 1..N are spread over the next workspaces,
    each workspace's over its ``channels`` channels in turn; with ``control`` threads, one more
    workspace (one channel) holds them, numbered N+1 on."""
    count = math.ceil(sessions / per_workspace)
    workspaces = [Workspace(0)] + [Workspace(index, channels) for index in range(1, count + 1)]
    threads = [Thread(WARM_UP_THREAD, workspaces[0])]
    for n in range(1, sessions + 1):
        workspace = workspaces[1 + (n - 1) // per_workspace]
        place = (n - 1) % per_workspace
        threads.append(Thread(n, workspace, workspace.channel_ids[place % channels]))
    if control:
        workspaces.append(Workspace(count + 1))
        threads += [
            Thread(n, workspaces[-1], control=True) for n in range(sessions + 1, sessions + control + 1)
        ]
    for workspace in workspaces:
        slack.add_workspace(
            workspace.team_id,
            bot_user_id=workspace.bot_user_id,
            bot_token=workspace.bot_token,
            app_name=f"kourier{workspace.index}",
        )
    for thread in threads:
        slack.add_user(thread.person, f"Person {thread.number}", team=thread.workspace.team_id)
    for workspace in workspaces:
        for number, channel in enumerate(workspace.channel_ids):
            members = [t.person for t in threads if t.channel == channel]
            slack.add_channel(
                channel, f"agents-{workspace.index}-{number}", team=workspace.team_id, members=members
            )
    return workspaces, threads


def manifest(workspaces: list[Workspace], agent_url: str) -> str:
    documents = []
    for workspace in workspaces:
        documents.append(
            f"""\
apiVersion: kourier/v1
kind: Connection
metadata: {{name: {workspace.name}}}
spec:
  botToken: {{fromEnv: {workspace.token_env}}}
  signingSecret: {{fromEnv: {workspace.secret_env}}}
---
apiVersion: kourier/v1
kind: Binding
metadata: {{name: {workspace.name}}}
spec:
  connection: {workspace.name}
  channels: [{", ".join(workspace.channel_ids)}]
  agent: {{url: "{agent_url}/"}}
"""
        )
    return "---\n".join(documents)


# --- processes -----------------------------------------------------------------------------------


def start_agent(workdir: Path, pace: float, word_by_word: bool = False) -> tuple[subprocess.Popen, str, Path]:
    stamps = workdir / "agent-stamps.json"
    log = open(workdir / "agent.log", "ab")  # noqa: SIM115  (closed when the process ends)
    agent = subprocess.Popen(
        [support.PYTHON, str(support.REPO_ROOT / "bench" / "scripted_agent.py"), "--stamps", str(stamps),
         "--pace", str(pace), *(["--word-by-word"] if word_by_word else [])],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True, cwd=support.REPO_ROOT,
    )  # fmt: skip
    assert agent.stdout is not None
    line = agent.stdout.readline()
    if not line.startswith("listening on "):
        raise RuntimeError(
            f"the scripted agent did not start: {line!r}\n{(workdir / 'agent.log').read_text()}"
        )
    return agent, line.split()[-1], stamps


def stop_agent(agent: subprocess.Popen, stamps: Path) -> dict:
    assert agent.stdin is not None
    agent.stdin.close()
    try:
        agent.wait(timeout=30)
    except subprocess.TimeoutExpired:
        agent.kill()
        return {"stamps": {}, "received": {}, "errors": -1}
    return json.loads(stamps.read_text())


def worker_command(args: argparse.Namespace, queue: str, index: int) -> list[str]:
    celery = [str(Path(call_counting.__file__))] if args.count_calls else ["-m", "celery"]
    return [
        support.PYTHON, *celery, "-A", "kourier", "worker", "--pool", args.pool,
        "--concurrency", str(args.concurrency),
        "-Q", queue, "-n", f"bench{index}@%h", "--without-gossip", "--without-mingle", "--loglevel", "INFO",
    ]  # fmt: skip


def counted_worker_env(workdir: Path) -> dict[str, str]:
    """Where a counted worker writes its counts, and its spans held until the stop sends them whole."""
    return {
        call_counting.COUNTS_FILE_VARIABLE: str(workdir / "call-counts"),
        "OTEL_BSP_SCHEDULE_DELAY": call_counting.BATCH_SCHEDULE_MS,
    }


def signal_workers(processes: support.Processes, signum: int) -> None:
    for pid in processes.pids("worker"):
        os.kill(pid, signum)


def stop_counting(processes: support.Processes, workdir: Path) -> collections.Counter[str]:
    """Stops the workers' call counters (--count-calls) and adds up what each wrote."""
    signal_workers(processes, call_counting.STOP_SIGNAL)
    counts_file = workdir / "call-counts"
    expected = {counts_file.with_name(f"{counts_file.name}.{pid}") for pid in processes.pids("worker")}
    deadline = time.monotonic() + 30
    while not all(path.exists() for path in expected):
        if time.monotonic() > deadline:
            raise RuntimeError("a worker did not write its call counts in 30 s; see the logs (--keep)")
        time.sleep(0.1)
    return call_counting.read_counts(counts_file)


class OtlpSink:
    """Takes the product's OTLP/HTTP exports (kourier/tracing.py) and counts them, without decoding:
    what a collector costs the host stays out of the product's processes, whose CPU is measured."""

    def __init__(self) -> None:
        self.exports = 0
        self.bytes = 0
        sink = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                size = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(size)
                sink.exports += 1
                sink.bytes += size
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> OtlpSink:
        threading.Thread(target=self._server.serve_forever, name="otlp-sink", daemon=True).start()
        return self


def start_product(
    processes: support.Processes, env: dict[str, str], args: argparse.Namespace, workdir: Path
) -> str:
    web_url = processes.start_daphne("web", "kourier.asgi:application", env)
    for index in range(args.workers):
        processes.start(f"worker{index}", worker_command(args, env["CELERY_QUEUE"], index), env)
    processes.start(
        "beat",
        [support.PYTHON, "-m", "celery", "-A", "kourier", "beat", "--loglevel", "INFO",
         "--schedule", str(workdir / "celerybeat-schedule")],
        env,
    )  # fmt: skip
    for index in range(args.workers):
        processes.wait_for_log(f"worker{index}", "ready")
    return web_url


class ResourceSampler(threading.Thread):
    """Samples the worker processes' resident memory, threads and database connections, for their peaks."""

    def __init__(self, processes: support.Processes, workdir: Path) -> None:
        super().__init__(name="resource-sampler", daemon=True)
        self.processes = processes
        self.workdir = workdir
        self.peak_rss_kib = 0
        self.peak_threads = 0
        self.peak_database_connections = 0
        self._done = threading.Event()

    def run(self) -> None:
        while not self._done.wait(SAMPLE_SECONDS):
            pids = self.processes.pids("worker")
            self.peak_rss_kib = max(self.peak_rss_kib, sum(support.memory_kib(pid)[0] for pid in pids))
            self.peak_threads = max(self.peak_threads, sum(support.thread_count(pid) for pid in pids))
            self.peak_database_connections = max(
                self.peak_database_connections, support.database_connections(pids, self.workdir)
            )

    def stop(self) -> None:
        self._done.set()
        self.join()


@dataclass
class Usage:
    """CPU seconds per role and the host's, at one moment."""

    cpu: dict[str, float] = field(default_factory=dict)
    host_cpu: float = 0.0
    at: float = 0.0

    @classmethod
    def now(cls, processes: support.Processes, agent: subprocess.Popen, workdir: Path) -> Usage:
        roles = {role: processes.pids(role) for role in ("worker", "web", "beat")}
        cpu = {role: sum(support.cpu_seconds(pid) for pid in pids) for role, pids in roles.items()}
        cpu["fakes (Slack fake + this process)"] = time.process_time()
        cpu["scripted agent"] = support.cpu_seconds(agent.pid)
        accounted = {pid for pids in roles.values() for pid in pids} | {agent.pid, os.getpid()}
        servers = [pid for pid in support.descendants(os.getpid()) if pid not in accounted]
        servers += support.postgres_pids(workdir)
        cpu["Redis and database servers"] = sum(support.cpu_seconds(pid) for pid in servers)
        return cls(cpu, support.host_cpu_seconds(), time.monotonic())


# --- the run -------------------------------------------------------------------------------------


class SlackRetries:
    """Slack's retries of an event the app did not ack within 3 s: at once, after 1 and 5 minutes
    (docs/slack-platform.md §4.2); the fake records failed deliveries but leaves retrying to its caller."""

    DELAYS = (0.0, 60.0, 300.0)

    def __init__(self, slack: SlackFake) -> None:
        self.slack = slack
        self.sent = 0
        self._outstanding = 0
        self._lock = threading.Lock()
        self._timers: list[threading.Timer] = []

    @property
    def outstanding(self) -> int:
        with self._lock:
            return self._outstanding

    def follow_up(self, delivery: Delivery, attempt: int = 1) -> None:
        if delivery.acked_in_time or attempt > len(self.DELAYS):
            return
        with self._lock:
            self._outstanding += 1
        delay = self.DELAYS[attempt - 1]
        if delay == 0:
            self._retry(delivery, attempt)
        else:
            timer = threading.Timer(delay, self._retry, (delivery, attempt))
            timer.daemon = True
            self._timers.append(timer)
            timer.start()

    def _retry(self, delivery: Delivery, attempt: int) -> None:
        try:
            again = self.slack.redeliver(delivery, retry_num=attempt, reason="http_timeout")
            with self._lock:
                self.sent += 1
            self.follow_up(again, attempt + 1)
        finally:
            with self._lock:
                self._outstanding -= 1

    def cancel(self) -> None:
        for timer in self._timers:
            timer.cancel()


def lighten_the_slack_fake() -> None:
    """Two costs of the Slack fake that real Slack does not put on the host, taken away.

    Its HTTP server keeps socketserver's listen backlog of 5, which drops connections when hundreds
    of turns call Slack at once. And it makes an httpx.Client per event it delivers, which builds a
    TLS context it never uses on http://127.0.0.1: about 20 ms of CPU per event, on the two cores
    the product is measured on. Behaviour is unchanged.
    """
    http.server.ThreadingHTTPServer.request_queue_size = 2048
    shared_tls = httpx.create_ssl_context()
    slack_delivery.httpx = types.SimpleNamespace(  # type: ignore[attr-defined]
        Client=functools.partial(httpx.Client, verify=shared_tls),
        TimeoutException=httpx.TimeoutException,
        TransportError=httpx.TransportError,
    )


def shared_file(size: int, media_type: str) -> tuple[str, bytes, str]:
    """The file every mention shares with --file-bytes: a log's lines, or bytes of an image."""
    if media_type.startswith("text/"):
        line = b"2026-12-05 10:00:01 INFO request served in 12 ms path=/api/orders status=200\n"
        return "bench.log", (line * (size // len(line) + 1))[:size], media_type
    return "bench.png", b"\x89PNG\r\n\x1a\n" + os.urandom(max(size - 8, 0)), media_type


def mention(
    slack: SlackFake, thread: Thread, retries: SlackRetries, file: tuple[str, bytes, str] | None = None
) -> None:
    text = f"<@{thread.workspace.bot_user_id}> bench thread {thread.number}: what broke in the last deploy?"
    thread.mentioned_at = time.time()
    if file is None:
        thread.root_ts = slack.user_says(thread.person, thread.channel, text)
    else:
        thread.root_ts = slack.user_shares_files(thread.person, thread.channel, text, [file])
    for delivery in slack.deliveries(ts=thread.root_ts):
        retries.follow_up(delivery)


def all_turns_ended(expected: int, still_arriving: Callable[[], bool]) -> bool:
    """Every expected turn ended; or, once no event is still on its way, every turn that was stored."""
    from sessions.models import Turn

    stored = Turn.objects.count()
    running = Turn.objects.filter(state__in=[Turn.State.QUEUED, Turn.State.RUNNING]).count()
    return running == 0 and (stored >= expected or not still_arriving())


def wait_for_turns(
    expected: int, deadline: float, still_arriving: Callable[[], bool] = lambda: False
) -> bool:
    while time.monotonic() < deadline:
        if all_turns_ended(expected, still_arriving):
            return True
        time.sleep(POLL_SECONDS)
    return False


# --- the numbers ---------------------------------------------------------------------------------


def written_text(call: RecordedCall) -> str:
    """The text a write put on screen (a stream's chunk, or a post's or update's text)."""
    chunks = call.args.get("chunks") or []
    if isinstance(chunks, str):
        chunks = json.loads(chunks)
    parts = [chunk.get("text", "") for chunk in chunks if isinstance(chunk, dict)]
    return "".join(parts) + str(call.args.get("markdown_text") or call.args.get("text") or "")


def event_to_write_latencies(
    calls: list[RecordedCall], stamps: dict[str, float], threads: set[int]
) -> tuple[list[float], int]:
    """Seconds from the agent emitting each marked chunk of ``threads`` to the first Slack write showing it."""
    first_shown: dict[str, float] = {}
    for call in calls:
        if call.method in WRITE_METHODS and call.ok:
            for found in MARKER.finditer(written_text(call)):
                first_shown.setdefault(found.group(0), call.at)
    counted = {
        m: t for m, t in stamps.items() if (marked := MARKER.match(m)) and int(marked.group(1)) in threads
    }
    latencies = [first_shown[m] - t for m, t in counted.items() if m in first_shown]
    never_shown = sum(1 for m in counted if m not in first_shown)
    return latencies, never_shown


def busiest_minute(calls: list[RecordedCall], slack: SlackFake) -> list[list[object]]:
    """Per method: the most calls one workspace (or channel) made in any budget window, vs the budget."""
    times: dict[tuple[str, str], list[float]] = collections.defaultdict(list)
    for call in calls:
        budget = slack.rate_limits.budget(call.method)
        if budget is None or call.team_id is None:
            continue
        key = call.args.get("channel", "") if budget.per_channel else call.team_id
        times[(call.method, str(key))].append(call.at)
    most: dict[str, int] = collections.Counter()
    for (method, _), moments in times.items():
        budget = slack.rate_limits.budget(method)
        assert budget is not None
        moments.sort()
        in_window = max(
            bisect.bisect_right(moments, start + budget.window - 1e-9) - index
            for index, start in enumerate(moments)
        )
        most[method] = max(most[method], in_window)
    rows: list[list[object]] = []
    for method, count in sorted(most.items()):
        budget = slack.rate_limits.budget(method)
        assert budget is not None
        allowed = max(1, math.floor(budget.calls * slack.rate_limits.multiplier))
        scope = "channel" if budget.per_channel else "workspace"
        rows.append([method, count, f"{allowed} per {budget.window:g} s per {scope}"])
    return rows


def last_writes(calls: list[RecordedCall]) -> dict[tuple[str, str], float]:
    """When each message (channel, ts) was last written by an ok call: its post or stream start (the
    ts in the answer), its appends, stop and updates (the ts in the arguments)."""
    last: dict[tuple[str, str], float] = {}
    for call in calls:
        if call.method not in WRITE_METHODS or not call.ok:
            continue
        ts = (
            (call.response or {}).get("ts")
            if call.method in ("chat.postMessage", "chat.startStream")
            else None
        )
        ts = ts or call.args.get("ts")
        channel = (call.response or {}).get("channel") or call.args.get("channel")
        if ts and channel:
            key = (str(channel), str(ts))
            last[key] = max(last.get(key, 0.0), call.at)
    return last


def mention_to_final_answer(
    slack: SlackFake, threads: list[Thread], last: dict[tuple[str, str], float]
) -> dict[int, float]:
    """Seconds from each thread's mention to the last write of its one complete answer."""
    seconds: dict[int, float] = {}
    for thread in threads:
        if not thread.root_ts:
            continue
        answers = [
            m
            for m in slack.thread(thread.channel, thread.root_ts)[1:]
            if m.is_bot and not m.streaming and is_the_answer(m.text, thread.number)
        ]
        if len(answers) == 1 and (thread.channel, answers[0].ts) in last:
            seconds[thread.number] = last[(thread.channel, answers[0].ts)] - thread.mentioned_at
    return seconds


def seconds_summary(values: list[float]) -> str:
    if not values:
        return "-"
    return " / ".join(f"{support.percentile(values, f):.1f}" for f in (0.5, 0.99, 1.0))


def check_threads(
    slack: SlackFake, threads: list[Thread], received: dict[str, int]
) -> tuple[dict[str, list[int]], list[str]]:
    """Sorts the threads: one complete answer, none, more than one, a notice, or never mentioned.

    Also returns the bot's replies that are not the expected answer (notices, partial answers).
    """
    from sessions.models import Turn

    states = dict(Turn.objects.values_list("message_ts", "state"))
    found: dict[str, list[int]] = collections.defaultdict(list)
    wrong_replies: list[str] = []
    for thread in threads:
        if not thread.root_ts:
            found["never mentioned (timeout)"].append(thread.number)
            continue
        replies = [m for m in slack.thread(thread.channel, thread.root_ts)[1:] if m.is_bot]
        answers = [m for m in replies if is_the_answer(m.text, thread.number) and not m.streaming]
        if len(answers) == 1 and len(replies) == 1 and received.get(str(thread.number), 0) == 1:
            found["one complete answer"].append(thread.number)
        elif len(answers) > 1 or received.get(str(thread.number), 0) > 1:
            found["duplicated (two answers, or sent to the agent twice)"].append(thread.number)
        elif len(replies) > len(answers):
            found["failure notice or partial answer"].append(thread.number)
            wrong_replies.extend(m.text for m in replies if m not in answers)
        elif states.get(thread.root_ts) in (Turn.State.QUEUED, Turn.State.RUNNING):
            found["still running at the timeout"].append(thread.number)
        elif thread.root_ts not in states:
            found["never stored (no delivery acked in 3 s, Slack's retries included)"].append(thread.number)
        else:
            found["lost (turn ended, no answer)"].append(thread.number)
    return found, wrong_replies


def turn_stages(roots: dict[str, Thread]) -> dict[str, list[float]]:
    """Seconds per stage of each turn: mention to stored (ingress), to started (queue), to ended."""
    from sessions.models import Turn

    stages: dict[str, list[float]] = {"mention to turn stored": [], "stored to started": [], "started to ended": [],
                                      "mention to turn ended": []}  # fmt: skip
    rows = Turn.objects.filter(message_ts__in=list(roots)).values_list(
        "message_ts", "created_at", "started_at", "ended_at"
    )
    for ts, created, started, ended in rows:
        mentioned = roots[ts].mentioned_at
        stages["mention to turn stored"].append(created.timestamp() - mentioned)
        if started:
            stages["stored to started"].append((started - created).total_seconds())
        if started and ended:
            stages["started to ended"].append((ended - started).total_seconds())
        if ended:
            stages["mention to turn ended"].append(ended.timestamp() - mentioned)
    return stages


def peak_running(roots: dict[str, Thread]) -> int:
    """The most turns that were running (started, not ended) at the same moment."""
    from sessions.models import Turn

    changes = []
    for started, ended in Turn.objects.filter(
        message_ts__in=list(roots), started_at__isnull=False
    ).values_list("started_at", "ended_at"):
        changes.append((started.timestamp(), 1))
        changes.append((ended.timestamp() if ended else float("inf"), -1))
    running = peak = 0
    for _, change in sorted(changes):
        running += change
        peak = max(peak, running)
    return peak


def logged_errors(log: Path) -> collections.Counter[str]:
    """The product's ERROR log lines (JSON), each as its message and the exception it ends with."""
    found: collections.Counter[str] = collections.Counter()
    for line in log.read_text(errors="replace").splitlines():
        if '"level": "ERROR"' not in line:
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            found[line[:160]] += 1
            continue
        exception = (entry.get("exc_info") or "").strip().splitlines()[-1:] or [""]
        found[f"{entry.get('message', '')[:80]} {exception[0][:160]}".strip()] += 1
    return found


def milliseconds(values: list[float], fraction: float) -> str:
    return f"{support.percentile(values, fraction) * 1000:.0f}" if values else "-"


@dataclass
class Run:
    """What one run leaves behind for the report."""

    slack: SlackFake
    threads: list[Thread]
    calls: list[RecordedCall]  # the bench workspaces' Slack calls
    all_calls: list[RecordedCall]  # every Slack call, the warm-up's and the control's too
    agent_report: dict
    before: Usage
    after: Usage
    sampler: ResourceSampler
    baseline_rss_kib: int
    finished: bool
    retries_sent: int
    profile: profiling.Sampler | None
    call_counts: collections.Counter[str] | None


def report(args: argparse.Namespace, run: Run) -> str:
    from sessions.models import Turn

    slack, threads, calls, agent_report = run.slack, run.threads, run.calls, run.agent_report
    before, after, sampler, baseline_rss, finished = (
        run.before, run.after, run.sampler, run.baseline_rss_kib, run.finished
    )  # fmt: skip

    bench_threads = [t for t in threads if t.number != WARM_UP_THREAD and not t.control]
    control_threads = [t for t in threads if t.control]
    n = len(bench_threads)
    outcome, wrong_replies = check_threads(slack, bench_threads, agent_report["received"])
    complete = len(outcome.get("one complete answer", []))
    first_mention = min((t.mentioned_at for t in bench_threads if t.mentioned_at), default=float("nan"))
    roots = {t.root_ts: t for t in bench_threads}
    ended = {
        ts: ended_at.timestamp()
        for ts, ended_at in Turn.objects.filter(
            message_ts__in=list(roots), ended_at__isnull=False
        ).values_list("message_ts", "ended_at")
    }
    wall = (max(ended.values()) - first_mention) if ended else float("nan")
    stages = turn_stages(roots)
    latencies, never_shown = event_to_write_latencies(
        calls, agent_report["stamps"], {t.number for t in bench_threads}
    )
    last = last_writes(run.all_calls)
    to_answer = mention_to_final_answer(slack, bench_threads, last)
    warm_up = mention_to_final_answer(slack, threads[:1], last)
    refused = sum(1 for call in calls if call.error == "ratelimited")

    lines = [f"# Turns benchmark: {n} sessions ({support.host_description()})", ""]
    lines.append(f"Command: {' '.join(sys.argv)}")
    lines.append(f"Product code: {support.code_version()}")
    lines.append(
        f"Pool: {args.pool}, concurrency {args.concurrency}, {args.workers} worker process(es); database "
        f"{args.database_label}; {len({t.workspace for t in bench_threads})} workspaces of up to "
        f"{args.sessions_per_workspace} threads; Slack rate limits x{args.rate_limit_multiplier:g}"
        + ("" if args.rate_limit_multiplier == 1 else " (RAISED above Slack's)")
        + f"; agent pace x{args.pace:g}{', word by word' if args.word_by_word else ''}; {args.channels_per_workspace} channel(s) per workspace; "
        + ("NAIVE product (SLACK_CALL_BUDGETS=false)." if args.naive else "product as configured.")
    )
    if args.file_bytes:
        lines.append(
            f"Each mention shared a {args.file_bytes:,}-byte {args.file_type} file; the agent got "
            f"{agent_report.get('file_bytes', 0):,} bytes of files in all."
        )
    lines.append("" if finished else f"\n**Timed out after {args.timeout:g} s: partial results.**")
    lines.append("")
    warm_up_team = threads[0].workspace.team_id
    delivered = [
        d for d in slack.deliveries() if d.event and not d.event.get("bot_id") and d.team_id != warm_up_team
    ]
    ack_latencies = [d.elapsed for d in delivered if d.ok]
    summary = [
        ["turns completed (one complete answer)", f"{complete} of {n}"],
        ["turns completed per second", f"{complete / wall:.2f}" if ended else "-"],
        ["first mention to last turn ended (s)", f"{wall:.1f}"],
        *[[f"{stage} p50 / p99 (s)", f"{support.percentile(values, 0.5):.1f} / {support.percentile(values, 0.99):.1f}"]
          for stage, values in stages.items()],
        ["mention to final answer p50 / p99 / max (s)", seconds_summary(list(to_answer.values()))],
        ["unloaded: the warm-up turn's mention to final answer (s)", seconds_summary(list(warm_up.values()))],
        ["Slack calls refused (429) of all calls", f"{refused} of {len(calls)} "
         f"({100 * refused / max(len(calls), 1):.2f} %)"],
        ["peak turns running at once", peak_running(roots)],
        ["mention events acked p50 / p99 / max (ms)",
         f"{milliseconds(ack_latencies, 0.5)} / {milliseconds(ack_latencies, 0.99)} / {milliseconds(ack_latencies, 1.0)}"],
        ["mention events not acked in 3 s (Slack retries them)",
         f"{sum(1 for d in delivered if not d.acked_in_time and not d.retry_num)} of "
         f"{sum(1 for d in delivered if not d.retry_num)} ({run.retries_sent} retries sent)"],
        ["agent event to Slack write p50 / p90 / p99 / max (ms)",
         " / ".join(milliseconds(latencies, f) for f in (0.5, 0.9, 0.99, 1.0))],
        ["text chunks never shown", never_shown],
    ]  # fmt: skip
    used = {role: seconds - before.cpu.get(role, 0.0) for role, seconds in after.cpu.items()}
    for role, seconds in used.items():
        summary.append([f"CPU s: {role} (per turn)", f"{seconds:.2f} ({seconds / max(complete, 1):.4f})"])
    # The host's speed varies from run to run (every process's CPU for the same work moves together),
    # so runs are compared by the worker's CPU against work that is the same in every run.
    fixed_work = used["scripted agent"] + used["Redis and database servers"]
    summary.append(
        ["worker CPU / the scripted agent's and the servers' CPU (the same work in every run)",
         f"{used['worker'] / fixed_work:.3f}" if fixed_work else "-"]
    )  # fmt: skip
    host = after.host_cpu - before.host_cpu
    measured = sum(after.cpu.values()) - sum(before.cpu.values())
    summary.append(["CPU s: other processes on the host (not this benchmark's)", f"{host - measured:.1f}"])
    summary.append(["host CPU busy", f"{host / (after.at - before.at) / (os.cpu_count() or 1):.0%}"])
    sink = getattr(args, "trace_sink", None)
    summary.append(
        ["traces (--traces)", f"on: {sink.exports} exports, {sink.bytes} bytes" if sink else "off"]
    )
    peak_growth = max(0, sampler.peak_rss_kib - baseline_rss)
    summary += [
        [
            "worker RSS after warm-up / peak (MiB)",
            f"{baseline_rss / 1024:.0f} / {sampler.peak_rss_kib / 1024:.0f}",
        ],
        [
            "peak worker memory growth per turn / per turn running at the peak (KiB)",
            f"{peak_growth / max(n, 1):.0f} / {peak_growth / max(peak_running(roots), 1):.0f}",
        ],
        ["peak worker threads", sampler.peak_threads],
        ["peak database connections of the workers", sampler.peak_database_connections],
    ]
    lines.append(support.markdown_table(["measure", "value"], summary))
    if control_threads:
        control_outcome, _ = check_threads(slack, control_threads, agent_report["received"])
        control_team = control_threads[0].workspace.team_id
        control_calls = [c for c in run.all_calls if c.team_id == control_team]
        control_refused = sum(1 for call in control_calls if call.error == "ratelimited")
        control_times = list(mention_to_final_answer(slack, control_threads, last).values())
        lines += ["", f"Control workspace ({len(control_threads)} threads mentioned during the burst):", ""]
        lines.append(support.markdown_table(["measure", "value"], [
            ["one complete answer", f"{len(control_outcome.get('one complete answer', []))} of {len(control_threads)}"],
            ["mention to final answer p50 / p99 / max (s)", seconds_summary(control_times)],
            ["Slack calls refused (429)", f"{control_refused} of {len(control_calls)}"],
        ]))  # fmt: skip

    lines += ["", "Threads:", ""]
    lines.append(support.markdown_table(
        ["outcome", "threads", "examples"],
        [[name, len(numbers), ", ".join(map(str, numbers[:8]))] for name, numbers in sorted(outcome.items())],
    ))  # fmt: skip
    if wrong_replies:
        common = collections.Counter(text[:200] for text in wrong_replies).most_common(3)
        lines += ["", "Most common replies that are not the answer:"]
        lines += [f"- {count} x {text!r}" for text, count in common]
    states = collections.Counter(
        Turn.objects.filter(message_ts__in=list(roots)).values_list("state", "outcome").iterator()
    )
    lines += [
        "",
        "Turn rows (state, outcome): " + ", ".join(f"{s}/{o or '-'}: {c}" for (s, o), c in states.items()),
    ]

    by_method: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for call in calls:
        by_method[call.method]["ok" if call.ok else ("429" if call.error == "ratelimited" else "error")] += 1
    lines += ["", "Slack calls per turn (the fake's record, warm-up workspace excluded):", ""]
    lines.append(support.markdown_table(
        ["method", "per turn", "ok", "429", "other errors"],
        [[m, f"{sum(c.values()) / max(n, 1):.2f}", c["ok"], c["429"], c["error"]] for m, c in sorted(by_method.items())],
    ))  # fmt: skip
    lines += ["", "Busiest budget window of any one workspace (or channel), against Slack's budget:", ""]
    lines.append(
        support.markdown_table(["method", "most calls in a window", "budget"], busiest_minute(calls, slack))
    )
    if run.profile:
        lines += ["", profile_report(run.profile, used["worker"], complete)]
    if run.call_counts is not None:
        lines += ["", call_counting.report(run.call_counts, complete)]
    return "\n".join(lines)


def profile_report(profile: profiling.Sampler, worker_cpu: float, complete: int) -> str:
    """The worker's profile, and tracing's own work in it: the direct part of what tracing costs a
    turn (docs/performance.md, section g). A sample is 1/SAMPLES_PER_SECOND of a thread holding the
    GIL, and tracing's work is Python's, all of it under the GIL."""
    stacks = profile.stacks()
    tracing_seconds = profiling.tracing_share(stacks) * sum(stacks.values()) / profiling.SAMPLES_PER_SECOND
    return "\n".join([
        f"Tracing's own work (OpenTelemetry's code and kourier/tracing.py, the batch processor's thread "
        f"included): {tracing_seconds:.2f} s, {100 * tracing_seconds / worker_cpu:.1f} % of the worker's "
        f"{worker_cpu:.1f} s of CPU, {1000 * tracing_seconds / max(complete, 1):.2f} ms per turn.",
        "",
        profile.report(),
    ])  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sessions", type=int, default=10, help="threads, each mentioned once at the start")
    parser.add_argument("--pool", choices=["threads", "prefork"], default="threads")
    parser.add_argument("--concurrency", type=int, help="pool size per worker (default: 16 for threads, as "
                        "the README runs it, 2 for prefork)")  # fmt: skip
    parser.add_argument("--workers", type=int, default=1, help="worker processes")
    parser.add_argument("--sessions-per-workspace", type=int, default=10,
                        help="threads per workspace (Slack's budgets are per workspace)")  # fmt: skip
    parser.add_argument("--channels-per-workspace", type=int, default=1,
                        help="channels each workspace's threads are spread over, in turn")  # fmt: skip
    parser.add_argument("--control-threads", type=int, default=0,
                        help="threads of a control workspace, mentioned in the middle of the burst")  # fmt: skip
    parser.add_argument("--naive", action="store_true",
                        help="the product as a stream-only bridge without shared call budgets (the baseline)")  # fmt: skip
    parser.add_argument("--rate-limit-multiplier", type=float, default=1.0, help="scales Slack's budgets")
    parser.add_argument("--pace", type=float, default=1.0, help="scales the agent's pauses")
    parser.add_argument(
        "--word-by-word", action="store_true",
        help="the agent streams each text chunk a word at a time, as a model streams (about 45 text events a turn, not 6)",
    )  # fmt: skip
    parser.add_argument("--senders", type=int, default=50, help="people posting at the same moment")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for the turns")
    parser.add_argument("--database", choices=["sqlite", "postgres"], default="sqlite",
                        help="ignored when DATABASE_URL is set")  # fmt: skip
    parser.add_argument(
        "--pg-max-connections", type=int, default=200, help="of --database postgres (CI: 200)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory and its logs")
    parser.add_argument(
        "--file-bytes", type=int, default=0,
        help="each mention (the warm-up's too) shares a file of this many bytes: a turn's cost with a file",
    )  # fmt: skip
    parser.add_argument("--file-type", default="image/png", help="its media type (text/plain: redacted)")
    parser.add_argument(
        "--profile", action="store_true",
        help="sample the worker processes with py-spy during the burst: where their CPU goes, and how "
        "much of it is tracing's own work (with --traces)",
    )  # fmt: skip
    parser.add_argument(
        "--count-calls", action="store_true",
        help="count the worker's Python calls during the burst, and tracing's own among them "
        "(bench/call_counting.py). The worker runs about ten times slower: its CPU figures are not the "
        "product's, and more than about 40 sessions overrun its turns' timeouts",
    )  # fmt: skip
    parser.add_argument(
        "--traces",
        action="store_true",
        help="the product exports OpenTelemetry traces "
        "(OTLP/HTTP) to a sink in this process: tracing's cost per turn, against a run without",
    )
    args = parser.parse_args()
    if args.concurrency is None:
        args.concurrency = {"threads": 16, "prefork": 2}[args.pool]

    lighten_the_slack_fake()

    with (
        support.work_directory("kourier-bench-turns-", keep=args.keep) as workdir,
        support.redis_server(workdir) as redis_url,
        support.database(workdir, args.database, max_connections=args.pg_max_connections) as database_url,
        SlackFake(rate_limits=True, rate_limit_multiplier=args.rate_limit_multiplier) as slack,
    ):
        args.database_label = database_url.split(":", 1)[0]
        workspaces, threads = build_world(
            slack,
            args.sessions,
            args.sessions_per_workspace,
            channels=args.channels_per_workspace,
            control=args.control_threads,
        )
        agent, agent_url, stamps = start_agent(workdir, args.pace, args.word_by_word)
        processes = support.Processes(workdir)
        args.trace_sink = OtlpSink().start() if args.traces else None
        env = support.product_env(
            database_url=database_url,
            redis_url=redis_url,
            slack_api_url=slack.url,
            extra={
                **{w.token_env: w.bot_token for w in workspaces},
                **{w.secret_env: w.signing_secret for w in workspaces},
                **({"SLACK_CALL_BUDGETS": "false"} if args.naive else {}),
                **({"OTEL_EXPORTER_OTLP_ENDPOINT": args.trace_sink.url} if args.trace_sink else {}),
                **(counted_worker_env(workdir) if args.count_calls else {}),
            },
        )
        try:
            support.prepare_database(env, manifest(workspaces, agent_url), workdir)
            support.use_database_here(env)
            web_url = start_product(processes, env, args, workdir)
            for workspace in workspaces:
                slack.deliver_events_to(
                    f"{web_url}/slack/events/{workspace.name}",
                    workspace.signing_secret,
                    team=workspace.team_id,
                )
            retries = SlackRetries(slack)
            print("warming up ...", file=sys.stderr)
            args.file = shared_file(args.file_bytes, args.file_type) if args.file_bytes else None
            mention(slack, threads[0], retries, args.file)
            if not wait_for_turns(1, time.monotonic() + 60):
                raise RuntimeError("the warm-up turn did not end in 60 s; see the logs (--keep)")
            time.sleep(SETTLE_SECONDS)
            warm_up_team = workspaces[0].team_id

            baseline_rss = sum(support.memory_kib(pid)[0] for pid in processes.pids("worker"))
            sampler = ResourceSampler(processes, workdir)
            sampler.start()
            before = Usage.now(processes, agent, workdir)
            profile = (
                profiling.Sampler(workdir, "the product", processes.pids("worker"), "worker process(es)")
                if args.profile
                else None
            )
            if profile:
                profile.start()
            if args.count_calls:
                signal_workers(processes, call_counting.START_SIGNAL)
            print(f"{args.sessions} people mention the bot ...", file=sys.stderr)
            deadline = time.monotonic() + args.timeout
            burst = [t for t in threads[1:] if not t.control]
            controls = [t for t in threads if t.control]
            in_order = burst[: len(burst) // 2] + controls + burst[len(burst) // 2 :]
            with ThreadPoolExecutor(args.senders, thread_name_prefix="person") as people:
                posts = [people.submit(mention, slack, thread, retries, args.file) for thread in in_order]
            for failed in {repr(post.exception()) for post in posts if post.exception()}:
                print(f"a person could not post: {failed}", file=sys.stderr)
            finished = wait_for_turns(len(threads), deadline, lambda: retries.outstanding > 0)
            retries.cancel()
            if finished:
                time.sleep(SETTLE_SECONDS)
            call_counts = stop_counting(processes, workdir) if args.count_calls else None
            after = Usage.now(processes, agent, workdir)
            if profile:
                profile.pause()
            sampler.stop()
            all_calls = slack.calls()
            control_teams = {t.workspace.team_id for t in threads if t.control}
            calls = [
                c
                for c in all_calls
                if c.team_id and c.team_id != warm_up_team and c.team_id not in control_teams
            ]
        finally:
            processes.stop()
            agent_report = stop_agent(agent, stamps)
        run = Run(
            slack,
            threads,
            calls,
            all_calls,
            agent_report,
            before,
            after,
            sampler,
            baseline_rss,
            finished,
            retries.sent,
            profile,
            call_counts,
        )
        print(report(args, run))
        for name in processes.running:
            errors = logged_errors(workdir / f"{name}.log")
            if errors:
                print(f"\n{sum(errors.values())} ERROR log lines from {name}, most common first:")
                print("\n".join(f"- {count} x {text}" for text, count in errors.most_common(5)))


if __name__ == "__main__":
    main()
