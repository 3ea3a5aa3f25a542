"""Every outbound connection goes through the egress proxy the environment names (issue 34, point 2).

A real forward proxy (proxy.py, its own process) is the only way out: the Slack fake and the agent
give host names under ``.kourier.test`` in their URLs, which only the proxy resolves, so a client that
went direct would fail to connect and its feature would fail. The proxy logs each host it carried."""

import base64
import socket
import ssl
from urllib.parse import urlsplit

import pytest

from kourier.slack.blocks import FEEDBACK_UP_ACTION
from sessions.models import Turn
from simulator import defaults
from tests.e2e.helpers import WAIT, replies, wait_for_reply_count, wait_for_turns_to_end
from tests.fakes.a2a_agent import steps
from tests.support.egress_proxy import self_signed_certificate

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240, func_only=True)]

SLACK_HOST = "slack.kourier.test"
AGENT_HOST = "agent.kourier.test"


@pytest.fixture
def slack_certificate(tmp_path):
    return self_signed_certificate(tmp_path, SLACK_HOST)


@pytest.fixture
def slack_fake(make_slack_fake, slack_certificate):
    """The fake names itself ``slack.kourier.test`` in every URL it hands the app (the Web API's,
    response_urls, Socket Mode links), as Slack names slack.com; its Socket Mode links are wss, as
    Slack's are, so the websocket is tunnelled through the proxy (CONNECT)."""
    certificate, key = slack_certificate
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(certificate, key)
    return make_slack_fake(public_host=SLACK_HOST, socket_tls=tls)


@pytest.fixture
def agent(make_a2a_agent):
    agent = make_a2a_agent(protocol="1.0", public_host=AGENT_HOST)
    agent.on_message(lambda received: [steps.text(f"answer to {received.text.rsplit(': ', 1)[-1]}")])
    return agent


def through(proxy) -> dict[str, str]:
    """The product's environment: the proxy for every scheme, in both spellings, and no exceptions."""
    return {
        "HTTPS_PROXY": proxy.url,
        "HTTP_PROXY": proxy.url,
        "https_proxy": proxy.url,
        "http_proxy": proxy.url,
        "NO_PROXY": "",
        "no_proxy": "",
    }


def host_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.hostname}:{parts.port}"


def test_the_test_hosts_cannot_be_reached_without_the_proxy():
    for host in (SLACK_HOST, AGENT_HOST, "controller.kourier.test"):
        with pytest.raises(socket.gaierror):
            socket.getaddrinfo(host, 80)


def test_a_mention_over_http_is_answered_with_every_call_through_the_proxy(
    make_world, agent, egress_proxy, slack_fake
):
    world = make_world(agent_url=agent.url, env=through(egress_proxy))

    ts = world.mention("hello")
    wait_for_reply_count(world, ts, 1)
    wait_for_turns_to_end(world, 1)

    [answer] = replies(world, ts)
    assert answer.text == "answer to hello"
    assert Turn.objects.get().state == Turn.State.DONE
    # The Web API (the answer, names, reactions) and the agent (its card, the turn) were carried.
    assert {host_of(slack_fake.url), host_of(agent.url)} <= egress_proxy.hosts()
    assert agent.received


def test_a_mention_over_socket_mode_is_answered_with_the_websocket_through_the_proxy(
    make_socket_world, agent, egress_proxy, slack_fake, slack_certificate
):
    certificate, _ = slack_certificate
    # The product trusts the fake's certificate as it trusts Slack's: through OpenSSL's CA file.
    world = make_socket_world(
        agent_url=agent.url, env={**through(egress_proxy), "SSL_CERT_FILE": str(certificate)}
    )

    ts = world.mention("hello")
    wait_for_reply_count(world, ts, 1)
    wait_for_turns_to_end(world, 1)

    [answer] = replies(world, ts)
    assert answer.text == "answer to hello"
    link = f"{SLACK_HOST}:{slack_fake.socket_port}"
    assert {host_of(slack_fake.url), link, host_of(agent.url)} <= egress_proxy.hosts()


def test_a_shared_file_is_downloaded_and_the_agents_file_uploaded_through_the_proxy(
    make_world, make_a2a_agent, egress_proxy, slack_fake
):
    """The file's private URL and the upload URL name the Slack host only the proxy resolves: a
    download or upload that went direct would fail, and the file would be named as not sent."""
    chart = b"\x89PNG\r\n\x1a\n" + bytes(range(32))
    agent = make_a2a_agent(protocol="1.0", public_host=AGENT_HOST, input_modes=("text/plain",))
    agent.script([steps.text("Read it."), steps.file_out("chart.png", "image/png", chart)])
    world = make_world(agent_url=agent.url, env=through(egress_proxy))

    root = world.slack.user_shares_files(
        defaults.ADA,
        world.channel,
        f"{world.slack.bot_mention} what failed?",
        [("boot.log", b"boot ok\n", "text/plain")],
    )

    def uploaded():
        return [file for file in world.slack.files_in_thread(world.channel, root) if file.name == "chart.png"]

    world.slack.wait_until(uploaded, timeout=WAIT)
    wait_for_turns_to_end(world, 1)

    [received] = agent.received
    [log] = [part for part in received.parts if "raw" in part]
    assert (log["filename"], base64.b64decode(log["raw"])) == ("boot.log", b"boot ok\n")
    assert [file.content for file in uploaded()] == [chart]
    assert {host_of(slack_fake.url), host_of(agent.url)} <= egress_proxy.hosts()


def test_feedback_to_kagents_controller_goes_through_the_proxy(
    make_world, agent, egress_proxy, slack_fake, kagent_controller
):
    controller = f"http://controller.kourier.test:{urlsplit(kagent_controller.url).port}"
    world = make_world(
        agent_url=agent.url,
        env=through(egress_proxy),
        feedback=True,
        kagent_controller=controller,
        kagent_namespace="ops",
        kagent_name="k8s-agent",
        user_identity="slack-user-id",
    )
    ts = world.mention("hello")
    [reply] = wait_for_reply_count(world, ts, 1)

    world.slack.press_button(defaults.GRACE, world.channel, reply.ts, FEEDBACK_UP_ACTION)

    world.slack.wait_until(lambda: kagent_controller.feedback, timeout=WAIT)
    assert [user for user, _ in kagent_controller.feedback] == [defaults.GRACE]
    assert host_of(controller) in egress_proxy.hosts()
