"""Whom a Connection's bot token belongs to (a workspace and a bot user): noted from what ingress hears,
asked of Slack by the admin's "Test token"."""

from __future__ import annotations

from dataclasses import dataclass

from asgiref.sync import async_to_sync

from audit import services as audit
from bindings.models import Connection, MissingSecret
from bindings.services.actors import actor_kind
from kourier.slack.clients import SlackError, call_outcome, connection_workspace, error_name
from kourier.slack.identity import token_identity

# What this process last wrote for each Connection: ingress calls note_slack_identity for every event,
# and the identity changes only when a Connection's token does.
_identities_noted: dict[int, tuple[str, str]] = {}


def note_slack_identity(connection_id: int, *, team_id: str, bot_user_id: str) -> None:
    """Keeps the workspace and bot user that Slack's auth.test named for a Connection's token."""
    if not (team_id and bot_user_id) or _identities_noted.get(connection_id) == (team_id, bot_user_id):
        return
    Connection.objects.filter(pk=connection_id).exclude(team_id=team_id, bot_user_id=bot_user_id).update(
        team_id=team_id, bot_user_id=bot_user_id
    )
    _identities_noted[connection_id] = (team_id, bot_user_id)


@dataclass(frozen=True)
class TokenTest:
    """What Slack said of a Connection's bot token: its workspace and bot user, or why not."""

    ok: bool
    team: str = ""
    team_id: str = ""
    bot_user_id: str = ""
    error: str = ""

    def __str__(self) -> str:
        if self.ok:
            return (
                f"The bot token works: workspace {self.team} ({self.team_id}), bot user {self.bot_user_id}."
            )
        return f"The bot token does not work: {self.error}."


def try_bot_token(connection: Connection, *, actor: str = "") -> TokenTest:
    """Asks Slack (``auth.test``) whom the Connection's bot token belongs to, keeps the workspace and
    bot user it names, and audits the test with its outcome (never the token)."""
    try:
        identity = async_to_sync(token_identity)(
            connection.bot_token(), workspace=connection_workspace(connection.pk)
        )
    except MissingSecret as exc:
        tested = TokenTest(ok=False, error=f"{exc.variable} is not set in this process")
    except SlackError as exc:
        tested = TokenTest(ok=False, error=f"Slack answered {error_name(exc) or call_outcome(exc)}")
    else:
        tested = TokenTest(True, identity.team, identity.team_id, identity.bot_user_id)
        note_slack_identity(connection.pk, team_id=identity.team_id, bot_user_id=identity.bot_user_id)
    audit.record(
        "connection.token_tested",
        actor_id=actor,
        actor_kind=actor_kind(actor),
        subject=connection.subject,
        details={"ok": tested.ok, "team_id": tested.team_id, "error": tested.error},
    )
    return tested


def forget_noted_identities() -> None:
    """Makes the next note_slack_identity of each Connection write (for tests; a restart does the same)."""
    _identities_noted.clear()
