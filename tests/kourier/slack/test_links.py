"""Links from the admin to a thread: Slack's web client, or the simulator's page while it runs."""

from kourier.slack.links import thread_url


def test_a_thread_opens_in_slacks_web_client(settings):
    settings.SIMULATOR_URL = ""

    assert thread_url("T0001", "C0001", "1700000000.000100") == (
        "https://app.slack.com/client/T0001/C0001/thread/C0001-1700000000.000100"
    )


def test_no_link_before_the_workspace_or_the_thread_is_known(settings):
    settings.SIMULATOR_URL = ""

    assert thread_url("", "C0001", "1700000000.000100") == ""
    assert thread_url("T0001", "C0001", "") == ""


def test_under_the_simulator_the_thread_opens_on_its_page_whatever_the_workspace(settings):
    settings.SIMULATOR_URL = "http://127.0.0.1:8091/"

    assert thread_url("", "C0DEMO", "1700000000.000100") == "/simulator/#thread=1700000000.000100"
