"""The app's slash command (issue 33): ``/kourier <question>`` starts a thread in a bound channel as a
mention would (``sessions.surfaces.ask_in_channel``), ``/kourier help`` tells privately what the
channel's Binding allows, ``/kourier status`` privately the person's open sessions and the approvals
waiting for their decision. The command's name is the Connection's ``slashCommand``, the one the Slack
app's manifest declares (the listeners answer no other); the answers name it as Slack sent it.
"""

from __future__ import annotations

from typing import Any

from bindings import directory
from kourier.db import in_database_thread
from kourier.slack.surfaces import HELP, STATUS, SlashCommand
from sessions.surfaces import ask_in_channel, not_bound_line, tell

from .waiting import approvals_waiting_for, help_text, sessions_of, status_text


async def answer_command(connection_id: int, command: SlashCommand, client: Any, *, bot_user_id: str) -> None:
    if command.subcommand == STATUS:
        sessions = await in_database_thread(sessions_of)(connection_id, command.user_id)
        waiting = await approvals_waiting_for(client, connection_id, command.user_id)
        await tell(command.response_url, status_text(sessions, waiting), channel=command.channel_id)
        return
    if command.subcommand == HELP:
        binding = (await directory.acurrent()).binding_for_channel(connection_id, command.channel_id)
        if binding is not None:
            text = help_text(binding, command.command)
        else:
            text = await not_bound_line(connection_id, command.channel_id)
        await tell(command.response_url, text, channel=command.channel_id)
        return
    await ask_in_channel(connection_id, command, client, bot_user_id=bot_user_id)
