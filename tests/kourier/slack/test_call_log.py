"""A turn's Slack calls are noted with their method, outcome and retries while a recording is on,
bounded, and nothing is kept outside one."""

from kourier.slack import call_log


def test_calls_are_noted_with_their_outcome_and_retries_only_while_recording():
    with call_log.call("chat.postMessage") as outside:
        assert outside is None
    with call_log.recording() as record:
        with call_log.call("chat.postMessage") as noted:
            call_log.retried()
            noted.outcome = "rate_limited"
        with call_log.call("reactions.add"):
            pass

    assert [(c["method"], c["outcome"], c["retries"]) for c in record.calls] == [
        ("chat.postMessage", "rate_limited", 1),
        ("reactions.add", "ok", 0),
    ]
    assert all(c["ms"] >= 0 and c["at"] > 0 for c in record.calls)


def test_a_recording_keeps_a_bounded_number_of_calls_and_counts_the_rest():
    with call_log.recording() as record:
        for _ in range(call_log.MAX_CALLS + 5):
            with call_log.call("chat.appendStream"):
                pass

    assert len(record.calls) == call_log.MAX_CALLS
    assert record.dropped == 5
