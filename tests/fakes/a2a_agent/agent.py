"""ScriptedAgent: a real a2a-sdk agent on 127.0.0.1 whose behaviour each test scripts."""

from __future__ import annotations

import concurrent.futures
import logging
from collections.abc import Iterable, Sequence
from types import TracebackType
from typing import Any, Self

from a2a.server.request_handlers import DefaultRequestHandler

from tests.fakes.a2a_agent.app import build_app
from tests.fakes.a2a_agent.card import CardExtension, Protocol, build_agent_card, card_json
from tests.fakes.a2a_agent.executor import AgentRuntime, ScriptBook, ScriptedExecutor
from tests.fakes.a2a_agent.records import ReceivedMessage, RecordedRequest, Recorder, TaskView
from tests.fakes.a2a_agent.server import ServerThread, listening_socket
from tests.fakes.a2a_agent.steps import TEXT_STYLES, Script, ScriptSource, Step, TextStyle, WireFault
from tests.fakes.a2a_agent.store import RecordingTaskStore
from tests.fakes.a2a_agent.wire import install_log_filter

logger = logging.getLogger(__name__)

PROTOCOLS: tuple[Protocol, ...] = ("1.0", "0.3")
DEFAULT_TIMEOUT = 5.0


class ScriptedAgent:
    """An A2A agent for integration tests: official a2a-sdk server, scripted behaviour, full record.

    One instance speaks one protocol: "1.0" (SendMessage, SendStreamingMessage, GetTask, CancelTask,
    SubscribeToTask, ListTasks; header A2A-Version: 1.0 required) or "0.3" (message/send,
    message/stream, tasks/get, tasks/cancel, tasks/resubscribe).

        agent = ScriptedAgent(protocol="1.0").start()
        agent.script([text("Hello"), text(" world")])   # every message gets this (default: "ok")
        ...  # point the code under test at agent.url
        agent.stop()
    """

    def __init__(
        self,
        protocol: Protocol = "1.0",
        *,
        text_style: TextStyle = "artifact",
        extensions: Iterable[str | CardExtension] = (),
        name: str = "scripted_agent",
        description: str = "Scripted A2A agent for tests",
        version: str = "0.0.1",
        streaming: bool = True,
        public_host: str = "",
        input_modes: Iterable[str] = ("text",),
    ) -> None:
        """``public_host``: the host name its URL and card give (else 127.0.0.1, where it listens), for
        the egress proxy test, whose proxy alone resolves it."""
        if protocol not in PROTOCOLS:
            raise ValueError(f"protocol must be one of {PROTOCOLS}, not {protocol!r}")
        if text_style not in TEXT_STYLES:
            raise ValueError(f"text_style must be one of {TEXT_STYLES}, not {text_style!r}")
        self.protocol: Protocol = protocol
        self.name = name
        self._public_host = public_host
        self._description = description
        self._version = version
        self._streaming = streaming
        self._extensions = tuple(extensions)
        self._input_modes = tuple(input_modes)  # the card's defaultInputModes
        self._recorder = Recorder()
        self._scripts = ScriptBook()
        self._runtime = AgentRuntime(
            agent_name=name,
            default_text_style=text_style,
            recorder=self._recorder,
            store=RecordingTaskStore(self._recorder),
            scripts=self._scripts,
        )
        self._handler: DefaultRequestHandler | None = None
        self._server: ServerThread | None = None
        self.url = ""
        self.card: dict[str, Any] = {}

    # --- lifecycle ---

    def start(self) -> Self:
        """Starts serving; started again after ``stop``, it comes back on the same URL with the tasks it
        had (an agent restarted in place, that keeps its tasks)."""
        if self._server is not None:
            raise RuntimeError("already started")
        install_log_filter()
        sock = listening_socket(int(self.url.rsplit(":", 1)[1]) if self.url else 0)
        host, port = sock.getsockname()
        self.url = f"http://{self._public_host or host}:{port}"
        card = build_agent_card(
            protocol=self.protocol,
            url=f"{self.url}/",
            name=self.name,
            description=self._description,
            version=self._version,
            streaming=self._streaming,
            extensions=self._extensions,
            input_modes=self._input_modes,
        )
        self.card = card_json(card, self.protocol)
        self._handler = DefaultRequestHandler(
            agent_executor=ScriptedExecutor(self._runtime), task_store=self._runtime.store, agent_card=card
        )
        app = build_app(protocol=self.protocol, handler=self._handler, card=card, wire=self._runtime.wire)
        self._server = ServerThread(app, sock, name=f"scripted-a2a-agent-{port}")
        self._server.start()
        return self

    def stop(self, timeout: float = DEFAULT_TIMEOUT) -> None:
        """Stop serving; never hangs, even with open SSE streams or scripts stuck at a gate."""
        server, self._server = self._server, None
        if server is None:
            return
        if server.is_alive:
            try:
                server.call(self._close_everything(), timeout)
            except (concurrent.futures.TimeoutError, RuntimeError) as error:
                logger.warning("scripted agent: unclean shutdown (%r)", error)
        server.stop(timeout)

    async def _close_everything(self) -> None:
        # Streams first (uvicorn would otherwise wait for them), then every running script.
        await self._runtime.wire.cut_everything()
        if self._handler is not None:
            await self._handler.aclose()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def text_style(self) -> TextStyle:
        """The style scripts are rendered in unless they choose their own."""
        return self._runtime.default_text_style

    @property
    def rpc_url(self) -> str:
        """Where JSON-RPC calls go (the card's interface URL)."""
        return f"{self.url}/"

    @property
    def card_url(self) -> str:
        return f"{self.url}/.well-known/agent-card.json"

    # --- scripting ---

    def script(self, steps: Script | Sequence[Step], *, text_style: TextStyle | None = None) -> None:
        """What every message gets from now on (replaces an `on_message` function)."""
        self._scripts.set_script(steps, text_style)

    def on_message(self, decide: ScriptSource) -> None:
        """Decide per message: `decide(received)` returns a list of steps or a `Script`.

        It runs on the server's thread; it sees continuations too (`received.task_id` is set).
        """
        self._scripts.set_on_message(decide)

    def fail_next_call(self, fault: WireFault, *, method: str | None = None) -> None:
        """Answer the next JSON-RPC call (or the next call of `method`; "agent-card" for the card
        fetch) with `fault` - `jsonrpc_error`, `garbage` or `http_status` - before the SDK sees it."""
        self._runtime.wire.queue_fault(fault, method)

    # --- what happened ---

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every HTTP request so far, in arrival order (card fetches included)."""
        return self._recorder.requests

    def calls(self, method: str | None = None) -> list[RecordedRequest]:
        """The JSON-RPC calls so far, optionally only those of one method."""
        return [
            request
            for request in self.requests
            if request.rpc_method is not None and (method is None or request.rpc_method == method)
        ]

    @property
    def received(self) -> list[ReceivedMessage]:
        """Every message the executor was handed (after the SDK accepted the call)."""
        return self._recorder.received

    @property
    def tasks(self) -> list[TaskView]:
        """The tasks in the agent's store right now, oldest first."""
        return self._recorder.tasks

    def task(self, task_id: str) -> TaskView:
        view = self._recorder.task(task_id)
        if view is None:
            raise KeyError(f"the agent has no task {task_id}")
        return view

    @property
    def script_errors(self) -> list[BaseException]:
        """Exceptions raised by `on_message` functions (the fixtures fail the test on these)."""
        return self._recorder.errors

    def take_script_errors(self) -> list[BaseException]:
        """Return and forget the script errors so far - for tests that provoke one on purpose."""
        return self._recorder.take_errors()

    def wait_for_requests(
        self, count: int, *, method: str | None = None, timeout: float = DEFAULT_TIMEOUT
    ) -> list[RecordedRequest]:
        """Block until `count` requests (of `method`, if given) have arrived; returns those."""
        return self._recorder.wait_for_requests(count, method, timeout)

    def wait_for_received(self, count: int, *, timeout: float = DEFAULT_TIMEOUT) -> list[ReceivedMessage]:
        return self._recorder.wait_for_received(count, timeout)

    def wait_for_task_state(self, task_id: str, *states: str, timeout: float = DEFAULT_TIMEOUT) -> TaskView:
        """Block until the stored task is in one of `states` ("completed", "input-required", ...)."""
        return self._recorder.wait_for_task_state(task_id, states, timeout)
