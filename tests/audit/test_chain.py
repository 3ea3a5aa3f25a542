"""The hash chain as pure logic: what a hash covers, and where a chain of rows first breaks."""

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from audit import chain
from audit.management.commands import audit as cmd

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


# -- with the audit key (issue 32, point 6) -------------------------------------------------------------

KEY = b"an-audit-key-of-the-operator-s-own-at-least-32-chars"
OTHER = b"a-key-that-is-not-the-operator-s-own-key-at-all"


def keyed(count: int, key: bytes = KEY) -> list[dict]:
    rows, previous_hash = [], chain.GENESIS
    for row_id in range(1, count + 1):
        content = {**CONTENT, "subject": f"interaction {row_id}"}
        row_hash = chain.digest(previous_hash, content, key)
        rows.append({**content, "id": row_id, "previous_hash": previous_hash, "hash": row_hash,
                     "key_id": chain.key_id(key)})  # fmt: skip
        previous_hash = row_hash
    return rows


def test_the_keyed_hash_is_an_hmac_that_depends_on_the_key():
    unkeyed = chain.digest(chain.GENESIS, CONTENT)
    assert (
        len({unkeyed, chain.digest(chain.GENESIS, CONTENT, KEY), chain.digest(chain.GENESIS, CONTENT, OTHER)})
        == 3
    )


def test_a_key_is_named_by_an_id_that_is_not_the_key():
    assert chain.key_id(KEY) != chain.key_id(OTHER)
    assert len(chain.key_id(KEY)) == 16
    assert chain.key_id(KEY) not in KEY.decode()


def test_a_keyed_chain_holds_with_its_key():
    assert chain.first_break(keyed(3), KEY) == (3, None)


def appended(rows: list[dict], key: bytes | None, claimed: str) -> list[dict]:
    """A row appended by someone who computes its hash with ``key`` and claims the key id ``claimed``."""
    content = {**CONTENT, "subject": "interaction forged"}
    forged = {**content, "id": len(rows) + 1, "previous_hash": rows[-1]["hash"],
              "hash": chain.digest(rows[-1]["hash"], content, key), "key_id": claimed}  # fmt: skip
    return [*rows, forged]


@pytest.mark.parametrize(
    ("key", "claimed", "why"),
    [
        (None, "", chain.NOT_KEYED),
        (OTHER, "", chain.NOT_KEYED),
        (None, chain.key_id(KEY), chain.NOT_ITS_HASH),
        (OTHER, chain.key_id(KEY), chain.NOT_ITS_HASH),
        (
            OTHER,
            chain.key_id(OTHER),
            chain.OTHER_KEY.format(row_key=chain.key_id(OTHER), key=chain.key_id(KEY)),
        ),
    ],
    ids=[
        "sha256",
        "another key",
        "sha256 claiming the key",
        "another key claiming the key",
        "another key named",
    ],
)
def test_a_row_appended_without_the_key_breaks_the_chain_whatever_it_claims(key, claimed, why):
    assert chain.first_break(appended(keyed(3), key, claimed), KEY) == (3, chain.Break(4, why))


def test_a_chain_rewritten_whole_without_the_key_does_not_verify_with_it():
    assert chain.first_break(chained(3), KEY) == (0, chain.Break(1, chain.NOT_KEYED))


def test_rekey_reads_unkeyed_rows_before_keyed_ones_each_by_its_own_hash():
    rows = chained(2)
    content = {**CONTENT, "subject": "interaction 3"}
    rows.append({**content, "id": 3, "previous_hash": rows[-1]["hash"],
                 "hash": chain.digest(rows[-1]["hash"], content, KEY), "key_id": chain.key_id(KEY)})  # fmt: skip

    assert chain.first_break(rows, KEY, unkeyed_too=True) == (3, None)
    assert chain.first_break(rows, KEY) == (0, chain.Break(1, chain.NOT_KEYED))


def test_keyed_rows_cannot_be_checked_without_the_key():
    assert chain.first_break(keyed(2)) == (
        0,
        chain.Break(1, chain.KEY_NOT_SET.format(row_key=chain.key_id(KEY))),
    )


# -- the head kept outside the database -----------------------------------------------------------------

HEAD = chain.Head(row_id=3, hash="3" * 64, rows=3, at="2026-12-02T09:30:00.123456+00:00")


def test_a_head_is_signed_with_the_key_and_read_back_as_written():
    signed = HEAD.signed_with(KEY)

    assert signed.key_id == chain.key_id(KEY)
    assert chain.Head.from_json(signed.to_json()) == signed
    assert KEY.decode() not in signed.to_json()


@pytest.mark.parametrize(
    ("kept", "found", "rows_up_to", "problem"),
    [
        (HEAD.signed_with(KEY), {"hash": "3" * 64}, 3, None),
        (HEAD.signed_with(KEY), None, 0,
         chain.HEAD_CUT.format(row_id=3, at=HEAD.at)),  # the tail was cut off at or before it
        (HEAD.signed_with(KEY), {"hash": "4" * 64}, 3, chain.HEAD_CHANGED.format(row_id=3)),
        (HEAD.signed_with(KEY), {"hash": "3" * 64}, 2, chain.HEAD_COUNT.format(row_id=3, found=2, rows=3)),
        (HEAD, {"hash": "3" * 64}, 3, chain.HEAD_UNSIGNED.format(key=chain.key_id(KEY))),
        (HEAD.signed_with(OTHER), {"hash": "3" * 64}, 3, chain.HEAD_UNSIGNED.format(key=chain.key_id(KEY))),
        (chain.Head(3, "3" * 64, 30, HEAD.at, chain.key_id(KEY), HEAD.signed_with(KEY).signature), {"hash": "3" * 64},
         30, chain.HEAD_UNSIGNED.format(key=chain.key_id(KEY))),  # its count changed after it was signed
    ],
    ids=["holds", "cut", "rewritten", "a row missing", "unsigned", "another key", "changed"],
)  # fmt: skip
def test_the_chain_passes_through_a_kept_head_or_says_why_not(kept, found, rows_up_to, problem):
    assert chain.head_problem(kept, found, rows_up_to, KEY) == problem


@pytest.mark.parametrize(
    "wording",
    [
        chain.HOLDS, chain.BREAKS, chain.NO_HASH, chain.NOT_ITS_HASH, chain.NOT_FIRST, chain.NOT_NEXT,
        chain.NOT_KEYED, chain.OTHER_KEY, chain.KEY_NOT_SET, chain.HEAD_HOLDS, chain.HEAD_CUT,
        chain.HEAD_CHANGED, chain.HEAD_COUNT, chain.HEAD_UNSIGNED, cmd.KEYED, cmd.UNKEYED, cmd.NO_HEAD,
    ],
)  # fmt: skip
def test_every_verdict_is_written_in_the_security_docs_word_for_word(wording):
    assert wording in SECURITY.read_text()
