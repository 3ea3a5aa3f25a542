"""The client's wire handling, against an in-process endpoint (httpx.MockTransport)."""

import asyncio
import json
import uuid

import httpx
import pytest

from kourier.a2a import codec_v03, codec_v10, errors
from kourier.a2a.client import A2AClient, AgentCards
from kourier.a2a.wire import Message, Role, StatusUpdate, Task, TaskState, TextPart
from tests.a2a.transcripts import V010, V1ALPHA, exchanges
from tests.a2a.wire_stub import AGENT_URL, CARD_V03, CARD_V10, WireStub, error_body, result_body, sse_response
from tests.support.metrics import sample

pytestmark = pytest.mark.anyio

HITL = "https://kagent.dev/extensions/hitl/v1"
HELLO = Message("msg-1", Role.USER, (TextPart("hello"),), context_id="ctx-1")
WORKING = {"statusUpdate": {"taskId": "t1", "contextId": "ctx-1", "status": {"state": "TASK_STATE_WORKING"}}}
COMPLETED = {
    "statusUpdate": {"taskId": "t1", "contextId": "ctx-1", "status": {"state": "TASK_STATE_COMPLETED"}}
}
CHUNK = {
    "artifactUpdate": {
        "taskId": "t1",
        "contextId": "ctx-1",
        "artifact": {"artifactId": "a", "parts": [{"text": "hi"}]},
    }
}


def task_json(task_id="t1", state="TASK_STATE_COMPLETED", history=()):
    return {"id": task_id, "contextId": "ctx-1", "status": {"state": state}, "history": list(history)}


@pytest.fixture
def stub():
    return WireStub()


def client_for(stub, **options):
    options.setdefault("headers", {"Authorization": "Bearer service-identity"})
    return A2AClient(AGENT_URL, transport=stub.transport(), **options)


async def collect(stream):
    return [event async for event in stream]


# -- versions, card, headers ----------------------------------------------------------------------------


async def test_a_1_0_card_means_1_0_methods_and_headers_on_every_request(stub):
    stub.on("SendStreamingMessage", stub.stream(WORKING, COMPLETED))
    stub.on("GetTask", stub.result(task_json()))
    async with client_for(stub, extensions=[HITL]) as client:
        events = await collect(client.send_streaming(HELLO))
        task = await client.get_task("t1", history_length=5)
        assert await client.resolved_version() == "1.0"
        card = await client.agent_card()

    assert [type(event) for event in events] == [StatusUpdate, StatusUpdate]
    assert task.state is TaskState.COMPLETED
    assert card.extensions == (HITL,)
    assert [request.method for request in stub.requests] == ["GET card", "SendStreamingMessage", "GetTask"]
    for request in stub.requests:
        assert request.headers["authorization"] == "Bearer service-identity"
    for request in stub.requests[1:]:
        assert request.headers["a2a-version"] == "1.0"
        assert request.headers["a2a-extensions"] == HITL
    send = stub.calls("SendStreamingMessage")[0]
    assert send.headers["accept"] == "text/event-stream"
    assert send.params == {"message": codec_v10.CODEC.encode_message(HELLO)}
    assert stub.calls("GetTask")[0].params == {"id": "t1", "historyLength": 5}


async def test_a_0_3_card_means_0_3_methods_and_json(stub):
    stub.card = CARD_V03
    stub.on(
        "message/stream",
        stub.stream(
            {
                "kind": "status-update",
                "taskId": "t1",
                "contextId": "c",
                "final": True,
                "status": {"state": "completed"},
            }
        ),
    )
    stub.on(
        "tasks/cancel",
        stub.result({"kind": "task", "id": "t1", "contextId": "c", "status": {"state": "canceled"}}),
    )
    async with client_for(stub, extensions=[HITL]) as client:
        [event] = await collect(client.send_streaming(HELLO))
        canceled = await client.cancel_task("t1")

    assert event.final
    assert event.state is TaskState.COMPLETED
    assert canceled.state is TaskState.CANCELED
    send = stub.calls("message/stream")[0]
    assert send.params == {"message": codec_v03.CODEC.encode_message(HELLO)}
    assert send.params["message"]["kind"] == "message"
    assert send.headers["x-a2a-extensions"] == HITL


async def test_a_card_without_a_version_is_0_3(stub):
    stub.card = {"name": "old", "url": AGENT_URL}
    async with client_for(stub) as client:
        assert await client.resolved_version() == "0.3"


async def test_a_pinned_version_needs_no_card(stub):
    stub.card = None
    stub.on(
        "tasks/get",
        stub.result({"kind": "task", "id": "t1", "contextId": "c", "status": {"state": "working"}}),
    )
    async with client_for(stub, protocol_version="0.3") as client:
        await client.get_task("t1")
    assert [request.method for request in stub.requests] == ["tasks/get"]


async def test_the_card_is_fetched_once(stub):
    stub.on("GetTask", stub.result(task_json()))
    stub.on("GetTask", stub.result(task_json()))
    async with client_for(stub) as client:
        await client.get_task("t1")
        await client.get_task("t1")
    assert len(stub.calls("GET card")) == 1


async def test_the_card_may_move_the_endpoint_on_the_same_server_only(stub):
    rpc_calls: list[str] = []

    async def record(request):
        if request.method == "POST":
            rpc_calls.append(str(request.url))
        return await stub.handle(request)

    stub.card = {
        "supportedInterfaces": [
            {"url": "http://agent.test/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ]
    }
    stub.on("GetTask", stub.result(task_json()))
    async with A2AClient(AGENT_URL, transport=httpx.MockTransport(record)) as client:
        await client.get_task("t1")

    elsewhere = WireStub(
        card={
            "supportedInterfaces": [
                {"url": "http://evil.test/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
            ]
        }
    )
    elsewhere.on("GetTask", elsewhere.result(task_json()))
    other_calls: list[str] = []

    async def record_other(request):
        if request.method == "POST":
            other_calls.append(str(request.url))
        return await elsewhere.handle(request)

    async with A2AClient(AGENT_URL, transport=httpx.MockTransport(record_other)) as client:
        await client.get_task("t1")

    assert rpc_calls == ["http://agent.test/rpc"]
    assert other_calls == [AGENT_URL]


async def test_a_missing_card_is_an_http_error(stub):
    stub.card = None
    async with client_for(stub) as client:
        with pytest.raises(errors.AgentHTTPError) as raised:
            await client.get_task("t1")
    assert raised.value.status_code == 404
    assert not raised.value.retryable


def test_an_unknown_pinned_version_is_refused():
    with pytest.raises(ValueError, match="protocol version"):
        A2AClient(AGENT_URL, protocol_version="2.0")  # type: ignore[arg-type]


# -- streams -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "name", "index", "method"),
    [
        (V1ALPHA, "01_two_tools_approve_one_deny_one", 0, "SendStreamingMessage"),
        (V1ALPHA, "03_ask_user", 1, "SendStreamingMessage"),
        (V010, "01_two_tools_approve_one_deny_one", 0, "message/stream"),
        (V010, "03_ask_user", 1, "message/stream"),
    ],
)
async def test_captured_streams_arrive_event_by_event(stub, line, name, index, method):
    exchange = exchanges(line, name)[index]
    codec = codec_v10.CODEC if line == V1ALPHA else codec_v03.CODEC
    stub.card = CARD_V10 if line == V1ALPHA else CARD_V03
    # The server keeps the stream open after the last event: the client must stop by itself.
    stub.on(method, stub.stream(*exchange.results, hang=True))
    async with client_for(stub) as client:
        events = await collect(client.send_streaming(HELLO))
    assert events == [codec.decode_stream_event(result) for result in exchange.results]
    assert stub.responses[0].is_closed


async def test_keep_alives_comments_and_multi_line_data(stub):
    def reply(body):
        chunk = json.dumps(result_body(body["id"], CHUNK))
        middle = chunk.index('"result"')  # SSE joins data lines with a newline: split between members
        return sse_response(
            [],
            frames=[
                b": keep-alive comment\n\n",
                b"event: message\ndata: \n\n",  # an event without data
                f"data: {chunk[:middle]}\ndata: {chunk[middle:]}\n\n".encode(),  # one event over two lines
                f"data: {json.dumps(result_body(body['id'], COMPLETED))}\n\n".encode(),
            ],
        )

    stub.on("SendStreamingMessage", reply)
    async with client_for(stub) as client:
        events = await collect(client.send_streaming(HELLO))
    assert [type(event).__name__ for event in events] == ["ArtifactUpdate", "StatusUpdate"]
    assert events[0].parts == (TextPart("hi"),)


async def test_a_stream_that_closes_before_a_final_state_is_dropped(stub):
    stub.on("SendStreamingMessage", stub.stream(WORKING, CHUNK))
    seen = []

    async def read_all(client):
        async for event in client.send_streaming(HELLO):
            seen.append(event)

    async with client_for(stub) as client:
        with pytest.raises(errors.StreamDropped) as raised:
            await read_all(client)
    assert len(seen) == 2
    assert (raised.value.task_id, raised.value.context_id) == ("t1", "ctx-1")
    assert raised.value.retryable
    assert raised.value.outcome_unknown


@pytest.mark.parametrize(
    "cut",
    [httpx.RemoteProtocolError("peer closed connection"), httpx.ReadError("connection reset")],
)
async def test_a_connection_lost_mid_stream_is_dropped(stub, cut):
    stub.on("SendStreamingMessage", stub.stream(WORKING, then=cut))
    async with client_for(stub) as client:
        with pytest.raises(errors.StreamDropped) as raised:
            await collect(client.send_streaming(HELLO))
    assert raised.value.task_id == "t1"
    assert "peer closed" not in str(raised.value)


async def test_a_connection_lost_before_any_event_leaves_the_fate_unknown(stub):
    stub.on("SendStreamingMessage", stub.fail(httpx.RemoteProtocolError("Server disconnected")))
    async with client_for(stub) as client:
        with pytest.raises(errors.StreamDropped) as raised:
            await collect(client.send_streaming(HELLO))
    assert raised.value.task_id is None
    assert raised.value.outcome_unknown


async def test_the_stream_of_a_paused_task_ends_there_although_the_server_keeps_it_open(stub):
    snapshot = exchanges(V1ALPHA, "05_errors_and_lifecycle")[8].results[0]
    stub.on("SubscribeToTask", stub.stream(snapshot, hang=True))
    async with client_for(stub) as client:
        [task] = await collect(client.subscribe("1c862656-fc37-48e4-a4b2-19a81cb553ad"))
    assert isinstance(task, Task)
    assert task.state is TaskState.INPUT_REQUIRED
    assert stub.calls("SubscribeToTask")[0].params == {"id": "1c862656-fc37-48e4-a4b2-19a81cb553ad"}


async def test_0_3_resubscribe_method(stub):
    stub.card = CARD_V03
    async with client_for(stub) as client:
        with pytest.raises(errors.MethodNotFound):
            await collect(client.subscribe("t1"))
    assert stub.calls("tasks/resubscribe")


async def test_leaving_a_stream_early_closes_the_connection(stub):
    stub.on("SendStreamingMessage", stub.stream(WORKING, CHUNK, hang=True))
    async with client_for(stub) as client:
        async with client.send_streaming(HELLO) as stream:
            async for _ in stream:
                break
        assert stub.responses[0].is_closed


# -- timeouts --------------------------------------------------------------------------------------------


async def test_silence_longer_than_the_read_timeout(stub):
    stub.on("SendStreamingMessage", stub.stream(WORKING, then=httpx.ReadTimeout("timed out")))
    async with client_for(stub, read_timeout=7) as client:
        with pytest.raises(errors.AgentTimeout, match="no event for 7 s") as raised:
            await collect(client.send_streaming(HELLO))
    assert raised.value.retryable
    assert raised.value.outcome_unknown


async def test_a_stream_longer_than_the_request_timeout(stub):
    stub.on("SendStreamingMessage", stub.stream(WORKING, hang=True))
    # The agent answers, then never says another word nor closes: only the whole-request deadline ends it.
    async with client_for(stub, protocol_version="1.0", request_timeout=0.2) as client:
        with pytest.raises(errors.AgentTimeout) as raised:
            await collect(client.send_streaming(HELLO))
    assert raised.value.outcome_unknown
    assert stub.calls("SendStreamingMessage")


async def test_a_unary_call_longer_than_the_request_timeout(stub):
    async def never_answers(request):
        await asyncio.Event().wait()

    async with A2AClient(
        AGENT_URL, protocol_version="1.0", request_timeout=0.05, transport=httpx.MockTransport(never_answers)
    ) as client:
        with pytest.raises(errors.AgentTimeout, match="no answer within"):
            await client.get_task("t1")


@pytest.mark.parametrize(
    ("failure", "expected", "outcome_unknown"),
    [
        (httpx.ConnectError("refused"), errors.AgentUnreachable, False),
        (httpx.ConnectTimeout("slow"), errors.AgentUnreachable, False),
        (httpx.ReadTimeout("slow"), errors.AgentTimeout, True),
        (httpx.ReadError("reset"), errors.AgentUnreachable, True),
    ],
)
async def test_transport_failures_of_unary_calls(stub, failure, expected, outcome_unknown):
    stub.on("GetTask", stub.fail(failure))
    async with client_for(stub) as client:
        with pytest.raises(expected) as raised:
            await client.get_task("t1")
    assert raised.value.retryable
    assert raised.value.outcome_unknown is outcome_unknown


async def test_an_unreachable_agent_card(stub):
    async def refuse(request):
        raise httpx.ConnectError("refused")

    async with A2AClient(AGENT_URL, transport=httpx.MockTransport(refuse)) as client:
        with pytest.raises(errors.AgentUnreachable) as raised:
            await collect(client.send_streaming(HELLO))
    assert raised.value.retryable
    assert not raised.value.outcome_unknown


# -- HTTP statuses and JSON-RPC errors ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "expected", "retryable", "outcome_unknown"),
    [
        (503, errors.AgentUnreachable, True, False),
        (502, errors.AgentUnreachable, True, True),
        (504, errors.AgentUnreachable, True, True),
        (429, errors.AgentHTTPError, True, False),
        (401, errors.AgentHTTPError, False, False),
        (500, errors.AgentHTTPError, False, True),
    ],
)
async def test_http_statuses(stub, status, expected, retryable, outcome_unknown):
    stub.on("SendStreamingMessage", stub.status(status, headers={"Retry-After": "12"}))
    async with client_for(stub) as client:
        with pytest.raises(expected) as raised:
            await collect(client.send_streaming(HELLO))
    assert (raised.value.retryable, raised.value.outcome_unknown) == (retryable, outcome_unknown)
    if expected is errors.AgentHTTPError:
        assert raised.value.retry_after == 12


async def test_a_json_rpc_error_behind_an_http_error_status_is_typed(stub):
    stub.on("GetTask", stub.error(-32001, "Task not found", status=404))
    async with client_for(stub) as client:
        with pytest.raises(errors.TaskNotFound):
            await client.get_task("t1")


@pytest.mark.parametrize(
    ("index", "expected", "reason"),
    [
        (0, errors.TaskNotFound, "TASK_NOT_FOUND"),  # GetTask of an unknown id
        (1, errors.VersionNotSupported, "VERSION_NOT_SUPPORTED"),  # no A2A-Version header
        (2, errors.MethodNotFound, None),  # a 0.3 method name
        (4, errors.UnsupportedOperation, "UNSUPPORTED_OPERATION"),  # a message to a completed task
        (5, errors.TaskNotCancelable, "TASK_NOT_CANCELABLE"),
        (7, errors.UnsupportedOperation, "UNSUPPORTED_OPERATION"),  # subscribing to a completed task
        (10, errors.InvalidParams, "INVALID_PARAMS"),  # a taskId with another contextId
    ],
)
async def test_captured_kagent_1_0_errors(stub, index, expected, reason):
    exchange = exchanges(V1ALPHA, "05_errors_and_lifecycle")[index]
    captured_error = exchange.responses[0]["error"]
    stub.on("GetTask", lambda body: httpx.Response(200, json={**exchange.responses[0], "id": body["id"]}))
    async with client_for(stub) as client:
        with pytest.raises(expected) as raised:
            await client.get_task("t1")
    error = raised.value
    assert (error.code, error.reason, error.server_message) == (
        captured_error["code"],
        reason,
        captured_error["message"],
    )
    assert not error.retryable
    assert captured_error["message"] not in str(error)  # the agent's text stays out of logs


async def test_an_error_answered_as_plain_json_to_a_stream_request(stub):
    # kagent 1.0 answers SubscribeToTask on a completed task with application/json, not SSE.
    captured = exchanges(V1ALPHA, "05_errors_and_lifecycle")[7].responses[0]
    stub.on("SubscribeToTask", lambda body: httpx.Response(200, json={**captured, "id": body["id"]}))
    async with client_for(stub) as client:
        with pytest.raises(errors.UnsupportedOperation):
            await collect(client.subscribe("3357ee31-6cfe-42e7-ba83-1e684065494c"))


async def test_an_error_inside_the_stream(stub):
    # kagent 0.10 answers tasks/resubscribe of a task with no live run with an SSE error.
    stub.card = CARD_V03
    captured = exchanges(V010, "05_errors_and_lifecycle")[7].responses[0]
    stub.on("tasks/resubscribe", stub.stream_bodies(lambda request_id: {**captured, "id": request_id}))
    async with client_for(stub) as client:
        with pytest.raises(errors.TaskNotFound):
            await collect(client.subscribe("614659dc-5403-4720-8b72-f2e32c6665a6"))


async def test_an_sse_error_event(stub):
    stub.on(
        "SendStreamingMessage",
        lambda body: sse_response(
            [],
            frames=[
                b"event: error\ndata: "
                + httpx.Response(200, json=error_body(body["id"], -32603, "boom")).content
                + b"\n\n"
            ],
        ),
    )
    async with client_for(stub) as client:
        with pytest.raises(errors.JSONRPCError) as raised:
            await collect(client.send_streaming(HELLO))
    assert raised.value.code == -32603


# -- garbage ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "frame",
    [
        b"data: this is not json\n\n",
        b'data: {"jsonrpc": "2.0", "id": "ID", "result": {"kind": "status-update"}}\n\n',  # 0.3 shape on 1.0
        b'data: {"jsonrpc": "2.0", "id": "someone-else", "result": {}}\n\n',
        b'data: {"id": "ID", "result": {}}\n\n',  # not JSON-RPC 2.0
        b'data: {"jsonrpc": "2.0", "id": "ID"}\n\n',
        b'event: error\ndata: {"oops": 1}\n\n',
    ],
)
async def test_garbage_in_a_stream_is_an_invalid_response(stub, frame):
    stub.on(
        "SendStreamingMessage",
        lambda body: sse_response([], frames=[frame.replace(b'"ID"', f'"{body["id"]}"'.encode())]),
    )
    async with client_for(stub) as client:
        with pytest.raises(errors.InvalidAgentResponse) as raised:
            await collect(client.send_streaming(HELLO))
    assert not raised.value.retryable
    assert raised.value.method == "SendStreamingMessage"


@pytest.mark.parametrize(
    "reply",
    [
        WireStub.raw(b"<html>gateway</html>", "text/html"),
        WireStub.raw(b"[1, 2]"),
        WireStub.result({"id": "t1", "status": "working"}),
        WireStub.result({"status": {"state": "TASK_STATE_WORKING"}}),  # no id
    ],
)
async def test_garbage_for_a_unary_call_is_an_invalid_response(stub, reply):
    stub.on("GetTask", reply)
    async with client_for(stub) as client:
        with pytest.raises(errors.InvalidAgentResponse):
            await client.get_task("t1")


async def test_a_card_that_is_not_json(stub):
    async def html(request):
        return httpx.Response(200, text="<html>", headers={"content-type": "text/html"})

    async with A2AClient(AGENT_URL, transport=httpx.MockTransport(html)) as client:
        with pytest.raises(errors.InvalidAgentResponse):
            await client.agent_card()


# -- listing, and finding a request of unknown fate ---------------------------------------------------


async def test_list_tasks_reads_every_page(stub):
    stub.on("ListTasks", stub.result({"tasks": [task_json("t1")], "nextPageToken": "page-2"}))
    stub.on("ListTasks", stub.result({"tasks": [task_json("t2")], "nextPageToken": ""}))
    async with client_for(stub) as client:
        tasks = await client.list_tasks("ctx-1")
    assert [task.id for task in tasks] == ["t1", "t2"]
    assert [call.params for call in stub.calls("ListTasks")] == [
        {"contextId": "ctx-1"},
        {"contextId": "ctx-1", "pageToken": "page-2"},
    ]


async def test_pages_that_loop_are_refused(stub):
    for _ in range(2):
        stub.on("ListTasks", stub.result({"tasks": [], "nextPageToken": "same"}))
    async with client_for(stub) as client:
        with pytest.raises(errors.InvalidAgentResponse, match="loop"):
            await client.list_tasks("ctx-1")


async def test_find_task_for_message_on_captured_duplicate_sends(stub):
    # kagent 1.0 started two tasks for the same messageId (no de-duplication): either proves delivery.
    listing = exchanges(V1ALPHA, "05_errors_and_lifecycle")[-1]
    stub.on("ListTasks", stub.result(listing.results[0]))
    stub.on("ListTasks", stub.result(listing.results[0]))
    async with client_for(stub) as client:
        found = await client.find_task_for_message(
            "a6066a42-5c87-4877-8792-8a5658103235", "cf0aa86e-e3a0-4274-bacb-6d604fc4ec3c"
        )
        missing = await client.find_task_for_message(
            "a6066a42-5c87-4877-8792-8a5658103235",
            "3f7c1e40-0000-4000-8000-000000000000",  # a message the agent never had
        )
    assert found is not None
    assert found.id == "a54be2fe-302c-4d79-8d77-c295bba72877"
    assert missing is None


async def test_listing_is_not_part_of_0_3(stub):
    stub.card = CARD_V03
    async with client_for(stub) as client:
        with pytest.raises(errors.NotSupportedByProtocol, match=r"0\.3"):
            await client.find_task_for_message("ctx", "m")
    assert not stub.calls("ListTasks")


async def test_json_rpc_requests_are_well_formed(stub):
    stub.on("CancelTask", stub.result(task_json(state="TASK_STATE_CANCELED")))
    async with client_for(stub) as client:
        await client.cancel_task("t1")
    body = stub.calls("CancelTask")[0].body
    assert body["jsonrpc"] == "2.0"
    assert body["params"] == {"id": "t1"}
    assert uuid.UUID(body["id"])


# -- every request is counted ------------------------------------------------------------------------


async def test_a_stream_read_to_its_final_event_is_counted_ok_even_when_its_reader_stops_there(stub):
    stub.on("SendStreamingMessage", stub.stream(WORKING, COMPLETED, hang=True))
    before = sample("kourier_a2a_requests_total", method="SendStreamingMessage", outcome="ok")
    async with client_for(stub) as client, client.send_streaming(HELLO) as stream:
        async for event in stream:
            if isinstance(event, StatusUpdate) and event.state is TaskState.COMPLETED:
                break
    assert sample("kourier_a2a_requests_total", method="SendStreamingMessage", outcome="ok") == before + 1


async def test_a_stream_left_before_its_end_is_counted_closed(stub):
    stub.on("SendStreamingMessage", stub.stream(WORKING, CHUNK, hang=True))
    before = sample("kourier_a2a_requests_total", method="SendStreamingMessage", outcome="closed")
    async with client_for(stub) as client, client.send_streaming(HELLO) as stream:
        async for _ in stream:
            break
    assert sample("kourier_a2a_requests_total", method="SendStreamingMessage", outcome="closed") == before + 1


async def test_a_failed_request_is_counted_by_its_errors_name(stub):
    stub.on("GetTask", stub.fail(httpx.ReadTimeout("slow")))
    before = sample("kourier_a2a_requests_total", method="GetTask", outcome="AgentTimeout")
    async with client_for(stub) as client:
        with pytest.raises(errors.AgentTimeout):
            await client.get_task("t1")
    assert sample("kourier_a2a_requests_total", method="GetTask", outcome="AgentTimeout") == before + 1


async def test_clients_that_share_agent_cards_read_an_agents_card_once_while_it_stands(stub):
    now = [0.0]
    cards = AgentCards(60, clock=lambda: now[0])
    for _ in range(2):
        async with client_for(stub, cards=cards) as client:
            assert await client.resolved_version() == "1.0"
    assert len(stub.calls("GET card")) == 1
    stub.card, now[0] = CARD_V03, 60.0  # the agent changed its card; the one read has stood its time
    async with client_for(stub, cards=cards) as client:
        assert await client.resolved_version() == "0.3"
    assert len(stub.calls("GET card")) == 2


async def test_a_client_whose_request_failed_on_a_card_another_read_has_it_read_again(stub):
    cards = AgentCards(60)
    async with client_for(stub, cards=cards) as client:
        assert await client.resolved_version() == "1.0"
    stub.card = CARD_V03  # the agent now speaks 0.3 only: 1.0's method is unknown to it
    async with client_for(stub, cards=cards) as client:
        with pytest.raises(errors.MethodNotFound):
            await client.get_task("t1")
    async with client_for(stub, cards=cards) as client:
        assert await client.resolved_version() == "0.3"
    assert len(stub.calls("GET card")) == 2
