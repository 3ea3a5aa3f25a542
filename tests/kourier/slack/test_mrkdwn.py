import re

import pytest

from kourier.slack.mrkdwn import WORD_JOINER, code_span, escape, neutralize

INERT = WORD_JOINER + "@" + WORD_JOINER
BARE = "@" + WORD_JOINER

# What a steered agent could write, and what Slack is given instead.
NEUTRALIZED = [
    ("<!channel> the build is red", f"{INERT}channel the build is red"),
    ("<!here>", f"{INERT}here"),
    ("<!everyone>", f"{INERT}everyone"),
    ("<!here|here>", f"{INERT}here"),
    ("<!channel|@channel>", f"{INERT}channel"),
    ("<!subteam^S0ONCALL>", f"{INERT}group"),
    ("<!subteam^S0ONCALL|@oncall>", f"{INERT}oncall"),
    ("hey <@U0ADA> look", f"hey {INERT}U0ADA look"),
    ("<@U0ADA|ada>", f"{INERT}ada"),
    ("@here please", f"{BARE}here please"),
    ("ping @channel now", f"ping {BARE}channel now"),
    ("@EVERYONE", f"{BARE}EVERYONE"),
    ("<<!channel>>", f"<{INERT}channel>"),
    # Links whose text names another address than the one they open show the address they open.
    ("<https://evil.example|https://good.example>", "<https://evil.example>"),
    ("<https://evil.example/x|good.example>", "<https://evil.example/x>"),
    ("<https://evil.example|see docs at good.example/help>", "<https://evil.example>"),
    ("[https://good.example](https://evil.example)", "https://evil.example"),
    ("[good.example](https://evil.example/login)", "https://evil.example/login"),
    ("[https://good.example](<https://evil.example>)", "https://evil.example"),
    ('[https://good.example](https://evil.example "Good")', "https://evil.example"),
    (
        "[mail me](mailto:a@evil.example) or [a@good.example](mailto:a@evil.example)",
        "[mail me](mailto:a@evil.example) or mailto:a@evil.example",
    ),
]

KEPT = [
    "a plain answer with *bold* and `code`",
    "see <#C0GENERAL>",
    "<!date^1392734382^{date_short}|Feb 18, 2014>",
    "<https://good.example|the docs>",
    "<https://good.example/docs|https://good.example/docs>",
    "<https://www.good.example/a|good.example>",
    "[the runbook](https://good.example/runbook)",
    "[https://good.example/a](https://good.example/b)",
    "write to ada@here.example",
    "a < b and c > d",
    "email me: someone@channel.example",
]


@pytest.mark.parametrize(("written", "shown"), NEUTRALIZED)
def test_broadcasts_mentions_and_disguised_links_are_neutralized(written, shown):
    assert neutralize(written) == shown


@pytest.mark.parametrize("written", KEPT)
def test_everything_else_is_kept_as_written(written):
    assert neutralize(written) == written


@pytest.mark.parametrize(("written", "shown"), NEUTRALIZED)
def test_neutralizing_twice_changes_nothing(written, shown):
    assert neutralize(shown) == shown


@pytest.mark.parametrize(("written", "_shown"), NEUTRALIZED)
def test_no_neutralized_form_survives(written, _shown):
    shown = neutralize(written)
    assert not re.search(r"<[!@]", shown)
    assert not re.search(r"(?<![\w@])@(channel|here|everyone)\b", shown, re.IGNORECASE)


def test_a_binding_that_allows_mentions_keeps_a_persons_but_never_a_broadcast():
    shown = neutralize("<@U0ADA> and <!here> and <!subteam^S1|@ops>", allow_user_mentions=True)
    assert shown == f"<@U0ADA> and {INERT}here and {INERT}ops"


def test_escape_shows_mrkdwns_control_characters_as_they_are():
    assert escape("<!channel> & <https://evil|x>") == "&lt;!channel&gt; &amp; &lt;https://evil|x&gt;"


def test_a_code_span_cannot_be_ended_by_its_text():
    shown = f"`{code_span('a`b <!here> `')}`"
    assert shown.count("`") == 2
    assert "<!here>" not in shown
