"""``manage.py interactions``: the pending tool approvals, and deciding one outside Slack as a Django
user (interactions/outside.py)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit.services import operating_system_user
from interactions import outside
from kourier.terminal import printable


class Command(BaseCommand):
    help = (
        "List pending tool approvals, or decide one as a Django user with the decide-interactions permission."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        commands = parser.add_subparsers(dest="command", required=True)
        listing = commands.add_parser("list", help="list tool approvals")
        listing.add_argument(
            "--pending", action="store_true", required=True, help="the open ones, nearest deadline first"
        )
        deciding = commands.add_parser(
            "decide", help="decide one tool approval", description=outside.STANDS_IN_FOR
        )
        deciding.add_argument("id", type=int, help="the interaction's id (from list --pending)")
        deciding.add_argument("--approve", action="append", default=[], metavar="TOOL", help="repeatable")
        deciding.add_argument("--deny", action="append", default=[], metavar="TOOL", help="repeatable")
        deciding.add_argument("--approve-all", action="store_true")
        deciding.add_argument("--deny-all", action="store_true")
        deciding.add_argument(
            "--as",
            dest="username",
            required=True,
            metavar="USERNAME",
            help="a Django user; the audit row names it and the operating-system user running this",
        )

    def handle(self, *args, command: str, **options) -> None:
        if command == "list":
            self._list()
        else:
            self._decide(**options)

    def _list(self) -> None:
        pending = outside.pending()
        if not pending:
            self.stdout.write("No tool approval is pending.")
            return
        self.stdout.write("ID\tBINDING\tTHREAD\tTOOLS\tDEADLINE")
        for one in pending:
            # A tool's name is the agent's: printable, so that it cannot act on the terminal.
            thread = printable(f"{one.channel_id}/{one.thread_ts}")
            tools = printable(", ".join(one.tools))
            self.stdout.write(
                f"{one.id}\t{printable(one.binding)}\t{thread}\t{tools}\t{one.deadline:%Y-%m-%d %H:%M:%S} UTC"
            )

    def _decide(self, *, id: int, username: str, approve, deny, approve_all, deny_all, **_) -> None:
        user = get_user_model()._default_manager.filter(**{get_user_model().USERNAME_FIELD: username}).first()
        if user is None:
            raise CommandError(f"There is no Django user {username!r}; nothing was decided.")
        try:
            outside.decide(
                id,
                user,
                where=outside.CLI,
                approve=approve,
                deny=deny,
                approve_all=approve_all,
                deny_all=deny_all,
                os_user=operating_system_user(),
            )
        except outside.NotDecided as exc:  # it may name the agent's tools
            raise CommandError(printable(str(exc))) from exc
        self.stdout.write(f"Interaction {id} decided as {username}; the agent is sent the decision.")
