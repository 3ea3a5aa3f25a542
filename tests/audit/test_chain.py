"""The hash chain as pure logic: what a hash covers, and where a chain of rows first breaks."""

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from audit import chain

AT = datetime(2026, 12, 2, 9, 30, 0, 123456, tzinfo=UTC)
CONTENT = {
    "at": AT,
    "action": "interaction.decided",
    "binding_name": "ops",
    "actor_kind": "user",
    "actor_id": "U0ADA",
    "requester": "U0GRACE",
    "policy": "binding",
    "subject": "interaction 12",
    "details": {"approved": 1, "denied": 1},
}
SECURITY = Path(__file__).resolve().parents[2] / "docs" / "security.md"


def chained(count: int) -> list[dict]:
    rows, previous_hash = [], chain.GENESIS
    for row_id in range(1, count + 1):
        content = {**CONTENT, "subject": f"interaction {row_id}"}
        row_hash = chain.digest(previous_hash, content)
        rows.append({**content, "id": row_id, "previous_hash": previous_hash, "hash": row_hash})
        previous_hash = row_hash
    return rows


@pytest.mark.parametrize(
    ("name", "other"),
    [
        ("at", AT + timedelta(microseconds=1)),
        ("action", "interaction.timed_out"),
        ("binding_name", "dev"),
        ("actor_kind", "system"),
        ("actor_id", "U0EVE"),
        ("requester", "kourier-system"),
        ("policy", "db_drop: tools[0] match=db_*"),
        ("subject", "interaction 13"),
        ("details", {"approved": 2, "denied": 0}),
    ],
)
def test_the_hash_covers_every_content_field(name, other):
    assert chain.digest(chain.GENESIS, {**CONTENT, name: other}) != chain.digest(chain.GENESIS, CONTENT)


def test_the_hash_covers_the_previous_hash():
    assert chain.digest("1" * 64, CONTENT) != chain.digest(chain.GENESIS, CONTENT)


def test_the_hash_is_of_the_moment_not_of_how_it_is_written():
    elsewhere = AT.astimezone(timezone(timedelta(hours=2)))
    reordered = {"denied": 1, "approved": 1}

    assert chain.digest(chain.GENESIS, {**CONTENT, "at": elsewhere, "details": reordered}) == chain.digest(
        chain.GENESIS, CONTENT
    )


def test_an_intact_chain_has_no_break():
    assert chain.first_break(chained(3)) == (3, None)


def test_a_changed_row_is_named_as_not_matching_its_hash():
    rows = chained(3)
    rows[1]["details"] = {"approved": 2, "denied": 0}

    assert chain.first_break(rows) == (1, chain.Break(2, chain.NOT_ITS_HASH))


def test_a_removed_row_breaks_the_chain_at_the_row_after_it():
    rows = chained(3)
    del rows[1]

    assert chain.first_break(rows) == (
        1,
        chain.Break(3, "its previous_hash is not the hash of row 1, the row before it"),
    )


def test_a_removed_first_row_leaves_a_chain_that_does_not_start():
    assert chain.first_break(chained(3)[1:]) == (0, chain.Break(2, chain.NOT_FIRST))


def test_a_row_written_around_the_writer_has_no_hash():
    rows = chained(2)
    rows.append({**CONTENT, "id": 3, "previous_hash": "", "hash": ""})

    assert chain.first_break(rows) == (2, chain.Break(3, chain.NO_HASH))


def test_the_verdicts_say_how_many_rows_match_and_which_row_breaks_and_why():
    assert chain.verdict(3, None) == (
        "The audit chain holds: every row matches its hash and the row before it. Rows: 3."
    )
    assert chain.verdict(1, chain.Break(2, chain.NOT_ITS_HASH)) == (
        "The audit chain breaks at row 2: its content does not match its hash. Rows before it that match: 1."
    )


@pytest.mark.parametrize(
    "wording",
    [chain.HOLDS, chain.BREAKS, chain.NO_HASH, chain.NOT_ITS_HASH, chain.NOT_FIRST, chain.NOT_NEXT],
)
def test_every_verdict_is_written_in_the_security_docs_word_for_word(wording):
    assert wording in SECURITY.read_text()
