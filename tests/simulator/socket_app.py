"""A bare Socket Mode app for the fake's own tests: opens connections the documented way (the real
slack_sdk WebClient calls apps.connections.open, aiohttp opens the websocket), records every frame,
and acks envelopes as a test tells it to."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from slack_sdk import WebClient

AckPolicy = Callable[[dict[str, Any]], dict[str, Any] | None]  # the envelope -> the ack to send, or None


def ack_everything(envelope: dict[str, Any]) -> dict[str, Any] | None:
    return {"envelope_id": envelope["envelope_id"]}


def ack_nothing(envelope: dict[str, Any]) -> dict[str, Any] | None:
    return None


@dataclass
class Link:
    """One websocket the app holds, and the frames it received, decoded."""

    number: int
    frames: list[dict[str, Any]] = field(default_factory=list)
    closed: bool = False
    ws: aiohttp.ClientWebSocketResponse | None = None

    @property
    def envelopes(self) -> list[dict[str, Any]]:
        return [f for f in self.frames if "envelope_id" in f]

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        return [f for f in self.frames if f.get("type") == kind]


class SocketApp:
    def __init__(self, api_url: str, app_token: str, ack: AckPolicy = ack_everything) -> None:
        self.web = WebClient(base_url=api_url, timeout=10)
        self.app_token = app_token
        self.ack = ack
        self.links: list[Link] = []
        self.changed = threading.Condition()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._session: aiohttp.ClientSession | None = None
        self._readers: set[asyncio.Future[None]] = set()

    def open_url(self) -> str:
        return self.web.apps_connections_open(app_token=self.app_token)["url"]

    def connect(self, url: str | None = None) -> Link:
        link = Link(len(self.links) + 1)
        self.links.append(link)
        asyncio.run_coroutine_threadsafe(self._connect(link, url or self.open_url()), self._loop).result(10)
        self.wait(lambda: bool(link.frames) or link.closed)
        return link

    def send(self, link: Link, message: dict[str, Any]) -> None:
        assert link.ws is not None
        asyncio.run_coroutine_threadsafe(link.ws.send_str(json.dumps(message)), self._loop).result(10)

    def wait(self, condition: Callable[[], bool], timeout: float = 10.0) -> None:
        with self.changed:
            if not self.changed.wait_for(condition, timeout):
                raise AssertionError("the condition did not hold in time")

    def close(self) -> None:
        async def shut() -> None:
            for link in self.links:
                if link.ws is not None:
                    await link.ws.close()
            if self._session is not None:
                await self._session.close()

        asyncio.run_coroutine_threadsafe(shut(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    async def _connect(self, link: Link, url: str) -> None:
        if self._session is None:
            self._session = aiohttp.ClientSession()
        link.ws = await self._session.ws_connect(url)
        self._readers.add(asyncio.ensure_future(self._read(link)))

    async def _read(self, link: Link) -> None:
        assert link.ws is not None
        async for message in link.ws:
            if message.type != aiohttp.WSMsgType.TEXT:
                continue
            try:
                frame = json.loads(message.data)
            except ValueError:
                frame = {"not_json": message.data}
            with self.changed:
                link.frames.append(frame)
                self.changed.notify_all()
            if "envelope_id" in frame:
                ack = self.ack(frame)
                if ack is not None:
                    await link.ws.send_str(json.dumps(ack))
        with self.changed:
            link.closed = True
            self.changed.notify_all()
