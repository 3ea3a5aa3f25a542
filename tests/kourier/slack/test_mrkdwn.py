import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kourier.slack.mrkdwn import MAX_ROUNDS, WORD_JOINER, code_span, escape, link, neutralize
from tests.support.slack_specials import live_specials

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


# A Markdown link rewritten to the address it opens, between the brackets around it: each of these
# came out as the broadcast, group or person it names before neutralizing was a fixpoint.
LINKS_THAT_BUILT_A_SPECIAL = [
    ("<[https://good.example](!channel)>", f"<{INERT}channel>"),
    ("<[https://good.example](!here)>", f"<{INERT}here>"),
    ("<[good.example](!everyone)>", f"<{INERT}everyone>"),
    ("<[good.example](!subteam^S0ONCALL)>", f"<{INERT}group>"),
    ("<[good.example](@U0ADA)>", f"<{INERT}U0ADA>"),
    ("&lt;[good.example](!here)&gt;", f"&lt;{INERT}here&gt;"),
]

# Forms Slack reads as notifications in other clothes: Slack's escapes (a Markdown block shows them
# as the brackets), a Markdown link that opens one, a line break inside the brackets.
OTHER_CLOTHES = [
    ("&lt;!here&gt;", f"{INERT}here"),
    ("<!channel&gt;", f"{INERT}channel"),
    ("&lt;@U0ADA&gt;", f"{INERT}U0ADA"),
    ("<https://good.example|&lt;!here&gt;>", f"<https://good.example|{INERT}here>"),
    ("[the team](!subteam^S0ONCALL)", f"{INERT}group"),
    ("[x](<!everyone>)", f"{INERT}everyone"),
    ("[ada](@U0ADA)", f"{INERT}U0ADA"),
    ("<!here\n>", f"{INERT}here\n"),
]


@pytest.mark.parametrize(("written", "shown"), LINKS_THAT_BUILT_A_SPECIAL + OTHER_CLOTHES)
def test_a_rewritten_link_or_an_escaped_form_never_notifies(written, shown):
    assert neutralize(written) == shown
    assert neutralize(shown) == shown
    assert live_specials(shown) == []


def test_an_allowed_mention_is_a_user_id_and_nothing_else():
    shown = neutralize("<@U0ADA> <@here> <@channel|x> [ada](@U0ADA)", allow_user_mentions=True)

    assert shown == f"<@U0ADA> {INERT}here {INERT}x [ada](@U0ADA)"


def test_a_text_nested_past_the_rounds_is_shown_with_look_alike_brackets():
    # Each round rewrites the innermost disguised link, which makes the next one around it.
    depth = MAX_ROUNDS + 3
    written = (
        "[" * depth + "h0.example](h1.example)" + "".join(f"](h{n}.example)" for n in range(2, depth + 1))
    )

    shown = neutralize(written)

    assert not set("<>[]") & set(shown)
    assert neutralize(shown) == shown
    assert shown.endswith(f"(h{depth}.example)")


# The pieces a steered agent builds Slack's forms from, Markdown's links and Slack's escapes
# included, so that generated texts are mostly near-misses and nestings of the dangerous forms.
PIECES = [
    *'<>!@^|[]()`\n #&;:./"',
    *["channel", "here", "everyone", "subteam", "date", "U123", "S1", "C1", "lt", "gt"],
    *["&lt;", "&gt;", "&amp;", "https://", "mailto:", "good.example", "evil.example", WORD_JOINER],
]
TEXTS = st.lists(st.sampled_from(PIECES), max_size=40).map("".join)


@settings(max_examples=3000, deadline=None, database=None)
@given(written=TEXTS, allow_user_mentions=st.booleans())
def test_neutralizing_is_a_fixpoint_and_leaves_no_live_special(written, allow_user_mentions):
    shown = neutralize(written, allow_user_mentions=allow_user_mentions)

    assert neutralize(shown, allow_user_mentions=allow_user_mentions) == shown
    assert live_specials(shown, allow_user_mentions=allow_user_mentions) == []


@pytest.mark.parametrize(
    ("address", "shown"),
    [
        ("http://prometheus.example/graph", "<http://prometheus.example/graph|Source>"),
        ("HTTPS://prometheus.example/a?b=1&c=2", "<HTTPS://prometheus.example/a?b=1&amp;c=2|Source>"),
        ("https://x.example/a|b <!here>", "<https://x.example/a%7Cb%20%3C!here%3E|Source>"),
        ("!here", ""),
        ("!subteam^S0ONCALL", ""),
        ("@U0ADA", ""),
        ("#C0GENERAL", ""),
        ("mailto:a@x.example", ""),
        ("javascript:alert(1)", ""),
        ("/graph?g0.expr=up", ""),
        ("http://", ""),
        ("http://[::1", ""),
        ("", ""),
    ],
)
def test_a_link_others_gave_is_linked_only_when_it_is_a_web_address(address, shown):
    assert link(address, "Source") == shown
