"""The egress proxy is read in one place, with the standard library's meaning of HTTPS_PROXY,
HTTP_PROXY, ALL_PROXY and NO_PROXY, and handed to every client (issue 34, point 2). The end-to-end
proof, through a real proxy with the direct route blocked, is tests/e2e/test_egress_proxy.py."""

import urllib.request

import pytest

from kourier import egress
from kourier.slack.clients import async_web_client, web_client

PROXY = "http://proxy.corp:3128"


@pytest.fixture
def proxied(monkeypatch):
    for name in (
        "HTTPS_PROXY",
        "HTTP_PROXY",
        "ALL_PROXY",
        "NO_PROXY",
        "https_proxy",
        "http_proxy",
        "all_proxy",
        "no_proxy",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTPS_PROXY", PROXY)
    monkeypatch.setenv("HTTP_PROXY", PROXY)
    monkeypatch.setenv("NO_PROXY", "kagent.internal,.svc.cluster.local,10.0.0.7")
    return monkeypatch


@pytest.mark.parametrize(
    "url",
    [
        "https://slack.com/api/chat.postMessage",
        "wss://wss-primary.slack.com/link/?ticket=x",
        "http://agent.example:8080/",
        "https://files.slack.com/files-pri/T1-F1/report.pdf",
    ],
)
def test_every_url_not_named_in_no_proxy_goes_through_the_proxy(proxied, url):
    assert egress.proxy_for(url) == PROXY


@pytest.mark.parametrize(
    "url",
    [
        "http://kagent.internal:8083/api/a2a/ops/k8s-agent/",
        "http://kagent-controller.kagent.svc.cluster.local:8083/",
        "http://10.0.0.7:9000/",
    ],
)
def test_a_host_no_proxy_names_goes_direct(proxied, url):
    assert egress.proxy_for(url) is None


def test_without_a_proxy_everything_goes_direct(proxied):
    proxied.delenv("HTTPS_PROXY")
    proxied.delenv("HTTP_PROXY")

    assert egress.proxy_for("https://slack.com/api/") is None


def test_all_proxy_serves_a_scheme_without_its_own(proxied):
    proxied.delenv("HTTPS_PROXY")
    proxied.setenv("ALL_PROXY", "http://all.corp:3128")

    assert egress.proxy_for("https://slack.com/api/") == "http://all.corp:3128"
    assert egress.proxy_for("http://agent.example/") == PROXY


def test_the_environment_is_read_again_only_when_a_variable_deciding_a_route_changes(proxied):
    reads = []
    read = urllib.request.getproxies_environment

    def counted() -> dict[str, str]:
        reads.append(1)
        return read()

    proxied.setattr(urllib.request, "getproxies_environment", counted)
    proxied.setenv("NO_PROXY", "read-once.example")  # values no earlier lookup was made with

    egress.proxy_for("https://slack.com/api/")
    proxied.setenv("KOURIER_UNRELATED", "1")
    egress.proxy_for("http://agent.example/")
    assert len(reads) == 1

    proxied.setenv("https_proxy", "http://other.corp:3128")  # the lower case wins, as urllib reads it
    assert egress.proxy_for("https://slack.com/api/") == "http://other.corp:3128"
    assert len(reads) == 2


def test_a_websocket_is_opened_as_its_http_twin():
    assert (
        egress.as_http("wss://wss-primary.slack.com/link/?t=1") == "https://wss-primary.slack.com/link/?t=1"
    )
    assert egress.as_http("ws://127.0.0.1:9/link/") == "http://127.0.0.1:9/link/"
    assert egress.as_http("https://slack.com/") == "https://slack.com/"


def test_the_slack_clients_take_the_proxy_egress_picks(proxied, settings):
    settings.SLACK_API_URL = "https://slack.com/api/"

    assert web_client("xoxb-1").proxy == PROXY
    assert async_web_client("xoxb-1").proxy == PROXY


def test_the_slack_clients_go_direct_to_a_slack_no_proxy_names(proxied, settings):
    # slack_sdk alone reads HTTPS_PROXY but not NO_PROXY: it would send these through the proxy.
    settings.SLACK_API_URL = "http://slack.svc.cluster.local:8080/api/"

    assert web_client("xoxb-1").proxy is None
    assert async_web_client("xoxb-1").proxy is None
