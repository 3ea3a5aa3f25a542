"""A JSON-RPC request's body with a message's inline files streamed (issue 30, point 6).

A file part travels as base64 inside the JSON request. Built whole (httpx's ``json=``), a 5 MB file
is held about six times over while the request is made: its base64 as bytes and as text, then the
request's JSON as text and as bytes. Here the message is encoded with each file's bytes stood in for
by a short random marker, and the body is the JSON text around the markers with each file's base64
written in its place a chunk at a time, from the one copy of the file the message holds. The body's
length is known in advance, so it is sent with a Content-Length like any other request.

Pure apart from the random markers: no I/O; the client hands ``body.chunks()`` to httpx.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import secrets
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import Any

from kourier.a2a.wire import FilePart, Message

# 3 bytes become 4 base64 characters: a chunk of whole triples encodes with no padding in between.
_CHUNK_BYTES = 3 * 64 * 1024
_MARKER_BYTES = 18  # 24 base64 characters, no padding: never found by chance in the JSON around it


@dataclass(frozen=True)
class RequestBody:
    """The pieces of the body in order: JSON text (bytes), and the files whose base64 goes between."""

    pieces: tuple[bytes | FileBytes, ...]

    @property
    def length(self) -> int:
        return sum(len(piece) if isinstance(piece, bytes) else piece.encoded_length for piece in self.pieces)

    def headers(self) -> dict[str, str]:
        return {"Content-Type": "application/json", "Content-Length": str(self.length)}

    def iter_bytes(self) -> Iterator[bytes]:
        for piece in self.pieces:
            if isinstance(piece, bytes):
                yield piece
            else:
                yield from piece.base64_chunks()

    async def chunks(self) -> AsyncIterator[bytes]:
        """The body for httpx's AsyncClient (which takes an async iterator), made as it is sent."""
        for chunk in self.iter_bytes():
            yield chunk


@dataclass(frozen=True)
class FileBytes:
    raw: bytes

    @property
    def encoded_length(self) -> int:
        return 4 * ((len(self.raw) + 2) // 3)

    def base64_chunks(self) -> Iterator[bytes]:
        view = memoryview(self.raw)
        for start in range(0, len(view), _CHUNK_BYTES):
            yield base64.b64encode(view[start : start + _CHUNK_BYTES])


def json_request(request_id: str, method: str, params: dict[str, Any]) -> RequestBody:
    """A JSON-RPC request with no file in it: its JSON, in one piece."""
    return RequestBody((_json_text(request_id, method, params).encode(),))


def streamed_request(
    request_id: str, method: str, message: Message, params_of: Callable[[Message], dict[str, Any]]
) -> RequestBody:
    """The JSON-RPC request sending ``message``, with ``params_of`` (the codec's) shaping its params."""
    stand_ins: dict[str, FileBytes] = {}
    parts = []
    for part in message.parts:
        if isinstance(part, FilePart) and part.raw is not None:
            marker = secrets.token_bytes(_MARKER_BYTES)
            stand_ins[base64.b64encode(marker).decode("ascii")] = FileBytes(part.raw)
            part = dataclasses.replace(part, raw=marker)
        parts.append(part)
    params = params_of(dataclasses.replace(message, parts=tuple(parts)))
    return RequestBody(tuple(_split(_json_text(request_id, method, params), stand_ins)))


def _json_text(request_id: str, method: str, params: dict[str, Any]) -> str:
    # The same spelling as httpx's ``json=``, so a body with no file is the bytes it would send.
    return json.dumps(
        {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params},
        ensure_ascii=False,
        separators=(",", ":"),
        allow_nan=False,
    )


def _split(text: str, stand_ins: dict[str, FileBytes]) -> Iterator[bytes | FileBytes]:
    rest = text
    for marker, file in stand_ins.items():
        before, found, rest = rest.partition(f'"{marker}"')
        if not found:
            raise ValueError("a file part's bytes are not where the codec put them")
        yield f'{before}"'.encode()
        yield file
        rest = f'"{rest}'
    yield rest.encode()
