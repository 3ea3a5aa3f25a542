import pytest

from kourier.a2a import errors


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (-32001, errors.TaskNotFound),
        (-32002, errors.TaskNotCancelable),
        (-32004, errors.UnsupportedOperation),
        (-32009, errors.VersionNotSupported),
        (-32602, errors.InvalidParams),
        (-32601, errors.MethodNotFound),
        (-32603, errors.JSONRPCError),
        (-32008, errors.JSONRPCError),
    ],
)
def test_json_rpc_codes_map_to_typed_errors(code, expected):
    error = errors.jsonrpc_error_from_payload({"code": code, "message": "secret text"}, method="GetTask")
    assert type(error) is expected
    assert error.code == code
    assert not error.retryable
    assert error.server_message == "secret text"
    assert "secret text" not in str(error)
    assert str(error).startswith("GetTask: JSON-RPC error")


def test_a2a_1_0_error_info_reason():
    error = errors.jsonrpc_error_from_payload(
        {
            "code": -32001,
            "message": "Task not found",
            "data": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "TASK_NOT_FOUND"}],
        }
    )
    assert error.reason == "TASK_NOT_FOUND"
    assert "TASK_NOT_FOUND" in str(error)


@pytest.mark.parametrize("payload", [None, "boom", {"message": "no code"}, {"code": "-32001"}])
def test_malformed_error_objects(payload):
    assert isinstance(errors.jsonrpc_error_from_payload(payload), errors.InvalidAgentResponse)


def test_retry_and_outcome_flags():
    assert errors.AgentUnreachable("x").retryable
    assert not errors.AgentUnreachable("x").outcome_unknown
    assert errors.AgentUnreachable("x", outcome_unknown=True).outcome_unknown
    assert errors.AgentTimeout("x").retryable
    assert errors.AgentTimeout("x").outcome_unknown
    assert errors.StreamDropped("x", task_id="t").outcome_unknown
    assert not errors.InvalidAgentResponse("x").retryable
    assert not errors.IncompatibleAgent("x").retryable
    assert not errors.NotSupportedByProtocol("x").retryable
    assert errors.AgentHTTPError(429).retryable
    assert errors.AgentHTTPError(408).retryable
    assert not errors.AgentHTTPError(403).retryable
    assert errors.AgentHTTPError(500).outcome_unknown
