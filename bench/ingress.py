"""Ingress benchmark: signed Slack events into the product's web process, beside a bare Bolt app.

    .venv/bin/python bench/ingress.py --rate 200 --seconds 20

Starts on 127.0.0.1:
- the Slack fake, only for the one auth.test each Bolt app makes;
- Redis (REDIS_URL, else a private valkey-server) and a database (DATABASE_URL, else SQLite in a
  temporary directory, or a throwaway PostgreSQL cluster with --database postgres);
- the product's web process (Daphne serving kourier.asgi:application) with one Connection and one
  Binding written by `manage.py apply`. No Celery worker: the product enqueues its tasks in Redis
  after commit and they wait there (they are counted, to check each turn was enqueued once);
- a bare Bolt app that acks and does nothing (bench/bare_bolt_app.py), under Daphne too.

Each target then takes, from this process (asyncio + httpx, keep-alive connections):
1. an open-loop phase per --rate: requests start on a fixed schedule whatever the answers do, and
   each latency is measured from the moment the request was due, so a stall is not hidden by the
   load generator waiting for it;
2. a closed-loop phase: --concurrency clients send back to back, which finds the most events per
   second the target sustains.

The events are what Slack sends for people mentioning the app at the top level of bound channels:
an app_mention and a message event (two event_ids, one message ts) per mention, and for every
--redeliver-every'th mention Slack's retry of the app_mention (same body and event_id,
X-Slack-Retry-Num) a few requests later. With --all-new every event is the app_mention of a new
mention instead: all new work, the worst case (no duplicate to settle cheaply). Afterwards the
product's database must hold exactly one turn per mention it acked, and Redis exactly one
drive_session task per turn.

--rounds N runs the targets' phases N times, interleaved (product, bare Bolt, product, ...), so that
both see the same host; --profile samples each target's web processes with py-spy meanwhile
(`pip install py-spy`) and writes where their time went. The worst case of docs/performance.md:

    .venv/bin/python bench/ingress.py --all-new --database postgres --rate 150 --rounds 3
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

import httpx
from slack_sdk.signature import SignatureVerifier

from bench import profiling, support
from simulator import defaults
from simulator.fake import SlackFake

SLACK_ACK_TIMEOUT = 3.0  # Slack retries an event that is not acked within three seconds
CLIENT_TIMEOUT = 30.0  # long enough to measure how late a late ack is
WARM_UP_SECONDS = 1.0
PRODUCT_TOKEN_ENV = "BENCH_SLACK_BOT_TOKEN"
PRODUCT_SECRET_ENV = "BENCH_SLACK_SIGNING_SECRET"
PERSON = defaults.ADA


# --- the events --------------------------------------------------------------------------------


@dataclass(frozen=True)
class SlackEvent:
    body: bytes
    message_ts: str
    retry_num: int = 0  # above 0: Slack delivering again an event it sent before


def _envelope(event: dict, event_id: str) -> dict:
    """The event_callback body Slack wraps each event in (simulator/events.py has the same)."""
    return {
        "token": "bench-verification-token",
        "team_id": defaults.TEAM_ID,
        "context_team_id": defaults.TEAM_ID,
        "context_enterprise_id": None,
        "api_app_id": defaults.APP_ID,
        "event": event,
        "type": "event_callback",
        "event_id": event_id,
        "event_time": int(time.time()),
        "authorizations": [
            {
                "enterprise_id": None,
                "team_id": defaults.TEAM_ID,
                "user_id": defaults.BOT_USER_ID,
                "is_bot": True,
                "is_enterprise_install": False,
            }
        ],
        "is_ext_shared_channel": False,
    }


def mention_events(channel: str, ts: str, number: int) -> tuple[SlackEvent, SlackEvent]:
    """The app_mention and the message event Slack sends for one person mentioning the app."""
    words = f" benchmark question {number}: how is the build doing?"
    text = f"<@{defaults.BOT_USER_ID}>{words}"
    blocks = [
        {
            "type": "rich_text",
            "block_id": uuid.uuid4().hex[:5],
            "elements": [
                {
                    "type": "rich_text_section",
                    "elements": [
                        {"type": "user", "user_id": defaults.BOT_USER_ID},
                        {"type": "text", "text": words},
                    ],
                }
            ],
        }
    ]
    common = {
        "user": PERSON,
        "text": text,
        "ts": ts,
        "team": defaults.TEAM_ID,
        "channel": channel,
        "event_ts": ts,
        "blocks": blocks,
        "client_msg_id": str(uuid.uuid4()),
    }
    app_mention = _envelope({"type": "app_mention", **common}, f"Ev{uuid.uuid4().hex[:10].upper()}")
    message = _envelope(
        {"type": "message", **common, "channel_type": "channel"}, f"Ev{uuid.uuid4().hex[:10].upper()}"
    )
    return SlackEvent(json.dumps(app_mention).encode(), ts), SlackEvent(json.dumps(message).encode(), ts)


class EventSource:
    """An endless supply of deliveries: two per new mention, and now and then a redelivery."""

    REDELIVERY_DELAY = 7  # requests between an event and Slack's retry of it

    def __init__(self, channels: list[str], redeliver_every: int, *, all_new: bool = False) -> None:
        self.channels = channels
        self.redeliver_every = 0 if all_new else redeliver_every
        self.all_new = all_new  # every event the app_mention of a new mention
        self.mentions: list[str] = []  # the ts of every mention made so far
        self._epoch = int(time.time())
        self._position = 0
        self._ready: collections.deque[SlackEvent] = collections.deque()
        self._retries: collections.deque[tuple[int, SlackEvent]] = collections.deque()

    def __iter__(self) -> Iterator[SlackEvent]:
        return self

    def __next__(self) -> SlackEvent:
        self._position += 1
        if self._retries and self._retries[0][0] <= self._position:
            return self._retries.popleft()[1]
        if not self._ready:
            self._new_mention()
        return self._ready.popleft()

    def _new_mention(self) -> None:
        number = len(self.mentions)
        ts = f"{self._epoch + number // 1_000_000}.{number % 1_000_000:06d}"
        self.mentions.append(ts)
        app_mention, message = mention_events(self.channels[number % len(self.channels)], ts, number)
        self._ready.extend([app_mention] if self.all_new else [app_mention, message])
        if self.redeliver_every and number % self.redeliver_every == self.redeliver_every - 1:
            retry = SlackEvent(app_mention.body, ts, retry_num=1)
            self._retries.append((self._position + self.REDELIVERY_DELAY, retry))


# --- sending and timing ------------------------------------------------------------------------


@dataclass
class Sample:
    due: float  # when the request was meant to start (open loop) or did start (closed loop)
    started: float
    finished: float
    status: int | None
    error: str | None
    message_ts: str

    @property
    def latency(self) -> float:
        return self.finished - self.due

    @property
    def acked(self) -> bool:
        return self.status == 200 and self.latency <= SLACK_ACK_TIMEOUT


@dataclass
class Target:
    name: str
    url: str
    signing_secret: str
    pids: list[int]  # the target's web processes
    source: EventSource
    acked_mentions: set[str] = field(default_factory=set)


async def deliver(client: httpx.AsyncClient, target: Target, event: SlackEvent, due: float) -> Sample:
    started = time.perf_counter()
    timestamp = str(int(time.time()))
    headers = {
        "Content-Type": "application/json",
        "X-Slack-Request-Timestamp": timestamp,
        "X-Slack-Signature": SignatureVerifier(target.signing_secret).generate_signature(
            timestamp=timestamp, body=event.body
        )
        or "",
    }
    if event.retry_num:
        headers |= {"X-Slack-Retry-Num": str(event.retry_num), "X-Slack-Retry-Reason": "http_timeout"}
    status, error = None, None
    try:
        response = await client.post(target.url, content=event.body, headers=headers)
        status = response.status_code
    except httpx.TransportError as exc:  # PoolTimeout: it waited in this client's queue for a connection
        error = type(exc).__name__
    sample = Sample(due, started, time.perf_counter(), status, error, event.message_ts)
    if sample.acked:
        target.acked_mentions.add(event.message_ts)
    return sample


async def open_loop(client: httpx.AsyncClient, target: Target, rate: float, seconds: float) -> list[Sample]:
    count = int(rate * seconds)
    start = time.perf_counter() + 0.1
    pending = []
    for index, event in zip(range(count), target.source, strict=False):
        due = start + index / rate
        delay = due - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        pending.append(asyncio.create_task(deliver(client, target, event, due)))
    return list(await asyncio.gather(*pending))


async def closed_loop(
    client: httpx.AsyncClient, target: Target, concurrency: int, seconds: float
) -> list[Sample]:
    end = time.perf_counter() + seconds
    samples: list[Sample] = []

    async def one_client() -> None:
        while time.perf_counter() < end:
            samples.append(await deliver(client, target, next(target.source), time.perf_counter()))

    await asyncio.gather(*(one_client() for _ in range(concurrency)))
    return samples


# --- phases and their numbers ------------------------------------------------------------------


@dataclass
class PhaseResult:
    target: str
    phase: str
    samples: list[Sample]
    server_cpu: float  # CPU seconds the target's process used during the phase
    client_cpu: float  # CPU seconds this process (the load generator) used
    database_cpu: float  # CPU seconds the private PostgreSQL cluster used (0 without one)
    host_cpu: float  # CPU seconds the whole host used, all processes
    round: int = 1

    @property
    def elapsed(self) -> float:
        return max(s.finished for s in self.samples) - min(s.due for s in self.samples)

    def summary(self) -> dict[str, float | int | str]:
        latencies_ms = [s.latency * 1000 for s in self.samples if s.status == 200]
        acked = sum(1 for s in self.samples if s.acked)
        return {
            "round": self.round,
            "target": self.target,
            "phase": self.phase,
            "sent": len(self.samples),
            "acked_2xx_in_3s": acked,
            "failed": failure_reasons(self.samples) or 0,
            "late_over_3s": sum(1 for s in self.samples if s.status == 200 and s.latency > SLACK_ACK_TIMEOUT),
            "acked_events_per_s": round(acked / self.elapsed, 1),
            "p50_ms": round(support.percentile(latencies_ms, 0.50), 1),
            "p99_ms": round(support.percentile(latencies_ms, 0.99), 1),
            "max_ms": round(max(latencies_ms, default=float("nan")), 1),
            "max_send_lag_ms": round(max(s.started - s.due for s in self.samples) * 1000, 1),
            "server_cpu_ms_per_event": round(self.server_cpu / len(self.samples) * 1000, 2),
            "database_cpu_ms_per_event": round(self.database_cpu / len(self.samples) * 1000, 2),
            "client_cpu_share": round(self.client_cpu / self.elapsed, 2),
            # The host's busy cores beyond this run's own processes: what else competed for the CPUs.
            "other_cpu_share": round(
                max(0.0, self.host_cpu - self.server_cpu - self.client_cpu - self.database_cpu)
                / self.elapsed,
                2,
            ),
        }


def failure_reasons(samples: list[Sample]) -> str:
    """How the requests that got no 200 ended, counted: "HTTP 401: 2, PoolTimeout: 5"."""
    reasons = collections.Counter(s.error or f"HTTP {s.status}" for s in samples if s.status != 200)
    return ", ".join(f"{reason}: {count}" for reason, count in reasons.items())


def server_cpu_seconds(target: Target) -> float:
    return sum(support.cpu_seconds(pid) for pid in target.pids)


def database_cpu_seconds(workdir: Path) -> float:
    return sum(support.cpu_seconds(pid) for pid in support.postgres_pids(workdir))


async def run_phase(name: str, target: Target, client: httpx.AsyncClient, load, workdir: Path) -> PhaseResult:
    server_cpu, client_cpu = server_cpu_seconds(target), time.process_time()
    database_cpu, host_cpu = database_cpu_seconds(workdir), support.host_cpu_seconds()
    samples = await load
    return PhaseResult(
        target.name,
        name,
        samples,
        server_cpu=server_cpu_seconds(target) - server_cpu,
        client_cpu=time.process_time() - client_cpu,
        database_cpu=database_cpu_seconds(workdir) - database_cpu,
        host_cpu=support.host_cpu_seconds() - host_cpu,
    )


async def benchmark(target: Target, args: argparse.Namespace, workdir: Path) -> list[PhaseResult]:
    limits = httpx.Limits(max_connections=max(args.concurrency, 256), max_keepalive_connections=256)
    async with httpx.AsyncClient(timeout=CLIENT_TIMEOUT, limits=limits) as client:
        # Warm up: connections opened, auth.test made, code paths imported and cached.
        await closed_loop(client, target, 4, WARM_UP_SECONDS)
        results = []
        for rate in args.rate:
            phase = f"open loop {rate:g}/s for {args.seconds:g} s"
            results.append(
                await run_phase(phase, target, client, open_loop(client, target, rate, args.seconds), workdir)
            )
            await asyncio.sleep(1)  # let the last answers and after-commit work drain
        if args.closed_seconds > 0:
            phase = f"closed loop, {args.concurrency} clients, {args.closed_seconds:g} s"
            load = closed_loop(client, target, args.concurrency, args.closed_seconds)
            results.append(await run_phase(phase, target, client, load, workdir))
    return results


# --- what the product stored -------------------------------------------------------------------


def check_product_stored(env: dict[str, str], target: Target) -> dict[str, int | bool]:
    """One turn per acked mention, none for anything else, and each turn's work enqueued once."""
    support.use_database_here(env)
    import redis

    from sessions.models import Session, Turn

    turns = collections.Counter(Turn.objects.values_list("message_ts", flat=True))
    sent = set(target.source.mentions)
    queued = collections.Counter(
        json.loads(raw)["headers"]["task"]
        for raw in redis.Redis.from_url(env["REDIS_URL"]).lrange(env["CELERY_QUEUE"], 0, -1)
    )
    redis.Redis.from_url(env["REDIS_URL"]).delete(env["CELERY_QUEUE"])  # leave a shared Redis clean
    result: dict[str, int | bool] = {
        "mentions_sent": len(sent),
        "mentions_acked": len(target.acked_mentions),
        "turns_stored": sum(turns.values()),
        "sessions_stored": Session.objects.count(),
        "acked_without_turn": len(target.acked_mentions - turns.keys()),
        "turns_with_duplicates": sum(1 for count in turns.values() if count > 1),
        "turns_not_sent": len(turns.keys() - sent),
        "drive_session_enqueued": queued["sessions.tasks.drive_session"],
        "acknowledge_turn_enqueued": queued["sessions.tasks.acknowledge_turn"],
    }
    result["one_turn_per_mention"] = (
        result["acked_without_turn"] == 0
        and result["turns_with_duplicates"] == 0
        and result["turns_not_sent"] == 0
    )
    result["enqueued_once_per_turn"] = result["drive_session_enqueued"] == result["turns_stored"]
    return result


# --- the run -----------------------------------------------------------------------------------


def manifest(channels: list[str]) -> str:
    return f"""\
apiVersion: kourier/v1
kind: Connection
metadata: {{name: bench}}
spec:
  botToken: {{fromEnv: {PRODUCT_TOKEN_ENV}}}
  signingSecret: {{fromEnv: {PRODUCT_SECRET_ENV}}}
---
apiVersion: kourier/v1
kind: Binding
metadata: {{name: bench}}
spec:
  connection: bench
  channels: [{", ".join(channels)}]
  agent: {{url: "http://127.0.0.1:9/"}}   # never called: no worker runs
"""


def report(args: argparse.Namespace, results: list[PhaseResult], stored: dict | None, profile: str) -> str:
    lines = [f"# Ingress benchmark ({support.host_description()})", ""]
    lines.append(f"Command: {' '.join(sys.argv)}")
    lines.append(f"Product code: {support.code_version()}")
    lines.append(
        f"Database: {args.database_label}; {args.web_processes} Daphne process(es) per target; "
        "signed events to POST /slack/events on 127.0.0.1; "
        + ("every event a new mention." if args.all_new else "two events per mention, some redelivered.")
    )
    lines.append(
        f"Host load average (1, 5, 15 min) at the start: {args.load_at_start}, at the end: {load_average()}"
    )
    lines.append("")
    summaries = [r.summary() for r in results]
    columns = list(summaries[0].keys())
    lines.append(support.markdown_table(columns, [[s[c] for c in columns] for s in summaries]))
    if stored is not None:
        lines += ["", "Product's database and queue afterwards:", ""]
        lines.append(support.markdown_table(["check", "value"], list(stored.items())))
    if profile:
        lines += ["", profile]
    return "\n".join(lines)


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--rate", type=float, nargs="+", default=[200.0], help="open-loop events/s (several: one phase each)"
    )
    parser.add_argument("--seconds", type=float, default=20.0, help="length of each open-loop phase")
    parser.add_argument("--closed-seconds", type=float, default=10.0, help="length of the closed-loop phase")
    parser.add_argument("--concurrency", type=int, default=16, help="clients in the closed-loop phase")
    parser.add_argument("--redeliver-every", type=int, default=10, help="retry one mention in N (0: never)")
    parser.add_argument("--all-new", action="store_true", help="every event a new mention (no duplicates)")
    parser.add_argument(
        "--rounds", type=int, default=1, help="run every target's phases N times, interleaved"
    )
    parser.add_argument("--profile", action="store_true", help="sample each target's web processes (py-spy)")
    parser.add_argument("--channels", type=int, default=4, help="bound channels the mentions are spread over")
    parser.add_argument("--targets", nargs="+", choices=["product", "bare"], default=["product", "bare"])
    parser.add_argument(
        "--web-processes", type=int, default=1, help="Daphne processes per target, on one socket"
    )
    parser.add_argument("--database", choices=["sqlite", "postgres"], default="sqlite",
                        help="ignored when DATABASE_URL is set")  # fmt: skip
    parser.add_argument("--json", type=Path, help="also write the numbers here")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory and its logs")
    args = parser.parse_args()
    args.load_at_start = load_average()
    channels = [f"C0BENCH{i}" for i in range(args.channels)]

    with (
        support.work_directory("kourier-bench-ingress-", keep=args.keep) as workdir,
        support.redis_server(workdir) as redis_url,
        support.database(workdir, args.database) as database_url,
        SlackFake(rate_limits=True) as slack,
    ):
        args.database_label = database_url.split(":", 1)[0]
        defaults.populate(slack)
        processes = support.Processes(workdir)
        env = support.product_env(
            database_url=database_url,
            redis_url=redis_url,
            slack_api_url=slack.url,
            extra={
                PRODUCT_TOKEN_ENV: defaults.BOT_TOKEN,
                PRODUCT_SECRET_ENV: defaults.SIGNING_SECRET,
                "BARE_BOT_TOKEN": defaults.BOT_TOKEN,
                "BARE_SIGNING_SECRET": defaults.SIGNING_SECRET,
            },
        )
        support.prepare_database(env, manifest(channels), workdir)
        try:
            targets = []
            applications = {"product": "kourier.asgi:application", "bare": "bench.bare_bolt_app:application"}
            for name in args.targets:
                url = processes.start_daphne(name, applications[name], env, copies=args.web_processes)
                targets.append(
                    Target("bare Bolt" if name == "bare" else name, url + "/slack/events", defaults.SIGNING_SECRET,
                           processes.pids(name), EventSource(channels, args.redeliver_every, all_new=args.all_new))
                )  # fmt: skip
            product = next((t for t in targets if t.name == "product"), None)
            samplers = {t.name: profiling.Sampler(workdir, t.name, t.pids) for t in targets if args.profile}
            results = []
            for round_number in range(1, args.rounds + 1):
                for target in targets:
                    print(f"round {round_number}: benchmarking {target.name} ...", file=sys.stderr)
                    if target.name in samplers:
                        samplers[target.name].start()
                    phases = asyncio.run(benchmark(target, args, workdir))
                    if target.name in samplers:
                        samplers[target.name].pause()
                    for phase in phases:
                        phase.round = round_number
                    results += phases
        finally:
            processes.stop()
        stored = check_product_stored(env, product) if product else None
        print(report(args, results, stored, "\n\n".join(sampler.report() for sampler in samplers.values())))
        if args.json:
            args.json.write_text(
                json.dumps({"phases": [r.summary() for r in results], "stored": stored}, indent=2)
            )


if __name__ == "__main__":
    main()
