"""The product's Prometheus metrics: every metric is defined here, with what it counts.

Several processes per host. A host runs several web processes and workers, so prometheus_client
runs in its multiprocess mode whenever ``PROMETHEUS_MULTIPROC_DIR`` is set: each process writes its
values to files in that directory, and a scrape of ``/metrics``, answered by whichever web process
the kernel picks, adds them all up. ``manage.py serve`` makes the directory and hands it to its
children; processes started another way need it in their environment before they start, since
prometheus_client reads it once, when first imported. Without it each process counts on its own
(fine for one process, as in unit tests). A process with no web process on its host (a pod of its
own) serves its own directory on METRICS_PORT (kourier/metrics_endpoint.py).

What the database knows (turns queued and running, interactions pending, notices owed) is counted
when the web's /metrics is scraped (``LiveStateCollector``; never on METRICS_PORT), not kept in gauges: a gauge kept by the process
that changed a row is wrong once that process dies between two updates, and the rows are what the
sweeps act on. A few indexed COUNTs per scrape cost less than keeping them right.

Labels name Bindings, Slack and A2A methods, outcomes and kinds only: never a message, a person, a
channel or a workspace (privacy, and a series per value would grow without bound).
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from django.utils import timezone
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

logger = logging.getLogger(__name__)

MULTIPROC_DIR_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"
__all__ = ["CONTENT_TYPE_LATEST"]  # the view answers with it

# --- turns -------------------------------------------------------------------------------------------

TURNS_STARTED = Counter(
    "kourier_turns_started",
    "Turns a runner started. A turn an earlier runner left and another resumes is not counted again: "
    'see kourier_recoveries_total{kind="turn"}.',
    ["binding"],
)
TURNS_ENDED = Counter(
    "kourier_turns_ended",
    "Turns that ended, by outcome (completed, asked, failed, rejected, canceled, unreachable, lost, "
    'gone, garbled, crashed, question-canceled, question-unusable, ...); failed="true" when the thread '
    "was told the turn failed.",
    ["binding", "outcome", "failed"],
)
AGENT_TOKENS = Counter(
    "kourier_agent_tokens",
    "Model tokens the agents reported for their turns, by Binding and direction (input: what the model "
    "read, output: what it wrote). An agent that reports no usage adds nothing.",
    ["binding", "direction"],
)
ACKNOWLEDGMENT_SECONDS = Histogram(
    "kourier_turn_acknowledgment_seconds",
    "From a message taken as a turn to its acknowledgment reaction being on it.",
    buckets=(0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60),
)
FIRST_OUTPUT_SECONDS = Histogram(
    "kourier_turn_first_output_seconds",
    "From a message taken as a turn to the first reply the thread shows (a stream started or a "
    "message posted); includes the wait behind the session's earlier turns.",
    ["binding"],
    buckets=(0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600),
)
TURN_SECONDS = Histogram(
    "kourier_turn_duration_seconds",
    "From a turn started to its end (a resumed turn: from its first start).",
    ["binding"],
    buckets=(1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600),
)
# liveall: one series per live worker process (prometheus_client adds the pid label); a dead
# process's series goes when its files are marked dead (manage.py serve does it for its children).
# The host label also keeps the web processes out: an unlabelled gauge has a 0 in every process
# that imports this module.
SESSIONS_RUNNING = Gauge(
    "kourier_worker_sessions_running",
    "Sessions a worker process runs on its turn loop now (at most WORKER_MAX_SESSIONS), by host and pid.",
    ["host"],
    multiprocess_mode="liveall",
)

# --- Slack and agents --------------------------------------------------------------------------------

SLACK_CALLS = Counter(
    "kourier_slack_calls",
    "Slack Web API calls by method and how each ended after the client's retries: ok, refused (a "
    "Slack error such as channel_not_found), rate_limited, deferred (its budget had no slot within the caller's patience: not sent), server_error, unavailable (timeouts, "
    "dropped connections), outcome_unknown (not repeated: it may have been applied), error.",
    ["method", "outcome"],
)
SLACK_RATE_LIMITED = Counter(
    "kourier_slack_rate_limited",
    "429 answers from Slack, by method: every one, whether the call was then sent again or not.",
    ["method"],
)
SOCKETS_CONNECTED = Gauge(
    "kourier_slack_sockets_connected",
    "Socket Mode websockets a socket process holds open now (greeted by Slack's hello), by Connection, "
    "host and pid. Summed over the replicas: how many of Slack's ten per app are in use.",
    ["connection", "host"],
    multiprocess_mode="liveall",
)
SOCKET_ENVELOPES = Counter(
    "kourier_slack_socket_envelopes",
    "Socket Mode envelopes by Connection, type (events_api, interactive, ...) and outcome: acked "
    "(handled, then acked), unreadable (acked and dropped: not JSON, wrong shape), ignored (acked: a "
    "type not used), failed (not acked: the listener failed, Slack sends it again), handed_back (came "
    "while stopping: not acked, so Slack sends it to another connection).",
    ["connection", "type", "outcome"],
)
SOCKET_LATE_ACKS = Counter(
    "kourier_slack_socket_late_acks",
    "Socket Mode acks sent more than three seconds after their envelope came: Slack will have sent it again.",
    ["connection"],
)
SOCKET_RECONNECTS = Counter(
    "kourier_slack_socket_reconnects",
    "New Socket Mode websockets opened after the first, by Connection and why: refresh_requested, "
    "warning, too_many_websockets, link_disabled (Slack's disconnect), closed (Slack closed it or it "
    "dropped).",
    ["connection", "reason"],
)
A2A_REQUESTS = Counter(
    "kourier_a2a_requests",
    "Requests to agents by A2A method and outcome: ok, or the error's name (AgentTimeout, "
    "AgentUnreachable, StreamDropped, InvalidAgentResponse, TaskNotFound, ...), cancelled, closed "
    "(a stream its reader left early). A stream is counted once, when it ends.",
    ["method", "outcome"],
)

# --- interactions and recovery -----------------------------------------------------------------------

INTERACTIONS_DECIDED = Counter(
    "kourier_interactions_decided",
    "Questions answered and approvals decided by a person, by kind (question, approval).",
    ["kind"],
)
FEEDBACK = Counter(
    "kourier_feedback",
    "Thumbs up and down on answers (spec.feedback), by Binding and verdict (up, down); a changed press counts again.",
    ["binding", "verdict"],
)
INTERACTIONS_TIMED_OUT = Counter(
    "kourier_interactions_timed_out",
    "Questions and approvals nobody answered by their deadline, by kind (question, approval).",
    ["kind"],
)
RECOVERIES = Counter(
    "kourier_recoveries",
    "Work taken over after a failure, by kind: session (driven again by recover-sessions), turn "
    "(resumed by a runner after an earlier one stopped), notice (posted late by post-owed-notices), "
    "reaction (taken off late by remove-stale-acknowledgments), alert (driven again by deliver-alerts).",
    ["kind"],
)


class Recovery:
    SESSION = "session"
    TURN = "turn"
    NOTICE = "notice"
    REACTION = "reaction"
    ALERT = "alert"


# --- recording ---------------------------------------------------------------------------------------


def _seconds_since(moment: datetime) -> float:
    return max(0.0, (timezone.now() - moment).total_seconds())


def turn_started(binding: str) -> None:
    TURNS_STARTED.labels(binding).inc()


def turn_ended(binding: str, outcome: str, *, failed: bool, started_at: datetime | None) -> None:
    TURNS_ENDED.labels(binding, outcome, "true" if failed else "false").inc()
    if started_at is not None:
        TURN_SECONDS.labels(binding).observe(_seconds_since(started_at))


def agent_tokens(binding: str, *, input_tokens: int, output_tokens: int) -> None:
    AGENT_TOKENS.labels(binding=binding, direction="input").inc(input_tokens)
    AGENT_TOKENS.labels(binding=binding, direction="output").inc(output_tokens)


def turn_acknowledged(accepted_at: datetime) -> None:
    ACKNOWLEDGMENT_SECONDS.observe(_seconds_since(accepted_at))


def turn_output_shown(binding: str, accepted_at: datetime) -> None:
    FIRST_OUTPUT_SECONDS.labels(binding).observe(_seconds_since(accepted_at))


_HOST = socket.gethostname()


def sessions_running(count: int) -> None:
    SESSIONS_RUNNING.labels(_HOST).set(count)


def slack_call(method: str, outcome: str) -> None:
    SLACK_CALLS.labels(method, outcome).inc()


def slack_rate_limited(method: str) -> None:
    SLACK_RATE_LIMITED.labels(method).inc()


def sockets_connected(connection: str, count: int) -> None:
    SOCKETS_CONNECTED.labels(connection, _HOST).set(count)


def socket_envelope(connection: str, envelope_type: str, outcome: str) -> None:
    SOCKET_ENVELOPES.labels(connection, envelope_type, outcome).inc()


def socket_late_ack(connection: str) -> None:
    SOCKET_LATE_ACKS.labels(connection).inc()


def socket_reconnect(connection: str, reason: str) -> None:
    SOCKET_RECONNECTS.labels(connection, reason).inc()


def a2a_request(method: str, outcome: str) -> None:
    A2A_REQUESTS.labels(method, outcome).inc()


def interactions_decided(kind: str) -> None:
    INTERACTIONS_DECIDED.labels(kind).inc()


def feedback_recorded(binding: str, verdict: str) -> None:
    FEEDBACK.labels(binding, verdict).inc()


def interactions_timed_out(kind: str, count: int = 1) -> None:
    if count:
        INTERACTIONS_TIMED_OUT.labels(kind).inc(count)


def recovered(kind: str, count: int = 1) -> None:
    if count:
        RECOVERIES.labels(kind).inc(count)


# --- what the database knows, read at scrape time ----------------------------------------------------


@dataclass(frozen=True)
class LiveState:
    """Counts of rows as they are now. Keys are Binding names ("" for a session whose Binding was
    deleted); pending interactions are keyed by (Binding, kind)."""

    turns_queued: Mapping[str, int] = field(default_factory=dict)
    turns_running: Mapping[str, int] = field(default_factory=dict)
    interactions_pending: Mapping[tuple[str, str], int] = field(default_factory=dict)
    notices_owed: int = 0


def _by_binding(name: str, documentation: str, counts: Mapping[str, int]) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, documentation, labels=["binding"])
    for binding, count in sorted(counts.items()):
        family.add_metric([binding], count)
    return family


class LiveStateCollector(Collector):
    """Yields the live state's gauges, read from the database on every scrape by ``read``.

    A database that cannot be read leaves them out and says so (``kourier_live_state_readable 0``),
    so that the processes' own metrics are still scraped."""

    def __init__(self, read: Callable[[], LiveState]) -> None:
        self._read = read

    def describe(self) -> Iterable[Metric]:
        return [*self._families(LiveState()), _readable(True)]

    def collect(self) -> Iterable[Metric]:
        try:
            state = self._read()
        except Exception as exc:
            logger.warning("metrics.live_state_unreadable", extra={"error": type(exc).__name__})
            return [_readable(False)]
        return [*self._families(state), _readable(True)]

    @staticmethod
    def _families(state: LiveState) -> list[Metric]:
        pending = GaugeMetricFamily(
            "kourier_interactions_pending",
            "Questions and approvals open in their threads now, waiting for people.",
            labels=["binding", "kind"],
        )
        for (binding, kind), count in sorted(state.interactions_pending.items()):
            pending.add_metric([binding, kind], count)
        owed = GaugeMetricFamily(
            "kourier_notices_owed",
            "Failure and timeout notices of ended turns that Slack has not taken yet (the outbox's "
            "intents not confirmed); post-owed-notices posts them, for a day.",
        )
        owed.add_metric([], state.notices_owed)
        return [
            _by_binding(
                "kourier_turns_queued", "Turns waiting for their session's runner.", state.turns_queued
            ),
            _by_binding(
                "kourier_turns_running", "Turns a runner has started and not ended.", state.turns_running
            ),
            pending,
            owed,
        ]


def _readable(readable: bool) -> GaugeMetricFamily:
    family = GaugeMetricFamily(
        "kourier_live_state_readable", "1 when this scrape could read the database's counts."
    )
    family.add_metric([], 1 if readable else 0)
    return family


def multiprocess_dir() -> str | None:
    return os.environ.get(MULTIPROC_DIR_VARIABLE) or None


def exposition(read_live_state: Callable[[], LiveState] | None) -> bytes:
    """Every metric in Prometheus' text format: all processes' (from the multiprocess directory, or
    this process's alone without one), and the live state read now when ``read_live_state`` is given.
    Only the web processes give it (kourier/metrics_endpoint.py says why)."""
    directory = multiprocess_dir()
    if directory is None:
        processes = REGISTRY
    else:
        processes = CollectorRegistry()
        multiprocess.MultiProcessCollector(processes, path=directory)
    if read_live_state is None:
        return generate_latest(processes)
    live = CollectorRegistry()
    live.register(LiveStateCollector(read_live_state))
    return generate_latest(processes) + generate_latest(live)


def mark_process_dead(pid: int, directory: str) -> None:
    """Forgets a process's live gauges (its counters stay counted): for a parent whose child exited."""
    multiprocess.mark_process_dead(pid, path=directory)
