"""What a failed Slack call means: how long a 429 asks to wait, which faults are Slack's own, which
may pass later, which never reached Slack, and how each is named (no I/O: made-up answers only)."""

import http.client
import urllib.error

import aiohttp
import pytest
from aiohttp.client_reqrep import ConnectionKey
from slack_sdk.errors import SlackApiError

from kourier.slack.faults import (
    TRANSPORT_ERRORS,
    SlackOutcomeUnknown,
    SlackRateLimited,
    SlackUnavailable,
    call_outcome,
    error_name,
    fault_name,
    is_server_error,
    may_pass,
    never_reached_slack,
    retry_after_of,
    slack_error,
)

URL = "https://slack.com/api/chat.postMessage"
SLACK = ConnectionKey("slack.com", 443, True, True, None, None, None)


def answered(error: str = "", *, status: int = 200, **headers: str) -> SlackApiError:
    """Slack's answer to a call it did not do, as slack_sdk raises it."""
    return slack_error(SlackApiError, URL, error, status=status, headers=headers)


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"Retry-After": "7"}, 7.0),
        ({"retry-after": "2.5"}, 2.5),
        ({"Retry-After": "0"}, 1.0),  # at least a second: Slack never means "at once"
        ({"Retry-After": "soon"}, 1.0),
        ({}, 1.0),
    ],
)
def test_a_429_asks_to_wait_its_retry_after_at_least_a_second(headers, seconds):
    assert retry_after_of(answered("ratelimited", status=429, **headers)) == seconds


def test_anything_but_a_429_asks_no_wait():
    assert retry_after_of(answered("ratelimited")) is None
    assert retry_after_of(answered("internal_error", status=500, **{"Retry-After": "3"})) is None


@pytest.mark.parametrize(
    ("error", "status", "server_error"),
    [
        ("fatal_error", 200, True),
        ("internal_error", 200, True),
        ("service_unavailable", 200, True),
        ("request_timeout", 200, True),
        ("", 500, True),
        ("", 504, True),
        ("", 505, False),
        ("", 404, False),
        ("ratelimited", 429, False),
        ("channel_not_found", 200, False),
    ],
)
def test_slacks_own_failures_are_server_errors_and_its_refusals_are_not(error, status, server_error):
    assert is_server_error(answered(error, status=status)) is server_error


@pytest.mark.parametrize(
    ("fault", "passes"),
    [
        (TimeoutError(), True),
        (aiohttp.ServerDisconnectedError(), True),
        (slack_error(SlackUnavailable, URL, "timeout"), True),
        (slack_error(SlackOutcomeUnknown, URL, "timeout"), True),
        (slack_error(SlackRateLimited, URL, "ratelimited", status=429), True),
        (answered("ratelimited", status=429), True),
        (answered("internal_error"), True),
        (answered(status=503), True),
        (answered("channel_not_found"), False),
        (answered("not_in_channel"), False),
        (answered("invalid_auth"), False),
        (answered("is_archived"), False),
    ],
)
def test_a_fault_may_pass_later_unless_slack_refused_the_call(fault, passes):
    assert may_pass(fault) is passes


@pytest.mark.parametrize(
    ("fault", "never_reached"),
    [
        (ConnectionRefusedError(), True),
        (aiohttp.ClientConnectorError(SLACK, ConnectionRefusedError(111, "refused")), True),
        (urllib.error.URLError(ConnectionRefusedError(111, "refused")), True),
        (urllib.error.URLError(TimeoutError()), False),
        (urllib.error.HTTPError(URL, 503, "unavailable", {}, None), False),
        (TimeoutError(), False),
        (aiohttp.ServerDisconnectedError(), False),
        (ConnectionResetError(), False),
        (answered("internal_error"), False),
    ],
)
def test_only_a_connection_that_could_not_be_opened_never_reached_slack(fault, never_reached):
    assert never_reached_slack(fault) is never_reached


@pytest.mark.parametrize(
    "fault",
    [
        TimeoutError(),
        ConnectionResetError(),
        aiohttp.ServerDisconnectedError(),
        http.client.RemoteDisconnected(),
    ],
)
def test_a_call_whose_answer_did_not_arrive_is_a_transport_error(fault):
    assert isinstance(fault, TRANSPORT_ERRORS)


def test_slacks_answer_is_not_a_transport_error():
    assert not isinstance(answered("internal_error"), TRANSPORT_ERRORS)


@pytest.mark.parametrize(
    ("fault", "outcome"),
    [
        (slack_error(SlackOutcomeUnknown, URL, "timeout"), "outcome_unknown"),
        (slack_error(SlackUnavailable, URL, "timeout"), "unavailable"),
        (slack_error(SlackRateLimited, URL, "ratelimited", status=429), "rate_limited"),
        (answered("ratelimited", status=429), "rate_limited"),
        (answered("fatal_error"), "server_error"),
        (answered(status=502), "server_error"),
        (answered("channel_not_found"), "refused"),
        (ValueError("not Slack's"), "error"),
    ],
)
def test_a_failed_call_is_counted_by_how_it_ended(fault, outcome):
    assert call_outcome(fault) == outcome


@pytest.mark.parametrize(
    ("fault", "logged", "kept"),
    [
        (answered("channel_not_found"), "channel_not_found", "channel_not_found"),
        (answered(status=503), "", "http_503"),
        (TimeoutError(), "TimeoutError", "timeout"),
        (aiohttp.ServerDisconnectedError(), "ServerDisconnectedError", "ServerDisconnectedError"),
    ],
)
def test_a_failure_is_named_by_slacks_error_else_by_what_went_wrong(fault, logged, kept):
    assert error_name(fault) == logged
    assert fault_name(fault) == kept


def test_a_failure_the_client_makes_reads_as_slacks_own_answer():
    fault = slack_error(SlackRateLimited, URL, "ratelimited", status=429, headers={"Retry-After": "3"})

    assert isinstance(fault, SlackApiError)
    assert fault.response["error"] == "ratelimited"
    assert str(fault).startswith("ratelimited (chat.postMessage)")
    assert retry_after_of(fault) == 3.0
    assert call_outcome(fault) == "rate_limited"
