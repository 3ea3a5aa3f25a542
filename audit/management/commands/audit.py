"""``manage.py audit``: check the audit's hash chain (``verify``), export its head to keep outside the
database (``head``), and hash a chain kept the old way with the audit key (``rekey``)."""

import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit import chain, services
from audit.models import audit_key

KEYED = (
    "Checked with the audit key (AUDIT_KEY, key id {key_id}): a row changed, inserted or appended by "
    "someone without the key does not verify."
)
UNKEYED = (
    "Checked without an audit key (AUDIT_KEY is not set): a plain SHA-256 chain shows a row changed, "
    "removed or inserted, but anyone who can write the table can recompute it."
)
NO_HEAD = (
    "No head given (--head FILE): rows cut from the chain's end cannot be seen; keep one outside the "
    "database with manage.py audit head."
)
EMPTY = "The audit is empty: there is no head to keep yet."
REKEYED = "Every row is hashed with the audit key (key id {key_id}) now. Rows: {count}."


class Command(BaseCommand):
    help = (
        "Check the audit. verify: read the hash chain in id order (with the audit key) and, given a head "
        "kept outside the database, that the chain still reaches it; exit 1 naming the first row that "
        "does not match. head: the chain's last row, signed, to keep. rekey: hash every row with the "
        "audit key (the upgrade from a chain hashed without one)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        commands = parser.add_subparsers(dest="subcommand", required=True, metavar="SUBCOMMAND")
        verify = commands.add_parser(
            "verify",
            help="Recompute every row's hash and its link to the row before; exit 1 at the first that does not match.",
        )
        verify.add_argument(
            "--head",
            metavar="FILE",
            help="a head written by `audit head` (- for standard input): the chain must still pass through it",
        )
        commands.add_parser(
            "head", help="Print the chain's last row, signed with the audit key, as one JSON line."
        )
        commands.add_parser(
            "rekey", help="Hash every row with the audit key, once the chain as it stands holds."
        )

    def handle(self, *args: Any, subcommand: str, **options: Any) -> None:
        if subcommand == "verify":
            self._verify(options.get("head"))
        elif subcommand == "head":
            self._head()
        else:
            self._rekey()

    def _verify(self, head_file: str | None) -> None:
        kept = _read_head(head_file) if head_file else None
        key = audit_key()
        self.stdout.write(KEYED.format(key_id=chain.key_id(key)) if key is not None else UNKEYED)
        matched, broken = services.verify()
        if broken is not None:
            raise CommandError(chain.verdict(matched, broken))
        self.stdout.write(chain.verdict(matched, None), self.style.SUCCESS)
        if kept is None:
            self.stdout.write(NO_HEAD)
            return
        problem = services.head_problem(kept)
        if problem is not None:
            raise CommandError(f"{problem}.")
        self.stdout.write(chain.HEAD_HOLDS.format(row_id=kept.row_id, at=kept.at, rows=kept.rows))

    def _head(self) -> None:
        head = services.head()
        if head is None:
            raise CommandError(EMPTY)
        self.stdout.write(head.to_json())

    def _rekey(self) -> None:
        try:
            count = services.rekey()
        except services.NotRekeyed as exc:
            raise CommandError(str(exc)) from exc
        key = audit_key()
        assert key is not None
        self.stdout.write(REKEYED.format(key_id=chain.key_id(key), count=count), self.style.SUCCESS)


def _read_head(name: str) -> chain.Head:
    """The last head of a file of heads (one JSON line each, as `audit head >> FILE` keeps them)."""
    try:
        text = sys.stdin.read() if name == "-" else Path(name).read_text(encoding="utf-8")
        lines = text.strip().splitlines()
        return chain.Head.from_json(lines[-1] if lines else "")
    except (OSError, ValueError) as exc:
        raise CommandError(chain.HEAD_UNREADABLE.format(why=exc) + ".") from exc
