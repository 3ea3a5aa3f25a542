"""``manage.py apply -f FILE``: create or update Connections and Bindings from manifests."""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from bindings import manifest, services


class Command(BaseCommand):
    help = (
        "Apply manifests (YAML, one or more documents per file): create or update the Connections and "
        "Bindings they describe. All or nothing: any refusal writes nothing. Applying the same manifests "
        "again changes nothing. Resources that the manifests do not name are left alone."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "-f",
            "--filename",
            action="append",
            required=True,
            metavar="FILE",
            help="A manifest file; - reads standard input. Repeat to apply several files together.",
        )
        parser.add_argument(
            "--dry-run", action="store_true", help="Validate and print what would change, but write nothing."
        )

    def handle(self, *args: Any, filename: list[str], dry_run: bool, **options: Any) -> None:
        documents: list[manifest.Document] = []
        errors: list[manifest.Problem] = []
        for name in filename:
            parsed, problems = manifest.parse_documents(self._read(name), "<stdin>" if name == "-" else name)
            documents.extend(parsed)
            errors.extend(problems)
        if errors:
            result = services.ApplyResult(dry_run=dry_run, errors=errors)
        else:
            result = services.apply_manifests(documents, dry_run=dry_run)

        for warning in result.warnings:
            self.stderr.write(f"Warning: {warning}", self.style.WARNING)
        if not result.ok:
            for error in result.errors:
                self.stderr.write(str(error), self.style.ERROR)
            raise CommandError(result.summary())
        for applied in result.resources:
            self.stdout.write(str(applied))
        self.stdout.write(result.summary(), self.style.SUCCESS if result.changed else None)

    def _read(self, name: str) -> str:
        if name == "-":
            return sys.stdin.read()
        try:
            with open(name, encoding="utf-8") as file:
                return file.read()
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"cannot read {name}: {exc}") from exc
