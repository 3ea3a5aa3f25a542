"""``manage.py audit verify``: reads the audit's hash chain and names the first row that does not match."""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit import chain, services


class Command(BaseCommand):
    help = "Check the audit. verify: read the hash chain in id order; exit 1 naming the first row that does not match."

    def add_arguments(self, parser: CommandParser) -> None:
        commands = parser.add_subparsers(dest="subcommand", required=True, metavar="SUBCOMMAND")
        commands.add_parser(
            "verify",
            help="Recompute every row's hash and its link to the row before; exit 1 at the first that does not match.",
        )

    def handle(self, *args: Any, subcommand: str, **options: Any) -> None:
        if subcommand == "verify":
            matched, broken = services.verify()
            if broken is not None:
                raise CommandError(chain.verdict(matched, broken))
            self.stdout.write(chain.verdict(matched, None), self.style.SUCCESS)
