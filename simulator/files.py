"""Files: what a person shares (a ``file_share`` message, its ``files`` array), their private URLs, and
the app's external upload (files.getUploadURLExternal, the upload URL, files.completeUploadExternal).

Shapes follow docs/slack-platform.md §7 and Slack's method reference: a file object carries ``id``,
``name``, ``title``, ``mimetype``, ``filetype``, ``size``, ``url_private`` and ``url_private_download``
(``https://files.slack.com/files-pri/<team>-<file>/<name>``; here the fake's own address). A private
URL answers the file's bytes to a bot token of its workspace with ``files:read``; without that scope
Slack answers its sign-in page (HTML, status 200), as apps that lack the scope find. The upload URL
takes the bytes raw or as a multipart form; the file is shared only when completed, in one channel and
thread, as a message of the app with the file.
"""

from __future__ import annotations

import email.parser
import email.policy
import json
import secrets
from dataclasses import dataclass
from typing import Any

from .errors import SlackError, invalid_arguments
from .methods import new_bot_message, publish_bot_message, read_thread_ts
from .pipeline import HttpAnswer, HttpRequest
from .state import SlackFile, SlackState
from .web_api import Call, web_method

DOWNLOAD_PREFIX = "/files-pri/"
UPLOAD_PREFIX = "/upload/v1/"
MAX_FILES_PER_COMPLETE = 10  # files.completeUploadExternal shares at most ten files at once
SIGN_IN_PAGE = b"<!DOCTYPE html><html><head><title>Slack</title></head><body>Sign in to Slack</body></html>"


@dataclass(frozen=True)
class FileView:
    id: str
    name: str
    title: str
    mimetype: str
    content: bytes
    shared: bool  # completed: shared in a conversation, or attached by a person


def file_view(file: SlackFile) -> FileView:
    return FileView(file.id, file.name, file.title, file.mimetype, file.content or b"", file.completed)


def add_shared_file(
    state: SlackState, team_id: str, user: str, name: str, content: bytes, mimetype: str
) -> SlackFile:
    """A file a person attaches to a message: stored, complete, ready to be shared."""
    file = SlackFile(
        id=state.new_id("F"),
        team_id=team_id,
        name=name,
        title=name,
        mimetype=mimetype,
        user=user,
        created=int(state.now()),
        content=content,
        completed=True,
    )
    state.files[file.id] = file
    return file


# The private URL.


def serve_private_url(state: SlackState, request: HttpRequest) -> HttpAnswer:
    """GET /files-pri/<team>-<file>/[download/]<name>: the bytes, to a bot token of the file's workspace
    that has files:read; the sign-in page to a token without it (or none); 404 for no such file."""
    parts = request.path[len(DOWNLOAD_PREFIX) :].split("/")
    team_id, _, file_id = parts[0].partition("-")
    with state.lock:
        file = state.files.get(file_id)
        if request.method != "GET" or file is None or file.team_id != team_id or not file.reachable:
            return HttpAnswer(404, b"Not Found", {"Content-Type": "text/plain"})
        authorization = request.headers.get("authorization", "")
        token = authorization[len("Bearer ") :].strip() if authorization.startswith("Bearer ") else ""
        known = state.tokens.get(token)
        workspace = state.workspaces.get(known[0]) if known is not None and known[1] == "bot" else None
        if workspace is None or workspace.team_id != team_id or "files:read" not in workspace.scopes:
            return HttpAnswer(200, SIGN_IN_PAGE, {"Content-Type": "text/html; charset=utf-8"})
        content = file.content or b""
        disposition = "attachment" if "/download/" in request.path else "inline"
        return HttpAnswer(
            200,
            content,
            {
                "Content-Type": file.mimetype,
                "Content-Disposition": f'{disposition}; filename="{file.name}"',
            },
        )


# The upload.


def _upload_scope(call: Call) -> None:
    if "files:write" not in call.workspace.scopes:
        provided = ",".join(sorted(call.workspace.scopes)) or "chat:write"
        raise SlackError("missing_scope", needed="files:write", provided=provided)


@web_method("files.getUploadURLExternal")
def files_get_upload_url_external(call: Call) -> dict[str, Any]:
    _upload_scope(call)
    filename = call.args.required_text("filename")
    length = call.args.integer("length", 0, "invalid_arguments")
    if length <= 0:
        raise invalid_arguments("length must be a positive integer")
    file = SlackFile(
        id=call.state.new_id("F"),
        team_id=call.workspace.team_id,
        name=filename,
        title=filename,
        mimetype="application/octet-stream",
        user=call.app.bot_user_id,
        created=int(call.now),
        declared_length=length,
        upload_token=secrets.token_urlsafe(16),
    )
    call.state.files[file.id] = file
    return {"upload_url": f"{call.state.files_base}upload/v1/{file.upload_token}", "file_id": file.id}


def receive_upload(state: SlackState, request: HttpRequest) -> HttpAnswer:
    """POST <upload_url>: the file's bytes, raw or as a multipart form (its file field); 200 "OK - <size>"."""
    token = request.path[len(UPLOAD_PREFIX) :]
    with state.lock:
        file = next((f for f in state.files.values() if f.upload_token == token and token), None)
        if request.method != "POST" or file is None or file.completed:
            return HttpAnswer(404, b"Not Found", {"Content-Type": "text/plain"})
        content, mimetype = _uploaded(request)
        file.content = content
        if mimetype:
            file.mimetype = mimetype
        return HttpAnswer(200, f"OK - {len(content)}".encode(), {"Content-Type": "text/plain"})


def _uploaded(request: HttpRequest) -> tuple[bytes, str | None]:
    content_type = request.headers.get("content-type", "")
    if not content_type.lower().startswith("multipart/form-data"):
        mimetype = content_type.split(";")[0].strip() or None
        return request.body, None if mimetype in (None, "application/octet-stream") else mimetype
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        f"Content-Type: {content_type}\r\n\r\n".encode() + request.body
    )
    for part in message.iter_parts():
        if part.get_param("filename", header="content-disposition") is not None:
            payload = part.get_payload(decode=True)
            kind = part.get_content_type()
            return (payload if isinstance(payload, bytes) else b""), (
                None if kind in ("application/octet-stream", "text/plain") and not payload else kind
            )
    return b"", None


@web_method("files.completeUploadExternal")
def files_complete_upload_external(call: Call) -> dict[str, Any]:
    _upload_scope(call)
    wanted = call.args.raw("files")
    if isinstance(wanted, str):
        try:
            wanted = json.loads(wanted)
        except ValueError:
            raise invalid_arguments("files must be a JSON array") from None
    if not isinstance(wanted, list) or not wanted or not all(isinstance(f, dict) for f in wanted):
        raise invalid_arguments("files must be a non-empty array of objects")
    if len(wanted) > MAX_FILES_PER_COMPLETE:
        raise invalid_arguments(f"at most {MAX_FILES_PER_COMPLETE} files")
    found: list[SlackFile] = []
    for entry in wanted:
        file = call.state.files.get(str(entry.get("id", "")))
        if file is None or file.team_id != call.workspace.team_id or file.content is None:
            raise SlackError("file_not_found")
        if file.declared_length is not None and len(file.content) != file.declared_length:
            raise SlackError("file_upload_size_mismatch")
        found.append(file)
    channel = call.postable_channel("channel_id") if call.args.given("channel_id") else None
    thread_ts = read_thread_ts(call, channel) if channel is not None else None
    for file, entry in zip(found, wanted, strict=True):
        file.completed = True
        if isinstance(entry.get("title"), str) and entry["title"]:
            file.title = entry["title"]
    if channel is not None:
        message = new_bot_message(call, channel, thread_ts)
        message.subtype = "file_share"
        message.text = call.args.text("initial_comment") or ""
        message.files = [file.id for file in found]
        call.state.add_message(message)
        publish_bot_message(call, message, channel)
    return {"files": [{"id": file.id, "title": file.title} for file in found]}
