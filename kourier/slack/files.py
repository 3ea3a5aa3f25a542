"""Files in Slack (docs/slack-platform.md §7): what a message shares (``SharedFile``, read from its
``files`` array), a shared file's bytes downloaded with the bot token, and a file uploaded into a
thread with Slack's external upload.

Downloads are streamed with a cap (the bytes are held once, never past the cap), only from Slack's
file hosts or SLACK_API_URL's, never from a URL a message names elsewhere; a redirect is followed only
to another of those hosts, so the bot token goes nowhere else. A private URL that answers Slack's
sign-in page (HTML for a file that is not) means the app lacks ``files:read``.

The upload is three steps the caller keeps apart, so that each is recorded before the next
(sessions/outbox.py): ``files.getUploadURLExternal`` (``ticket``), the bytes POSTed to its URL
(``send_bytes``), ``files.completeUploadExternal`` in the thread (``share``). The two Web API calls go
through the caller's client (clients.py: budgets, retries); the bytes go to the upload URL Slack gave.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx
from django.conf import settings

from kourier.egress import RoutedTransport

from .threads import thread_messages

logger = logging.getLogger(__name__)

# Slack's own file hosts (url_private, url_private_download); SLACK_API_URL's host is added to them.
SLACK_FILE_HOSTS = frozenset({"files.slack.com", "files-origin.slack.com", "files-edge.slack.com"})
DOWNLOAD_TIMEOUT_SECONDS = 30.0
MAX_REDIRECTS = 3
_CHUNK = 64 * 1024


@dataclass(frozen=True)
class SharedFile:
    """A file a person's message shares, as its event names it."""

    id: str
    name: str
    media_type: str
    size: int
    url: str  # url_private_download, else url_private; "" when Slack gave none (a file without access)

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "media_type": self.media_type,
            "size": self.size,
            "url": self.url,
        }

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> SharedFile:
        return cls(
            id=str(value.get("id", "")),
            name=str(value.get("name", "")),
            media_type=str(value.get("media_type", "")),
            size=int(value.get("size") or 0),
            url=str(value.get("url", "")),
        )


def read_shared_files(files: object) -> tuple[SharedFile, ...]:
    """A message event's ``files`` array, each file as the product keeps it; entries that are not
    objects with an id are left out (Slack sends none such)."""
    if not isinstance(files, list):
        return ()
    found: list[SharedFile] = []
    for entry in files:
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str) or not entry["id"]:
            continue
        url = entry.get("url_private_download") or entry.get("url_private") or ""
        size = entry.get("size")
        found.append(
            SharedFile(
                id=entry["id"],
                name=str(entry.get("name") or entry.get("title") or entry["id"]),
                media_type=str(entry.get("mimetype") or "application/octet-stream").lower(),
                size=size if isinstance(size, int) and size >= 0 else 0,
                url=url if isinstance(url, str) else "",
            )
        )
    return tuple(found)


class FileNotDownloaded(Exception):
    """Why a shared file's bytes were not taken: ``TOO_BIG``, ``UNREACHABLE`` or ``NO_SCOPE``."""

    TOO_BIG = "too big"
    UNREACHABLE = "unreachable"
    NO_SCOPE = "no files:read"

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def file_hosts() -> frozenset[str]:
    api = urlsplit(settings.SLACK_API_URL)
    return SLACK_FILE_HOSTS | ({api.netloc.lower()} if api.netloc else set())


def is_slack_file_url(url: str, hosts: frozenset[str] | None = None) -> bool:
    """Whether ``url`` is on one of Slack's file hosts (https), or on SLACK_API_URL's host."""
    parts = urlsplit(url)
    hosts = file_hosts() if hosts is None else hosts
    api = urlsplit(settings.SLACK_API_URL)
    if parts.netloc.lower() == api.netloc.lower() and parts.scheme == api.scheme:
        return True
    return parts.scheme == "https" and (parts.hostname or "").lower() in hosts


def download_client() -> httpx.AsyncClient:
    """A client for downloads: redirects are never followed by httpx (``download`` decides), and the
    egress proxy is the one the environment names for each URL."""
    return httpx.AsyncClient(
        transport=RoutedTransport(),
        follow_redirects=False,
        trust_env=False,
        timeout=DOWNLOAD_TIMEOUT_SECONDS,
    )


async def download(client: httpx.AsyncClient, shared: SharedFile, *, token: str, max_bytes: int) -> bytes:
    """The file's bytes, at most ``max_bytes`` of them, streamed; else ``FileNotDownloaded``."""
    if shared.size > max_bytes:
        raise FileNotDownloaded(FileNotDownloaded.TOO_BIG)
    url = shared.url
    for _ in range(MAX_REDIRECTS + 1):
        if not url or not is_slack_file_url(url):
            logger.warning("slack.file_url_refused", extra={"file_id": shared.id})
            raise FileNotDownloaded(FileNotDownloaded.UNREACHABLE)
        try:
            async with client.stream("GET", url, headers={"Authorization": f"Bearer {token}"}) as answer:
                if answer.is_redirect:
                    url = urljoin(url, answer.headers.get("location", ""))
                    continue
                return await _read_body(answer, shared, max_bytes)
        except httpx.HTTPError as error:
            logger.warning(
                "slack.file_unreachable", extra={"file_id": shared.id, "error": type(error).__name__}
            )
            raise FileNotDownloaded(FileNotDownloaded.UNREACHABLE) from None
    raise FileNotDownloaded(FileNotDownloaded.UNREACHABLE)


async def _read_body(answer: httpx.Response, shared: SharedFile, max_bytes: int) -> bytes:
    if answer.status_code != 200:
        logger.warning("slack.file_unreachable", extra={"file_id": shared.id, "status": answer.status_code})
        raise FileNotDownloaded(FileNotDownloaded.UNREACHABLE)
    served = answer.headers.get("content-type", "").split(";")[0].strip().lower()
    if served == "text/html" and shared.media_type != "text/html":
        raise FileNotDownloaded(FileNotDownloaded.NO_SCOPE)  # Slack's sign-in page, not the file
    declared = answer.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
        raise FileNotDownloaded(FileNotDownloaded.TOO_BIG)
    # BytesIO, not a bytearray: its value is handed on without a copy, so the file is held once.
    body = io.BytesIO()
    async for chunk in answer.aiter_raw(_CHUNK):
        if body.tell() + len(chunk) > max_bytes:
            raise FileNotDownloaded(FileNotDownloaded.TOO_BIG)
        body.write(chunk)
    return body.getvalue()


# The upload.


@dataclass(frozen=True)
class UploadTicket:
    file_id: str
    upload_url: str


async def ticket(slack: Any, *, filename: str, length: int) -> UploadTicket:
    """files.getUploadURLExternal: where to send the bytes, and the file's id."""
    answer = await slack.files_getUploadURLExternal(filename=filename, length=length)
    return UploadTicket(file_id=str(answer["file_id"]), upload_url=str(answer["upload_url"]))


class UploadFailed(Exception):
    """The upload URL did not take the bytes (not Slack's, unreachable, or not 200)."""


async def send_bytes(
    client: httpx.AsyncClient, upload: UploadTicket, content: bytes, media_type: str
) -> None:
    """The bytes POSTed to the upload URL Slack gave (only to Slack's hosts); ``UploadFailed`` else."""
    if not is_slack_file_url(upload.upload_url) and not _is_slack_upload_host(upload.upload_url):
        raise UploadFailed("not a Slack upload URL")
    try:
        answer = await client.post(upload.upload_url, content=content, headers={"Content-Type": media_type})
    except httpx.HTTPError as error:
        raise UploadFailed(type(error).__name__) from None
    if answer.status_code != 200:
        raise UploadFailed(f"HTTP {answer.status_code}")


def _is_slack_upload_host(url: str) -> bool:
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    return parts.scheme == "https" and (host == "files.slack.com" or host.endswith(".slack.com"))


async def share(slack: Any, upload: UploadTicket, *, title: str, channel_id: str, thread_ts: str) -> None:
    """files.completeUploadExternal: the uploaded file shared in the thread, with its title."""
    await slack.files_completeUploadExternal(
        files=[{"id": upload.file_id, "title": title}], channel_id=channel_id, thread_ts=thread_ts
    )


async def is_shared_in_thread(slack: Any, channel_id: str, thread_ts: str, file_id: str) -> bool:
    """Whether a message of the thread shares the file (how an upload whose completion's answer was
    lost, or whose runner died after it, is found instead of shared again)."""
    async for message in thread_messages(slack, channel_id, thread_ts):
        if file_id in shared_file_ids([message]):
            return True
    return False


def shared_file_ids(messages: Sequence[Mapping[str, Any]]) -> set[str]:
    return {
        str(file.get("id"))
        for message in messages
        for file in message.get("files") or ()
        if isinstance(file, dict)
    }


async def fetch_url(client: httpx.AsyncClient, url: str, *, max_bytes: int) -> bytes:
    """A file an agent names by URL (one its Binding allows: the caller checks), streamed with a cap
    and no credentials; ``FileNotDownloaded`` when too big or unreachable."""
    try:
        async with client.stream("GET", url) as answer:
            if answer.status_code != 200:
                raise FileNotDownloaded(FileNotDownloaded.UNREACHABLE)
            body = bytearray()
            async for chunk in answer.aiter_raw(_CHUNK):
                if len(body) + len(chunk) > max_bytes:
                    raise FileNotDownloaded(FileNotDownloaded.TOO_BIG)
                body += chunk
            return bytes(body)
    except httpx.HTTPError:
        raise FileNotDownloaded(FileNotDownloaded.UNREACHABLE) from None
