"""The Home tab's view: the person's threads, the approvals they may decide with the prompt's own
buttons in a block naming the prompt, the alert threads; each part says so when it is empty."""

from datetime import UTC, datetime

from interactions.approval_prompts import APPROVE_ACTION, DENY_ACTION
from interactions.home_view import NO_ALERTS, NO_APPROVALS, NO_SESSIONS, home_view
from interactions.waiting import ThreadLine, WaitingApproval

WHEN = datetime(2026, 12, 4, 10, 0, tzinfo=UTC)
URL = "https://app.slack.com/client/T1/C1/thread/C1-1.1"


def texts(view) -> list[str]:
    return [b["text"]["text"] for b in view["blocks"] if b["type"] in ("section", "header")]


def test_an_empty_home_says_each_part_is_empty():
    view = home_view([], [], [])
    assert view["type"] == "home"
    assert {NO_SESSIONS.format(command="/kourier"), NO_APPROVALS, NO_ALERTS} <= set(texts(view))
    assert NO_SESSIONS.format(command="/ask") in texts(home_view([], [], [], command="/ask"))
    assert not any(b["type"] == "actions" for b in view["blocks"])


def test_an_approval_has_the_prompts_buttons_in_a_block_that_names_the_prompt():
    approval = WaitingApproval(7, "C1", "1.1", "1.2", URL, ("add_numbers", "check"), WHEN)
    view = home_view([ThreadLine("C1", "1.1", URL, True, WHEN)], [approval], [])
    [actions] = [b for b in view["blocks"] if b["type"] == "actions"]
    assert actions["block_id"] == "prompt|C1|1.2|1.1"
    assert [(e["action_id"], e["value"], e["text"]["text"]) for e in actions["elements"]] == [
        (APPROVE_ACTION, "7", "Approve all"),
        (DENY_ACTION, "7", "Deny all"),
    ]
    assert any("`add_numbers`, `check`" in text and "<#C1>" in text for text in texts(view))
    assert any(text.startswith(f"<{URL}|A thread> in <#C1>") for text in texts(view))


def test_an_expired_thread_says_so():
    view = home_view([ThreadLine("C1", "1.1", "", False, None)], [], [])
    assert "A thread in <#C1> (expired)" in texts(view)
