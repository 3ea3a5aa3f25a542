"""A request's body with a message's files streamed: the same JSON a whole body would be, its length
known in advance, and no file's base64 made whole at once."""

import asyncio
import json
import os

import httpx
import pytest

from kourier.a2a import codec_v03, codec_v10
from kourier.a2a.request_body import json_request, streamed_request
from kourier.a2a.wire import FilePart, Message, Role, TextPart

LOG = b"boot ok\n" * 10
IMAGE = os.urandom(2_000_001)  # not a multiple of 3, and several chunks long
MESSAGE = Message(
    "msg-1",
    Role.USER,
    (
        TextPart("what failed? \u2014 \u00e9"),
        FilePart(raw=LOG, media_type="text/plain", filename="boot.log"),
        FilePart(url="https://files.example.test/x.pdf", media_type="application/pdf"),
        FilePart(raw=IMAGE, media_type="image/png", filename="chart.png"),
        FilePart(raw=b"", media_type="text/plain", filename="empty.txt"),
    ),
    context_id="ctx-1",
)


def whole_body(codec, method: str) -> bytes:
    """What httpx's ``json=`` sends: the request built whole."""
    payload = {"jsonrpc": "2.0", "id": "r-1", "method": method, "params": codec.send_params(MESSAGE)}
    return httpx.Request("POST", "http://agent.test/", json=payload).content


@pytest.mark.parametrize("codec", [codec_v03.CODEC, codec_v10.CODEC], ids=["0.3", "1.0"])
def test_a_streamed_body_is_byte_for_byte_the_whole_request(codec):
    method = codec.send_streaming_method

    body = streamed_request("r-1", method, MESSAGE, codec.send_params)

    sent = b"".join(body.iter_bytes())
    assert sent == whole_body(codec, method)
    assert body.headers() == {"Content-Type": "application/json", "Content-Length": str(len(sent))}


def test_the_files_decode_to_their_bytes_in_their_places():
    body = streamed_request("r-1", "SendStreamingMessage", MESSAGE, codec_v10.CODEC.send_params)

    parts = json.loads(b"".join(body.iter_bytes()))["params"]["message"]["parts"]

    assert codec_v10.CODEC.decode_stream_event({"message": {**_message_json(parts)}}).parts == MESSAGE.parts


def _message_json(parts):
    return {"messageId": "msg-1", "role": "ROLE_USER", "parts": parts, "contextId": "ctx-1"}


def test_no_files_base64_is_made_whole_at_once():
    body = streamed_request("r-1", "message/stream", MESSAGE, codec_v03.CODEC.send_params)

    largest = max(len(chunk) for chunk in body.iter_bytes())

    assert largest <= len(IMAGE) / 6  # its base64 is 2.7 MB; a chunk of it 256 KiB


def test_the_async_chunks_are_the_body_httpx_sends():
    body = streamed_request("r-1", "message/stream", MESSAGE, codec_v03.CODEC.send_params)

    async def sent() -> bytes:
        return b"".join([chunk async for chunk in body.chunks()])

    assert asyncio.run(sent()) == whole_body(codec_v03.CODEC, "message/stream")


def test_a_request_with_no_message_is_its_json_in_one_piece():
    body = json_request("r-2", "tasks/resubscribe", {"id": "task-1"})

    assert body.pieces == (
        b'{"jsonrpc":"2.0","id":"r-2","method":"tasks/resubscribe","params":{"id":"task-1"}}',
    )
    assert body.length == len(body.pieces[0])
