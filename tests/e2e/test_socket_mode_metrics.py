"""The socket process's own /metrics (METRICS_PORT, as in its pod): sockets connected, envelopes by
type and outcome, late acks and reconnects, counted by the real process against the fake's websocket."""

import httpx
import pytest

from tests.e2e.helpers import METRICS_TOKEN, WAIT, scrape, wait_for_reply_count
from tests.fakes.a2a_agent import steps
from tests.support.private_redis import free_port

pytestmark = pytest.mark.slow


def total(scraped, family: str, sample: str, **labels: str) -> float:
    """The sum of the samples whose labels include ``labels`` (a gauge has a pid label per process)."""
    return sum(
        s.value
        for s in scraped.get(family, [])
        if s.name == sample and all(s.labels.get(k) == v for k, v in labels.items())
    )


def test_the_socket_process_counts_its_sockets_envelopes_and_reconnects(
    make_socket_world, a2a_agent, tmp_path
):
    a2a_agent.on_message(lambda received: [steps.text("All good.")])
    world = make_socket_world(agent_url=a2a_agent.url, replicas=0, env={"METRICS_TOKEN": METRICS_TOKEN})
    port, directory = free_port(), tmp_path / "socket-metrics"
    directory.mkdir()
    world.start_replica(env={"METRICS_PORT": str(port), "PROMETHEUS_MULTIPROC_DIR": str(directory)})
    world.slack.wait_for_socket_connections(1, timeout=60)
    url = f"http://127.0.0.1:{port}/metrics"
    assert httpx.get(url, timeout=10).status_code == 401

    ts = world.mention("hello")
    wait_for_reply_count(world, ts, 1)
    world.slack.send_socket_frame("not json at all")
    world.stack.wait_for_log("socket1", "slack.envelope_unreadable", timeout=WAIT)
    [first] = world.slack.socket_connections()
    world.slack.socket_drop(connection=first.id)
    world.slack.wait_until(
        lambda: [c.id for c in world.slack.socket_connections()] not in ([], [first.id]), timeout=WAIT
    )
    world.stack.wait_for_log("socket1", "slack.socket_connected", count=2, timeout=WAIT)

    scraped = scrape(world, url)
    connection = world.connection.name
    envelopes = "kourier_slack_socket_envelopes", "kourier_slack_socket_envelopes_total"
    assert (
        total(
            scraped,
            "kourier_slack_sockets_connected",
            "kourier_slack_sockets_connected",
            connection=connection,
        )
        == 1
    )
    assert total(scraped, *envelopes, connection=connection, type="events_api", outcome="acked") >= 2
    assert total(scraped, *envelopes, connection=connection, type="unknown", outcome="unreadable") == 1
    reconnects = "kourier_slack_socket_reconnects", "kourier_slack_socket_reconnects_total"
    assert total(scraped, *reconnects, connection=connection, reason="closed") == 1
    late = "kourier_slack_socket_late_acks", "kourier_slack_socket_late_acks_total"
    assert total(scraped, *late, connection=connection) == 0
