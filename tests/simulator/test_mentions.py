"""A typed @Name becomes the mention Slack's client would send."""

from simulator.mentions import typed_mentions_to_ids

PEOPLE = {"Agent Kourier": "U0BOT", "Agent": "U0AGENT", "Ada Lovelace": "U0ADA", "ada": "U0ADA"}
GROUPS = {"oncall": "S0ONCALL"}


def test_the_bots_typed_name_becomes_its_mention():
    assert (
        typed_mentions_to_ids("@Agent Kourier what can you do?", PEOPLE, GROUPS)
        == "<@U0BOT> what can you do?"
    )


def test_the_longest_name_wins_and_case_does_not_matter():
    assert typed_mentions_to_ids("@agent kourier and @Agent", PEOPLE, GROUPS) == "<@U0BOT> and <@U0AGENT>"


def test_people_by_real_or_display_name_and_groups_by_handle():
    said = typed_mentions_to_ids("@Ada Lovelace, @ada: ask @oncall", PEOPLE, GROUPS)
    assert said == "<@U0ADA>, <@U0ADA>: ask <!subteam^S0ONCALL>"


def test_a_name_inside_a_longer_word_or_an_unknown_name_stays_text():
    assert typed_mentions_to_ids("@adamant @nobody mail@ada", PEOPLE, GROUPS) == "@adamant @nobody mail@ada"
