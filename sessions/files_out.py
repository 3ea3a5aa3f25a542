"""The files an agent returns, uploaded into the turn's thread (issue 30, point 3), once each, through
the outbox like any post.

Each file is a ``PostIntent`` of kind file keyed by the turn and the file's place in the task. Its
upload takes a ticket (files.getUploadURLExternal), records the ticket's file id on the intent, sends
the bytes, shares the file in the thread (files.completeUploadExternal) and confirms the intent. A
runner that finds the intent recorded but not confirmed (it died mid-upload, or the completion's
answer was lost) looks for that file id in the thread first: found, it is confirmed and not uploaded
again. Bounded by the Binding (``spec.chat.files``): at most ``maxFilesOut`` files, each at most
``maxFileBytes``; a file named by URL only from under one of ``fromUrls``. What is not uploaded is
named in one line of the thread.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from django.utils import timezone

from kourier.a2a.events import FileReturned
from kourier.db import in_database_thread, insert_unless_taken
from kourier.slack import files
from kourier.slack.clients import SlackError, SlackOutcomeUnknown
from kourier.slack.outbox import PostKind, notice_key, post_notice

from . import file_rules
from .file_rules import Refused
from .models import PostIntent
from .outbox import TurnOutbox
from .turns import TurnWork

logger = logging.getLogger(__name__)

NOTICE_NAME = "files-not-uploaded"


@dataclass(frozen=True)
class UploadIntent:
    confirmed: bool
    file_id: str  # the ticket's, once one was taken


def file_key(message_id: str, returned: FileReturned) -> str:
    return f"{message_id}:file-{hashlib.sha256(returned.key.encode()).hexdigest()[:16]}"


def intend_upload(turn_id: int, key: str) -> UploadIntent:
    """Records the upload as intended unless it is; what an earlier attempt left of it."""
    intent = PostIntent(key=key, turn_id=turn_id, kind=PostKind.FILE.value)
    if insert_unless_taken(intent, ("key",)):
        return UploadIntent(confirmed=False, file_id="")
    earlier = PostIntent.objects.get(key=key)
    return UploadIntent(confirmed=earlier.state == PostIntent.State.CONFIRMED, file_id=earlier.file_id)


def note_ticket(key: str, file_id: str) -> None:
    PostIntent.objects.filter(key=key).update(file_id=file_id)


def confirm_upload(key: str) -> None:
    PostIntent.objects.filter(key=key).update(state=PostIntent.State.CONFIRMED, confirmed_at=timezone.now())


async def upload_files(work: TurnWork, slack, returned: Sequence[FileReturned]) -> None:
    """Uploads the turn's returned files into its thread, each once; names in the thread what could not go."""
    spec = work.files_spec
    refused: list[Refused] = []
    async with files.download_client() as client:
        for place, each in enumerate(returned):
            if place >= spec.max_files_out:
                refused.append(Refused(each.filename, file_rules.TOO_MANY))
                continue
            reason = await _upload_once(work, slack, client, each)
            if reason is not None:
                refused.append(Refused(each.filename, reason))
    logger.info(
        "turn.files_uploaded",
        extra={"turn_id": work.turn_id, "returned": len(returned), "not_uploaded": len(refused)},
    )
    if refused:
        try:
            await post_notice(
                slack,
                work.channel_id,
                work.thread_ts,
                file_rules.not_uploaded_line(refused),
                key=notice_key(work.message_id, NOTICE_NAME),
                outbox=TurnOutbox(work.turn_id),
            )
        except SlackError as exc:
            logger.warning(
                "turn.files_notice_deferred",
                extra={"turn_id": work.turn_id, "error": exc.response.get("error")},
            )


async def _upload_once(work: TurnWork, slack, client, returned: FileReturned) -> str | None:
    """Uploads one file unless it was; None when it is in the thread, else why it is not."""
    key = file_key(work.message_id, returned)
    intent = await in_database_thread(intend_upload)(work.turn_id, key)
    if intent.confirmed:
        return None
    try:
        if intent.file_id and await files.is_shared_in_thread(
            slack, work.channel_id, work.thread_ts, intent.file_id
        ):
            logger.info("turn.file_found_shared", extra={"turn_id": work.turn_id})
            await in_database_thread(confirm_upload)(key)
            return None
        content = await _content(work, client, returned)
        if isinstance(content, str):
            return content
        ticket = await files.ticket(slack, filename=returned.filename, length=len(content))
        await in_database_thread(note_ticket)(key, ticket.file_id)
        await files.send_bytes(client, ticket, content, returned.media_type)
        try:
            await files.share(
                slack, ticket, title=returned.filename, channel_id=work.channel_id, thread_ts=work.thread_ts
            )
        except SlackOutcomeUnknown:
            if not await files.is_shared_in_thread(slack, work.channel_id, work.thread_ts, ticket.file_id):
                raise
        await in_database_thread(confirm_upload)(key)
        return None
    except (SlackError, files.FileNotDownloaded, files.UploadFailed) as failure:
        logger.warning(
            "turn.file_not_uploaded", extra={"turn_id": work.turn_id, "error": type(failure).__name__}
        )
        return file_rules.UPLOAD_FAILED


async def _content(work: TurnWork, client, returned: FileReturned) -> bytes | str:
    """The file's bytes, or why they cannot be had within the Binding's bounds."""
    spec = work.files_spec
    if returned.raw is not None:
        content = returned.raw
    elif returned.url and any(returned.url.startswith(prefix) for prefix in spec.from_urls):
        try:
            content = await files.fetch_url(client, returned.url, max_bytes=spec.max_file_bytes)
        except files.FileNotDownloaded as failure:
            return (
                file_rules.TOO_BIG
                if failure.reason == files.FileNotDownloaded.TOO_BIG
                else file_rules.UPLOAD_FAILED
            )
    else:
        return file_rules.URL_NOT_ALLOWED
    if len(content) > spec.max_file_bytes:
        return file_rules.TOO_BIG
    if not content:
        return file_rules.UPLOAD_FAILED
    return content
