import asyncio
import socket

import pytest
from slack_sdk.errors import SlackApiError

from kourier.slack.ephemeral import is_slacks, tell_privately

FAKE_API = "http://127.0.0.1:8123/api/"


@pytest.mark.parametrize(
    "url",
    [
        "https://hooks.slack.com/actions/T0/1/abc",
        "https://HOOKS.SLACK.COM/actions/T0/1/abc",
        "https://hooks.slack.com:443/actions/T0/1/abc",
        "https://hooks.slack-gov.com/actions/T0/1/abc",
        "http://127.0.0.1:8123/response/abc",  # the configured API base's host: the fake, the simulator
    ],
)
def test_slacks_response_urls_are_used(url):
    assert is_slacks(url, FAKE_API)


@pytest.mark.parametrize(
    "url",
    [
        "http://hooks.slack.com/actions/T0/1/abc",  # not https
        "https://hooks.slack.com.evil.example/actions",
        "https://evilslack.com/actions",
        "https://slack.com@evil.example/actions",
        "https://user:pw@hooks.slack.com/actions",
        "https://hooks.slack.com:8443/actions",
        "http://127.0.0.1:8124/response/abc",  # the API's host on another port
        "https://127.0.0.1:8123/response/abc",  # another scheme
        "http://169.254.169.254/latest/meta-data/",
        "http://localhost:8123/response/abc",
        "https://hooks.slack.com:99999/actions",
        "",
    ],
)
def test_anything_else_is_not(url):
    assert not is_slacks(url, FAKE_API)


def test_a_refusal_is_never_sent_to_a_response_url_that_is_not_slacks(settings):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.setblocking(False)
    port = listener.getsockname()[1]
    settings.SLACK_API_URL = "https://slack.com/api/"
    try:
        with pytest.raises(SlackApiError) as refused:
            asyncio.run(tell_privately(f"http://127.0.0.1:{port}/steal", "You are not an approver."))
        assert refused.value.response["error"] == "response_url_not_slack"
        with pytest.raises(BlockingIOError):
            listener.accept()  # nothing ever connected
    finally:
        listener.close()
