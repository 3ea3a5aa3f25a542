"""``manage.py audit verify``: what it checked, a count when the chain holds; the first row that does not
match, named, and exit 1, when a row was changed, removed or appended in the database itself; a tail
cut off, against a head kept outside it. ``audit head`` and ``audit rekey``."""

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from audit import chain, services
from audit.management.commands import audit as cmd
from audit.models import AuditEvent

pytestmark = pytest.mark.django_db

TRIGGER = "audit_auditevent_append_only"


@pytest.fixture
def rows():
    return [
        services.record(
            "interaction.decided", binding_name="ops", actor_id="U0ADA", subject=f"interaction {n}"
        )
        for n in range(1, 5)
    ]


def verify(*args: str) -> str:
    """What verify says of the chain (the line between what it checked and the head)."""
    return said(*args).splitlines()[1]


def said(*args: str) -> str:
    out = StringIO()
    call_command("audit", "verify", *args, stdout=out)
    return out.getvalue().strip()


def refused() -> CommandError:
    with pytest.raises(CommandError) as refusal:
        verify()
    return refusal.value


def around_the_model(sql: str, *params) -> None:
    """What someone with the database's credentials could do: on PostgreSQL, with the append-only
    trigger switched off (as the table's owner may) for this test's transaction."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(f"ALTER TABLE audit_auditevent DISABLE TRIGGER {TRIGGER}")
        cursor.execute(sql, params)


def test_an_intact_audit_verifies_with_its_count(rows):
    assert verify() == "The audit chain holds: every row matches its hash and the row before it. Rows: 4."


def test_an_empty_audit_verifies():
    assert verify() == "The audit chain holds: every row matches its hash and the row before it. Rows: 0."


def test_a_row_changed_in_the_database_is_named_and_verify_fails(rows):
    around_the_model("UPDATE audit_auditevent SET actor_id = 'U0EVE' WHERE id = %s", rows[2].pk)

    error = refused()

    assert str(error) == (
        f"The audit chain breaks at row {rows[2].pk}: its content does not match its hash. "
        "Rows before it that match: 2."
    )
    assert error.returncode == 1


def test_a_changed_row_whose_hash_was_recomputed_breaks_the_chain_at_the_next_row(rows):
    changed = {name: getattr(rows[1], name) for name in chain.CHAINED_FIELDS} | {"actor_id": "U0EVE"}
    around_the_model(
        "UPDATE audit_auditevent SET actor_id = 'U0EVE', hash = %s WHERE id = %s",
        chain.digest(rows[1].previous_hash, changed),
        rows[1].pk,
    )

    assert str(refused()) == (
        f"The audit chain breaks at row {rows[2].pk}: its previous_hash is not the hash of row {rows[1].pk}, "
        "the row before it. Rows before it that match: 2."
    )


def test_a_row_removed_from_the_database_breaks_the_chain_at_the_row_after_it(rows):
    around_the_model("DELETE FROM audit_auditevent WHERE id = %s", rows[1].pk)

    assert str(refused()) == (
        f"The audit chain breaks at row {rows[2].pk}: its previous_hash is not the hash of row {rows[0].pk}, "
        "the row before it. Rows before it that match: 1."
    )


def written_without_a_hash(at) -> None:
    """An INSERT that names no hash column, as the release before the chain writes a row (the append-only
    trigger lets an INSERT through)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO audit_auditevent (at, action, binding_name, actor_kind, actor_id, subject, details)"
            " VALUES (%s, 'interaction.decided', 'ops', 'user', 'U0ADA', 'interaction 5', '{}')",
            [at],
        )


def test_a_row_written_without_a_hash_is_named(rows):
    written_without_a_hash(rows[-1].at)
    [unhashed] = AuditEvent.objects.filter(hash="")

    assert str(refused()) == (
        f"The audit chain breaks at row {unhashed.pk}: it has no hash: it was written around the audit's one "
        "writer, or during an upgrade by the release before the chain (the next append chains such rows at "
        "the end). Rows before it that match: 4."
    )


def test_rows_the_release_before_wrote_during_an_upgrade_are_chained_by_the_next_append(rows):
    written_without_a_hash(rows[-1].at)
    written_without_a_hash(rows[-1].at)

    services.record("interaction.timed_out", subject="interaction 6")

    assert verify() == "The audit chain holds: every row matches its hash and the row before it. Rows: 7."
    assert not AuditEvent.objects.filter(hash="").exists()


# -- what verify checked, the key, the head kept outside the database, rekey (issue 32, point 6) --------

KEY = "an-audit-key-of-the-operator-s-own-at-least-32-chars"


def test_verify_says_it_checked_without_a_key_and_without_a_head(rows):
    assert said().splitlines() == [
        cmd.UNKEYED,
        "The audit chain holds: every row matches its hash and the row before it. Rows: 4.",
        cmd.NO_HEAD,
    ]


def keyed_rows(count: int = 4) -> list[AuditEvent]:
    return [
        services.record("interaction.decided", actor_id="U0ADA", subject=f"interaction {n}")
        for n in range(count)
    ]


def test_verify_says_it_checked_with_the_key_by_its_id_never_the_key(settings):
    settings.AUDIT_KEY = KEY
    keyed_rows()

    lines = said().splitlines()

    assert lines[0] == cmd.KEYED.format(key_id=chain.key_id(KEY.encode()))
    assert lines[1].startswith("The audit chain holds")
    assert KEY not in said()


def appended_by_someone_without_the_key(key: bytes | None, key_id: str = "") -> int:
    """A row appended in SQL with its hash computed as the writer would, but with ``key`` (None: the
    plain SHA-256 anyone can compute) and claiming ``key_id``."""
    last = AuditEvent.objects.order_by("-id")[0]
    content = {name: getattr(last, name) for name in chain.CHAINED_FIELDS} | {"subject": "interaction forged"}
    row_hash = chain.digest(last.hash, content, key)
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO audit_auditevent (at, action, binding_name, actor_kind, actor_id, requester, policy,"
            " subject, details, previous_hash, hash, key_id) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            [content["at"], content["action"], content["binding_name"], content["actor_kind"], content["actor_id"],
             content["requester"], content["policy"], content["subject"], "{}", last.hash, row_hash, key_id],
        )  # fmt: skip
    return AuditEvent.objects.order_by("-id").values_list("id", flat=True)[0]


@pytest.mark.parametrize(
    ("key", "claimed", "why"),
    [
        (None, "", chain.NOT_KEYED),  # the plain SHA-256, recomputed
        (b"a-key-that-is-not-the-operator-s-own-key", "", chain.NOT_KEYED),
        (None, "forgedkeyid00000", None),  # claims a key id it cannot make a hash for
        (b"a-key-that-is-not-the-operator-s-own-key", "other", None),
    ],
    ids=["sha256", "another key, unnamed", "a key id claimed", "another key, named"],
)
def test_a_row_appended_with_a_recomputed_hash_does_not_verify_with_the_key(settings, key, claimed, why):
    settings.AUDIT_KEY = KEY
    keyed_rows()
    if claimed == "other":
        claimed = chain.key_id(key)
    forged = appended_by_someone_without_the_key(key, claimed)

    error = str(refused())

    assert error.startswith(f"The audit chain breaks at row {forged}: ")
    if why is not None:
        assert f": {why}." in error
    assert error.endswith("Rows before it that match: 4.")


def test_without_the_key_such_a_row_verifies_which_is_why_production_needs_one(rows):
    appended_by_someone_without_the_key(None)

    assert verify() == "The audit chain holds: every row matches its hash and the row before it. Rows: 5."


def kept_head(tmp_path) -> str:
    out = StringIO()
    call_command("audit", "head", stdout=out)
    path = tmp_path / "heads.jsonl"
    path.write_text(out.getvalue())
    return str(path)


def test_the_chain_passes_through_a_head_kept_outside_the_database(settings, tmp_path):
    settings.AUDIT_KEY = KEY
    rows = keyed_rows()
    head = kept_head(tmp_path)
    keyed_rows(2)  # the chain goes on

    last = said("--head", head).splitlines()[-1]

    assert (
        last
        == f"The chain passes through the head you kept: row {rows[-1].pk} of {rows[-1].at.isoformat(timespec='microseconds')}, 4 rows up to it."
    )


@pytest.mark.parametrize("keyed", [True, False], ids=["keyed", "unkeyed"])
def test_a_tail_cut_off_is_seen_against_a_kept_head_though_the_chain_still_holds(settings, tmp_path, keyed):
    if keyed:
        settings.AUDIT_KEY = KEY
    rows = keyed_rows()
    head = kept_head(tmp_path)
    around_the_model("DELETE FROM audit_auditevent WHERE id >= %s", rows[2].pk)
    assert verify() == "The audit chain holds: every row matches its hash and the row before it. Rows: 2."

    with pytest.raises(CommandError) as cut:
        said("--head", head)

    assert str(cut.value) == (
        f"The chain no longer reaches the head you kept (row {rows[-1].pk} of "
        f"{rows[-1].at.isoformat(timespec='microseconds')}): rows were cut from its end, or the head is not "
        "this audit's."
    )


def test_a_head_that_was_not_signed_with_the_key_is_refused(settings, tmp_path):
    keyed_rows()
    unsigned = kept_head(tmp_path)  # written while there was no key: anyone could have written it
    settings.AUDIT_KEY = KEY
    call_command("audit", "rekey", stdout=StringIO())

    with pytest.raises(CommandError) as refusal:
        said("--head", unsigned)

    assert str(refusal.value) == (
        f"The head you kept is not signed with AUDIT_KEY's key (key id {chain.key_id(KEY.encode())}): it "
        "cannot be trusted."
    )


def test_a_head_that_is_not_one_is_said_as_such(tmp_path):
    path = tmp_path / "heads.jsonl"
    path.write_text("not a head\n")

    with pytest.raises(CommandError, match=r"^The head you kept cannot be read: it is not the JSON object"):
        said("--head", str(path))


def test_an_empty_audit_has_no_head_to_keep():
    with pytest.raises(CommandError, match=r"^The audit is empty: there is no head to keep yet\.$"):
        call_command("audit", "head", stdout=StringIO())


def test_rows_hashed_the_old_way_are_keyed_by_rekey_once_the_chain_holds(rows, settings):
    settings.AUDIT_KEY = KEY
    services.record("interaction.decided", subject="interaction 5")  # a new release's row, keyed
    assert str(refused()) == (
        f"The audit chain breaks at row {rows[0].pk}: {chain.NOT_KEYED}. Rows before it that match: 0."
    )

    out = StringIO()
    call_command("audit", "rekey", stdout=out)

    assert (
        out.getvalue().strip()
        == f"Every row is hashed with the audit key (key id {chain.key_id(KEY.encode())}) now. Rows: 5."
    )
    assert verify() == "The audit chain holds: every row matches its hash and the row before it. Rows: 5."
    assert set(AuditEvent.objects.values_list("key_id", flat=True)) == {chain.key_id(KEY.encode())}


def test_rekey_changes_nothing_when_the_chain_does_not_hold(rows, settings):
    around_the_model("UPDATE audit_auditevent SET actor_id = 'U0EVE' WHERE id = %s", rows[1].pk)
    settings.AUDIT_KEY = KEY
    before = list(AuditEvent.objects.order_by("id").values_list("hash", "key_id"))

    with pytest.raises(CommandError) as refusal:
        call_command("audit", "rekey", stdout=StringIO())

    assert str(refusal.value) == (
        f"The audit chain breaks at row {rows[1].pk}: its content does not match its hash. Rows before it "
        "that match: 1. Nothing was changed."
    )
    assert list(AuditEvent.objects.order_by("id").values_list("hash", "key_id")) == before


def test_rekey_without_a_key_changes_nothing(rows):
    with pytest.raises(CommandError, match=r"^AUDIT_KEY is not set: there is no key"):
        call_command("audit", "rekey", stdout=StringIO())


def test_keyed_rows_are_not_checked_without_the_key(settings):
    settings.AUDIT_KEY = KEY
    [first, *_] = keyed_rows()
    settings.AUDIT_KEY = ""

    assert str(refused()) == (
        f"The audit chain breaks at row {first.pk}: it is hashed with an audit key (key id "
        f"{chain.key_id(KEY.encode())}), and AUDIT_KEY is not set here. Rows before it that match: 0."
    )
