"""kagent 1.0's gRPC FeedbackService, as its controller serves it, for tests: a real gRPC server (grpcio,
HTTP/2 on 127.0.0.1) that decodes ``CreateFeedback`` with the message kagent's proto declares.

``CreateFeedbackRequest`` is built here from kagent's proto/kagent/api/v1alpha1/feedback.proto as it
reads (field numbers, types, ``optional``), through protobuf's descriptors: what the product writes by
hand is read the way kagent's generated code reads it.

    with kagent_grpc_feedback() as service:    # service.port; service.taken: [(x-user-id, fields)]
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent import futures
from contextlib import contextmanager
from typing import Any

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory

SERVICE = "kagent.api.v1alpha1.FeedbackService"
FieldType = descriptor_pb2.FieldDescriptorProto


def create_feedback_request_class() -> Any:
    """kagent's CreateFeedbackRequest: message_id (1, optional int64), is_positive (2, bool),
    feedback_text (3, string), issue_type (4, optional string)."""
    file = descriptor_pb2.FileDescriptorProto(
        name="kourier_tests/kagent/api/v1alpha1/feedback.proto",
        package="kagent.api.v1alpha1",
        syntax="proto3",
    )
    message = file.message_type.add(name="CreateFeedbackRequest")
    fields = [
        ("message_id", 1, FieldType.TYPE_INT64, True),
        ("is_positive", 2, FieldType.TYPE_BOOL, False),
        ("feedback_text", 3, FieldType.TYPE_STRING, False),
        ("issue_type", 4, FieldType.TYPE_STRING, True),
    ]
    for name, number, kind, optional in fields:
        field = message.field.add(name=name, number=number, type=kind, label=FieldType.LABEL_OPTIONAL)
        if optional:  # proto3 `optional`: a synthetic oneof of its own
            field.proto3_optional = True
            field.oneof_index = len(message.oneof_decl)
            message.oneof_decl.add(name=f"_{name}")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(
        pool.FindMessageTypeByName("kagent.api.v1alpha1.CreateFeedbackRequest")
    )


class FeedbackService:
    def __init__(self) -> None:
        self.request_class = create_feedback_request_class()
        self.taken: list[tuple[str, dict[str, Any]]] = []
        self.raw: list[bytes] = []
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        handler = grpc.method_handlers_generic_handler(
            SERVICE,
            {"CreateFeedback": grpc.unary_unary_rpc_method_handler(self._create)},
        )
        self._server.add_generic_rpc_handlers((handler,))
        self.port = self._server.add_insecure_port("127.0.0.1:0")

    def _create(self, request: bytes, context: grpc.ServicerContext) -> bytes:
        message = self.request_class.FromString(request)
        user = dict(context.invocation_metadata()).get("x-user-id", "")
        self.raw.append(request)
        self.taken.append(
            (
                user,
                json_format.MessageToDict(
                    message, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
                ),
            )
        )
        return b""  # CreateFeedbackResponse {}

    def start(self) -> FeedbackService:
        self._server.start()
        return self

    def stop(self) -> None:
        self._server.stop(grace=None)


@contextmanager
def kagent_grpc_feedback() -> Iterator[FeedbackService]:
    service = FeedbackService().start()
    try:
        yield service
    finally:
        service.stop()
