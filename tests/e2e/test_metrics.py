"""/metrics end to end: real turns in the real processes, then Prometheus' scrape of the web process
adds up what every process counted (the worker's turns, its Slack and A2A calls); a worker in a pod
of its own serves its own, and the web's counts nothing twice."""

import socket

import httpx
import pytest

from tests.e2e.helpers import METRICS_TOKEN, scrape, wait_for_turns_to_end
from tests.fakes.a2a_agent import steps

pytestmark = pytest.mark.slow


def value(scraped, family: str, sample: str, **labels: str) -> float:
    """One sample's value (0 when not recorded yet: a counter starts there)."""
    return next((s.value for s in scraped.get(family, []) if s.name == sample and s.labels == labels), 0.0)


def test_a_scrape_after_real_turns_counts_each_outcome_and_slacks_429(make_world, a2a_agent):
    a2a_agent.on_message(
        lambda received: (
            [steps.text("Trying. "), steps.fail("boom")]
            if received.text.endswith("break it")
            else [steps.text("All good.")]
        )
    )
    world = make_world(agent_url=a2a_agent.url, env={"METRICS_TOKEN": METRICS_TOKEN})
    binding = world.binding.name
    assert httpx.get(f"{world.stack.base_url}/metrics", timeout=10).status_code == 401
    before = scrape(world)

    world.slack.fail("reactions.add", "ratelimited", retry_after=1)  # the first acknowledgment meets a 429
    world.mention("hello")
    wait_for_turns_to_end(world, 1)
    world.mention("break it")
    wait_for_turns_to_end(world, 2)
    after = scrape(world)

    def moved(family: str, sample: str, **labels: str) -> float:
        return value(after, family, sample, **labels) - value(before, family, sample, **labels)

    assert moved("kourier_turns_started", "kourier_turns_started_total", binding=binding) == 2
    ended = "kourier_turns_ended", "kourier_turns_ended_total"
    assert moved(*ended, binding=binding, outcome="completed", failed="false") == 1
    assert moved(*ended, binding=binding, outcome="failed", failed="true") == 1
    assert (
        moved("kourier_slack_rate_limited", "kourier_slack_rate_limited_total", method="reactions.add") == 1
    )
    slack_calls = "kourier_slack_calls", "kourier_slack_calls_total"
    assert moved(*slack_calls, method="reactions.add", outcome="ok") == 2
    assert moved(*slack_calls, method="reactions.remove", outcome="ok") == 2
    a2a = "kourier_a2a_requests", "kourier_a2a_requests_total"
    assert moved(*a2a, method="SendStreamingMessage", outcome="ok") == 2
    # Every turn was acknowledged and timed; the thread saw a reply of each.
    ack = "kourier_turn_acknowledgment_seconds"
    assert moved(ack, f"{ack}_count") == 2
    turn_seconds = "kourier_turn_duration_seconds"
    assert moved(turn_seconds, f"{turn_seconds}_count", binding=binding) == 2
    first_output = "kourier_turn_first_output_seconds"
    assert moved(first_output, f"{first_output}_count", binding=binding) == 2
    # What the database says now: nothing waits, nothing is owed, and the worker runs no session.
    assert value(after, "kourier_live_state_readable", "kourier_live_state_readable") == 1
    assert value(after, "kourier_notices_owed", "kourier_notices_owed") == 0
    # An idle Binding's gauges say 0 rather than nothing.
    assert [(s.labels, s.value) for s in after["kourier_turns_queued"]] == [({"binding": binding}, 0)]
    assert [(s.labels, s.value) for s in after["kourier_turns_running"]] == [({"binding": binding}, 0)]
    worker_pid = str(world.stack.processes["worker"].pid)
    sessions = "kourier_worker_sessions_running"
    assert [(s.labels, s.value) for s in after[sessions]] == [
        ({"host": socket.gethostname(), "pid": worker_pid}, 0)
    ]


def test_a_worker_with_a_directory_of_its_own_is_scraped_on_its_port_and_the_web_does_not_count_it_again(
    make_world, a2a_agent
):
    a2a_agent.on_message(lambda received: [steps.text("All good.")])
    world = make_world(
        agent_url=a2a_agent.url, env={"METRICS_TOKEN": METRICS_TOKEN}, workers_own_metrics=True
    )
    binding = world.binding.name
    worker_url = world.stack.metrics_urls["worker"]
    assert httpx.get(worker_url, timeout=10).status_code == 401
    worker_before, web_before = scrape(world, worker_url), scrape(world)

    world.mention("hello")
    wait_for_turns_to_end(world, 1)
    worker_after, web_after = scrape(world, worker_url), scrape(world)

    started = "kourier_turns_started", "kourier_turns_started_total"
    ended = "kourier_turns_ended", "kourier_turns_ended_total"
    completed = {"binding": binding, "outcome": "completed", "failed": "false"}
    assert (
        value(worker_after, *started, binding=binding) - value(worker_before, *started, binding=binding) == 1
    )
    assert value(worker_after, *ended, **completed) - value(worker_before, *ended, **completed) == 1
    # The web's directory holds no file of the worker's: the turn is counted once, on the worker's port.
    assert value(web_after, *started, binding=binding) == value(web_before, *started, binding=binding) == 0
    assert value(web_after, *ended, **completed) == 0
    # The database's counts come from the web's /metrics alone.
    assert value(web_after, "kourier_live_state_readable", "kourier_live_state_readable") == 1
    assert "kourier_notices_owed" not in worker_after
    assert "kourier_turns_queued" not in worker_after
