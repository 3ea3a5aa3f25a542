"""The two waits that make cuts and gates deterministic, checked step by step on one event loop.

Over real HTTP these waits are usually won by the SDK anyway, so the end-to-end tests cannot prove
they are needed; here the other side is held still, so a missing wait fails every time.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import MutableMapping
from typing import Any

from a2a.server.events.event_queue_v2 import EventQueueSource
from a2a.types import TaskState, TaskStatusUpdateEvent

from tests.fakes.a2a_agent.executor import EventEmitter
from tests.fakes.a2a_agent.parts import status
from tests.fakes.a2a_agent.records import Recorder
from tests.fakes.a2a_agent.wire import CutOrder, Exchange, Wire

SSE_START = {
    "type": "http.response.start",
    "status": 200,
    "headers": [(b"content-type", b"text/event-stream")],
}


Message = dict[str, Any]


def frame(data: str) -> Message:
    return {"type": "http.response.body", "body": f"data: {data}\r\n\r\n".encode(), "more_body": True}


async def still_waiting(task: asyncio.Task[None]) -> bool:
    """Give every other task its turns; a task that could finish would have by then."""
    for _ in range(20):
        await asyncio.sleep(0)
    return not task.done()


def open_stream(wire: Wire, sent: list[Message], task_id: str = "t1") -> Exchange:
    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(dict(message))

    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": {"id": task_id}})
    return wire.open({"method": "POST", "path": "/", "headers": []}, body.encode(), send)


def test_delivery_waits_until_the_stream_has_sent_every_event() -> None:
    async def scenario() -> None:
        wire, sent = Wire(Recorder(), lambda task_id: 0), list[Message]()
        exchange = open_stream(wire, sent)
        await exchange.guarded_send(SSE_START)

        delivered = asyncio.create_task(wire.deliver_pending("t1", exchange.token, origin_events=2))
        assert await still_waiting(delivered)
        await exchange.guarded_send(frame("first"))
        await exchange.guarded_send(
            {"type": "http.response.body", "body": b": ping\r\n\r\n", "more_body": True}
        )
        assert await still_waiting(delivered)  # a ping is not an event
        await exchange.guarded_send(frame("second"))
        await asyncio.wait_for(delivered, 1)

    asyncio.run(scenario())


def test_a_resubscription_must_send_what_came_after_its_snapshot() -> None:
    async def scenario() -> None:
        events = {"t1": 5}
        wire, sent = Wire(Recorder(), lambda task_id: events.get(task_id or "", 0)), list[Message]()
        exchange = open_stream(wire, sent)
        await exchange.guarded_send(SSE_START)
        await exchange.guarded_send(frame("snapshot"))  # taken when 5 events had been emitted
        events["t1"] = 7

        delivered = asyncio.create_task(wire.deliver_pending("t1", origin_token=None, origin_events=0))
        await exchange.guarded_send(frame("sixth"))
        assert await still_waiting(delivered)
        await exchange.guarded_send(frame("seventh"))
        await asyncio.wait_for(delivered, 1)

    asyncio.run(scenario())


def test_after_a_cut_is_ordered_the_app_cannot_send_anymore() -> None:
    async def scenario() -> None:
        wire, sent = Wire(Recorder(), lambda task_id: 0), list[Message]()
        exchange = open_stream(wire, sent)
        await exchange.guarded_send(SSE_START)
        await exchange.guarded_send(frame("before"))

        exchange.order_cut(CutOrder("drop"))
        await exchange.guarded_send(frame("after"))

        assert [message.get("body") for message in sent] == [None, b"data: before\r\n\r\n"]

    asyncio.run(scenario())


def test_applied_waits_until_the_sdk_consumer_has_processed_every_event() -> None:
    async def scenario() -> None:
        queue = EventQueueSource()
        emitter = EventEmitter(queue, {}, "t1")
        for _ in range(2):
            await emitter.emit(
                TaskStatusUpdateEvent(
                    task_id="t1", context_id="c1", status=status(TaskState.TASK_STATE_WORKING)
                )
            )

        applied = asyncio.create_task(emitter.applied())
        assert await still_waiting(applied)
        await queue.dequeue_event()
        queue.task_done()
        assert await still_waiting(applied)  # one of two processed
        await queue.dequeue_event()
        queue.task_done()
        await asyncio.wait_for(applied, 1)
        await queue.close(immediate=True)

    asyncio.run(scenario())
