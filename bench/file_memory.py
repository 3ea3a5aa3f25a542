"""What one shared file costs the worker's memory on its way to the agent (issue 30, point 6).

    .venv/bin/python bench/file_memory.py                      # a 5 MB image
    .venv/bin/python bench/file_memory.py --file-bytes 20000000

In this one process, against a local HTTP server in a thread (Slack's file host and the agent's
endpoint at once): the file is downloaded as a turn downloads it (``kourier.slack.files.download``),
put in a message as a file part, and sent as the A2A request, twice over:

- streamed: the body as the client sends it (``kourier.a2a.request_body``: the file's base64 written
  a chunk at a time);
- whole: the same request built whole with httpx's ``json=``, as the client did before.

Python's own allocations are traced (tracemalloc) from before the download to after the send:
reported as multiples of the file's size, the peak and what is still held once the request is sent
(the message keeps its file for the turn: a request sent again is the same message). RSS is not
used: the allocator keeps freed pages, so it says more about glibc than about the code; the turns
benchmark (``bench/turns.py --file-bytes``) gives RSS under load.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import threading
import tracemalloc
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kourier.settings")
os.environ.setdefault("DEBUG", "true")

import django

django.setup()

import httpx  # noqa: E402
from django.test import override_settings  # noqa: E402

from kourier.a2a import codec_v10  # noqa: E402
from kourier.a2a.request_body import streamed_request  # noqa: E402
from kourier.a2a.wire import FilePart, Message, Role, TextPart  # noqa: E402
from kourier.slack import files  # noqa: E402

METHOD = "SendStreamingMessage"


def serve(content: bytes) -> ThreadingHTTPServer:
    """GET: the file, as Slack's file host serves it; POST: the agent, reading and dropping the body."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "image/png")
            self.send_header("Content-Length", str(len(content)))
            self.end_headers()
            self.wfile.write(content)

        def do_POST(self) -> None:
            left = int(self.headers["Content-Length"])
            while left:
                left -= len(self.rfile.read(min(65536, left)))
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


async def one_file(url: str, size: int, *, streamed: bool) -> tuple[float, float]:
    """(peak, held after the send) of Python's allocations, in multiples of ``size``."""
    shared = files.SharedFile(id="F1", name="chart.png", media_type="image/png", size=size, url=url)
    async with httpx.AsyncClient() as agent:
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        async with files.download_client() as slack:
            raw = await files.download(slack, shared, token="xoxb-bench", max_bytes=size)
        message = Message(
            "m", Role.USER, (TextPart("what is this?"), FilePart(raw=raw, media_type="image/png"))
        )
        if streamed:
            body = streamed_request("r", METHOD, message, codec_v10.CODEC.send_params)
            await agent.post(url, content=body.chunks(), headers=body.headers())
        else:
            params = codec_v10.CODEC.send_params(message)
            await agent.post(url, json={"jsonrpc": "2.0", "id": "r", "method": METHOD, "params": params})
        held, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return (peak - base) / size, (held - base) / size


def main() -> None:
    logging.getLogger("httpx").setLevel(logging.WARNING)  # its line per request would fill the report
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--file-bytes", type=int, default=5_000_000)
    args = parser.parse_args()
    server = serve(os.urandom(args.file_bytes))
    url = f"http://127.0.0.1:{server.server_port}/"
    print(f"A {args.file_bytes:,}-byte file, downloaded and sent to the agent; Python's allocations:\n")
    print("| request body | peak | held after the send |")
    print("| --- | --- | --- |")
    with override_settings(SLACK_API_URL=url + "api/"):  # the file host counts as Slack's
        for streamed in (True, False):
            peak, held = asyncio.run(one_file(url, args.file_bytes, streamed=streamed))
            name = "streamed (request_body)" if streamed else "built whole (json=)"
            print(f"| {name} | {peak:.2f}x the file | {held:.2f}x the file |")
    server.shutdown()


if __name__ == "__main__":
    main()
