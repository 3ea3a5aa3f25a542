"""The files a turn's message shares, sent to the agent as file parts (issue 30, point 2): each checked
against the Binding's bounds and the agent card's input modes (``file_rules``), downloaded with the
Connection's bot token (``kourier.slack.files.download``: streamed, capped, Slack's hosts only), a text
file redacted, and what did not go told in the thread once (a notice of the turn, by its key).

A Connection whose app lacks ``files:read`` is told in the same line, and kept as the workspace's last
Slack failure for the Binding's live page; the turn goes on without the file.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from kourier.a2a.client import A2AClient
from kourier.a2a.errors import A2AError
from kourier.a2a.wire import FilePart
from kourier.slack import failures
from kourier.slack.clients import SlackError, connection_workspace
from kourier.slack.files import FileNotDownloaded, SharedFile, download, download_client
from kourier.slack.outbox import notice_key, post_notice

from . import file_rules
from .file_rules import Refused
from .outbox import TurnOutbox
from .turns import TurnWork

logger = logging.getLogger(__name__)

NOTICE_NAME = "files-not-sent"

_REASONS = {
    FileNotDownloaded.TOO_BIG: file_rules.TOO_BIG,
    FileNotDownloaded.UNREACHABLE: file_rules.UNREACHABLE,
    FileNotDownloaded.NO_SCOPE: file_rules.NO_SCOPE,
}


@dataclass(frozen=True)
class FilesTaken:
    parts: tuple[FilePart, ...]
    refused: tuple[Refused, ...]


async def input_modes(agent: A2AClient) -> tuple[str, ...]:
    """The media types the agent's card takes; none known when the card cannot be read."""
    try:
        return (await agent.agent_card()).input_modes
    except A2AError as error:
        logger.warning("turn.agent_card_unread", extra={"error": type(error).__name__})
        return ()


async def take_files(work: TurnWork, modes: tuple[str, ...]) -> FilesTaken:
    """The file parts of the turn's files that may go, and what did not, in the order shared."""
    spec = work.files_spec
    parts: list[FilePart] = []
    refused: list[Refused] = []
    room = spec.max_turn_bytes
    async with download_client() as client:
        for shared in work.files:
            reason = file_rules.first_refusal(shared.media_type, shared.size, spec, modes)
            if reason is None and shared.size > room:
                reason = file_rules.OVER_TURN_LIMIT
            if reason is not None:
                refused.append(Refused(shared.name, reason))
                continue
            try:
                content = await download(
                    client, shared, token=work.bot_token, max_bytes=min(spec.max_file_bytes, room)
                )
            except FileNotDownloaded as failure:
                reason = _REASONS[failure.reason]
                if failure.reason == FileNotDownloaded.TOO_BIG and room < spec.max_file_bytes:
                    reason = file_rules.OVER_TURN_LIMIT
                refused.append(Refused(shared.name, reason))
                if failure.reason == FileNotDownloaded.NO_SCOPE:
                    failures.remember(
                        connection_workspace(work.connection_id), "url_private", "missing_scope"
                    )
                continue
            room -= len(content)
            parts.append(await _part(shared, content))
    logger.info(
        "turn.files_taken", extra={"turn_id": work.turn_id, "sent": len(parts), "not_sent": len(refused)}
    )
    return FilesTaken(tuple(parts), tuple(refused))


async def _part(shared: SharedFile, content: bytes) -> FilePart:
    if file_rules.is_text(shared.media_type):
        # Redacting a long log costs CPU: off the turn loop, so its other turns go on meanwhile.
        content = await asyncio.to_thread(file_rules.redacted, content, shared.media_type)
    return FilePart(raw=content, media_type=shared.media_type, filename=shared.name)


async def tell_not_sent(work: TurnWork, slack, refused: tuple[Refused, ...]) -> None:
    """The thread is told once, by the notice's key, which files did not go; the turn goes on."""
    if not refused:
        return
    try:
        await post_notice(
            slack,
            work.channel_id,
            work.thread_ts,
            file_rules.not_sent_line(refused),
            key=notice_key(work.message_id, NOTICE_NAME),
            outbox=TurnOutbox(work.turn_id),
        )
    except SlackError as exc:
        # Kept as intended in the outbox: beat's sweep posts it once the turn has ended.
        logger.warning(
            "turn.files_notice_deferred", extra={"turn_id": work.turn_id, "error": exc.response.get("error")}
        )
