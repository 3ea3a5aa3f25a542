"""What can go wrong when talking to an agent, typed by what the caller should do about it.

Every error says two things a runner needs to decide its next step:

- ``retryable``: sending the same request again may succeed (the agent was unreachable, busy, slow).
- ``outcome_unknown``: the request may have reached the agent and taken effect. Agents do not
  de-duplicate on ``messageId`` (docs/kagent-dialect.md §4), so before re-sending such a request the caller
  must look it up (``get_task`` / ``find_task_for_message``) and re-send only when the agent is known
  not to have it (design.md, invariant 4).

Exception messages carry only protocol facts (method names, JSON-RPC codes, HTTP statuses, task ids):
they end up in logs. The agent's own error text can echo message content, so it is kept in
``server_message`` and never put into ``str(error)``.
"""

from __future__ import annotations

from typing import Any

from kourier.credentials import without_credentials

# JSON-RPC 2.0 and A2A error codes (docs/kagent-dialect.md §4; the same in A2A 0.3 and 1.0).
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
TASK_NOT_FOUND = -32001
TASK_NOT_CANCELABLE = -32002
PUSH_NOTIFICATION_NOT_SUPPORTED = -32003
UNSUPPORTED_OPERATION = -32004
CONTENT_TYPE_NOT_SUPPORTED = -32005
INVALID_AGENT_RESPONSE = -32006
EXTENDED_CARD_NOT_CONFIGURED = -32007
EXTENSION_SUPPORT_REQUIRED = -32008
VERSION_NOT_SUPPORTED = -32009


class A2AError(Exception):
    """Base of every error the A2A client raises."""

    retryable: bool = False
    outcome_unknown: bool = False

    def __init__(self, detail: str, *, method: str | None = None) -> None:
        # Shown in the admin, apply's output and the logs: a URL in it never shows its credentials.
        self.detail = detail = without_credentials(detail)
        self.method = method
        super().__init__(f"{method}: {detail}" if method else detail)


class AgentUnreachable(A2AError):
    """No connection to the agent, or a gateway in front of it answered 502/503/504.

    A connection that was never made cannot have delivered the request; a gateway error may come
    after the gateway forwarded it, so 502 and 504 leave the outcome unknown.
    """

    retryable = True

    def __init__(self, detail: str, *, method: str | None = None, outcome_unknown: bool = False) -> None:
        super().__init__(detail, method=method)
        self.outcome_unknown = outcome_unknown


class AgentTimeout(A2AError):
    """The agent went quiet for longer than the read timeout, or the whole request ran out of time.

    The request was sent, so the agent may be working on it: look it up before sending it again.
    """

    retryable = True
    outcome_unknown = True


class StreamDropped(A2AError):
    """The event stream ended before the task reached a terminal or paused state.

    The task goes on without us: reconcile with ``get_task`` and ``subscribe``. ``task_id`` is the
    task the stream was about, when at least one event named it; without it, find the task by the
    message id (``find_task_for_message``) before sending anything again.
    """

    retryable = True
    outcome_unknown = True

    def __init__(
        self,
        detail: str,
        *,
        method: str | None = None,
        task_id: str | None = None,
        context_id: str | None = None,
    ) -> None:
        super().__init__(detail, method=method)
        self.task_id = task_id
        self.context_id = context_id


class InvalidAgentResponse(A2AError):
    """The agent answered something that is not A2A: bad JSON, an unknown event shape, a wrong id.

    Asking again will not make it speak the protocol.
    """


class AgentHTTPError(A2AError):
    """The agent answered with an HTTP error status other than the gateway errors.

    408 and 429 are worth retrying (honour ``retry_after`` when given); 401/403/404 and the rest are not.
    A 5xx from the agent itself means the request reached it: the outcome is unknown.
    """

    def __init__(
        self, status_code: int, *, method: str | None = None, retry_after: float | None = None
    ) -> None:
        super().__init__(f"HTTP {status_code}", method=method)
        self.status_code = status_code
        self.retry_after = retry_after
        self.retryable = status_code in (408, 429)
        self.outcome_unknown = status_code >= 500


class IncompatibleAgent(A2AError):
    """The agent card offers no protocol version and binding this client speaks (JSON-RPC, A2A 0.3 or 1.0)."""


class NotSupportedByProtocol(A2AError):
    """The operation does not exist in the protocol version the agent speaks (e.g. ListTasks in A2A 0.3)."""


class JSONRPCError(A2AError):
    """The agent answered with a JSON-RPC error.

    ``server_message`` is the agent's own text: it may echo request content, so log ``code`` and
    ``reason`` instead. ``reason`` is the A2A 1.0 ``google.rpc.ErrorInfo`` reason (e.g. ``TASK_NOT_FOUND``).
    """

    code: int

    def __init__(
        self,
        code: int,
        *,
        method: str | None = None,
        server_message: str | None = None,
        reason: str | None = None,
        data: Any = None,
    ) -> None:
        self.code = code
        self.server_message = server_message
        self.reason = reason
        self.data = data
        super().__init__(f"JSON-RPC error {code}" + (f" ({reason})" if reason else ""), method=method)


class TaskNotFound(JSONRPCError):
    """-32001: the agent does not know the task (A2A 0.3 resubscribe also says this for a task with no live run)."""


class TaskNotCancelable(JSONRPCError):
    """-32002: the task is already in a terminal state, or the agent cannot cancel it in its state."""


class UnsupportedOperation(JSONRPCError):
    """-32004: e.g. sending to or subscribing to a task in a terminal state (A2A 1.0)."""


class VersionNotSupported(JSONRPCError):
    """-32009: the agent does not speak the protocol version we sent (A2A-Version)."""


class InvalidParams(JSONRPCError):
    """-32602: e.g. a taskId with another contextId, or (A2A 0.3) a message to a terminal task."""


class MethodNotFound(JSONRPCError):
    """-32601: the agent does not know the method, typically a protocol version mismatch."""


_ERRORS_BY_CODE: dict[int, type[JSONRPCError]] = {
    TASK_NOT_FOUND: TaskNotFound,
    TASK_NOT_CANCELABLE: TaskNotCancelable,
    UNSUPPORTED_OPERATION: UnsupportedOperation,
    VERSION_NOT_SUPPORTED: VersionNotSupported,
    INVALID_PARAMS: InvalidParams,
    METHOD_NOT_FOUND: MethodNotFound,
}


def jsonrpc_error_from_payload(error: Any, *, method: str | None = None) -> A2AError:
    """Turn the ``error`` member of a JSON-RPC response into the matching typed error."""
    if not isinstance(error, dict) or not isinstance(error.get("code"), int):
        return InvalidAgentResponse("malformed JSON-RPC error object", method=method)
    code = error["code"]
    data = error.get("data")
    message = error.get("message")
    error_class = _ERRORS_BY_CODE.get(code, JSONRPCError)
    return error_class(
        code,
        method=method,
        server_message=message if isinstance(message, str) else None,
        reason=_error_info_reason(data),
        data=data,
    )


def _error_info_reason(data: Any) -> str | None:
    """A2A 1.0 errors carry ``data: [{"@type": "...google.rpc.ErrorInfo", "reason": "TASK_NOT_FOUND"}]``."""
    if not isinstance(data, list):
        return None
    for detail in data:
        if isinstance(detail, dict) and str(detail.get("@type", "")).endswith("google.rpc.ErrorInfo"):
            reason = detail.get("reason")
            return reason if isinstance(reason, str) else None
    return None
