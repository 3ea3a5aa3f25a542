"""What the audit's hash chain costs an append on PostgreSQL: chained rows beside plain inserts.

    DATABASE_URL=postgres://… .venv/bin/python bench/audit_append.py --rows 500 --writers 1 4

Creates a throwaway test database next to DATABASE_URL's (Django's ``test_`` one, migrated, dropped
afterwards), then for each number of writers appends ``--rows`` rows per writer, each in its own
transaction as a service writes one: once through ``audit.services.record`` (the chain's advisory
lock, the head read, the hash), once as a plain INSERT of the same row (no lock, no hash). Prints
the mean time per append and the chain's verdict. The numbers are only as quiet as the machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kourier.settings")
os.environ.setdefault("DEBUG", "true")

import django

django.setup()

from django.db import connection, models, transaction  # noqa: E402
from django.test.utils import setup_databases, teardown_databases  # noqa: E402

from audit import services  # noqa: E402
from audit.models import AuditEvent  # noqa: E402

DETAILS = {"approved": 1, "denied": 1, "tools": ["restart_api", "scale_api"]}


def chained(n: int) -> None:
    with transaction.atomic():
        services.record(
            "interaction.decided",
            binding_name="ops",
            actor_id="U0ADA",
            subject=f"interaction {n}",
            details=DETAILS,
        )


def plain(n: int) -> None:
    event = AuditEvent(
        action="interaction.decided", binding_name="ops", actor_kind="user", actor_id="U0ADA",
        subject=f"interaction {n}", details=DETAILS,
    )  # fmt: skip
    with transaction.atomic():
        models.Model.save(event)  # the model's own save, without the chain


def run(append: Callable[[int], None], *, rows: int, writers: int) -> list[float]:
    """Seconds per append, as each writer saw them."""
    start = threading.Barrier(writers)
    seconds: list[float] = []

    def writer(w: int) -> None:
        try:
            start.wait()
            for n in range(rows):
                began = time.perf_counter()
                append(w * rows + n)
                seconds.append(time.perf_counter() - began)
        finally:
            connection.close()

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=500, help="appends per writer (default 500)")
    parser.add_argument(
        "--writers", type=int, nargs="+", default=[1, 4], help="writers at once (default 1 4)"
    )
    args = parser.parse_args()
    if connection.vendor != "postgresql":
        sys.exit("set DATABASE_URL to a PostgreSQL database: the chain's lock is PostgreSQL's")

    databases = setup_databases(verbosity=0, interactive=False)
    try:
        print("writers  chained ms/append  plain ms/append  difference")
        for writers in args.writers:
            with connection.cursor() as cursor:
                cursor.execute("TRUNCATE audit_auditevent")  # the throwaway test database's table
            chained_seconds = run(chained, rows=args.rows, writers=writers)
            plain_seconds = run(plain, rows=args.rows, writers=writers)
            with_chain, without = (
                statistics.mean(chained_seconds) * 1000,
                statistics.mean(plain_seconds) * 1000,
            )
            print(f"{writers:>7}  {with_chain:>17.3f}  {without:>15.3f}  {with_chain - without:>+10.3f}")
        with connection.cursor() as cursor:
            cursor.execute("TRUNCATE audit_auditevent")
        run(chained, rows=args.rows, writers=max(args.writers))
        print(services.verify())
    finally:
        teardown_databases(databases, verbosity=0)


if __name__ == "__main__":
    main()
