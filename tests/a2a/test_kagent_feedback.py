"""Feedback goes to kagent's controller the way its line takes it: kagent 1.0's gRPC FeedbackService
(the request written as kagent's proto reads it, byte for byte), kagent 0.10's REST /api/feedback, the
other way when the line's is not served, and a clear "neither" when no way is."""

import pytest

from kourier.a2a.kagent_agents import KAGENT_0_10, KAGENT_1_0
from kourier.a2a.kagent_feedback import (
    NEITHER_ANSWERS,
    FeedbackNotSent,
    create_feedback_request,
    grpc_target,
    send_feedback,
)
from tests.fakes.kagent_controller import KagentController
from tests.fakes.kagent_grpc_feedback import create_feedback_request_class, kagent_grpc_feedback
from tests.support.private_redis import free_port

BODY = {"is_positive": False, "feedback_text": "missed the pod (A2A task t-1)", "issue_type": "tool"}
# CreateFeedbackRequest{is_positive: false, feedback_text: "missed the pod (A2A task t-1)", issue_type: "tool"}
# (field 3, length 29, the text; field 4, length 4, "tool"; is_positive false is not written)
GOLDEN = bytes.fromhex("1a1d6d69737365642074686520706f642028413241207461736b20742d31292204746f6f6c")


@pytest.mark.parametrize(
    "body",
    [
        BODY,
        {"is_positive": True, "feedback_text": "Thumbs up in Slack."},
        {"is_positive": True, "feedback_text": "ünïcödé " * 30, "issue_type": "factual"},
    ],
)
def test_the_request_is_what_kagents_proto_serializes(body):
    message = create_feedback_request_class()(**body)

    assert create_feedback_request(body) == message.SerializeToString()


def test_the_golden_request_is_checked_in():
    assert create_feedback_request(BODY) == GOLDEN


def test_the_grpc_target_is_the_controllers_host_on_the_grpc_port():
    assert grpc_target("http://kagent-controller.kagent:8083", 8084) == "kagent-controller.kagent:8084"
    assert grpc_target("https://[::1]:8083/", 9) == "[::1]:9"


def test_a_kagent_1_0_agents_feedback_goes_to_the_grpc_feedback_service_with_the_user():
    with kagent_grpc_feedback() as service:
        way = send_feedback("http://127.0.0.1:1", "U0ADA", BODY, line=KAGENT_1_0, grpc_port=service.port)

    assert way == "grpc"
    assert service.raw == [GOLDEN]
    assert service.taken == [("U0ADA", BODY)]


def test_a_kagent_0_10_agents_feedback_goes_to_the_rest_api_and_not_to_grpc():
    controller = KagentController()
    try:
        with kagent_grpc_feedback() as service:
            way = send_feedback(controller.url, None, BODY, line=KAGENT_0_10, grpc_port=service.port)
    finally:
        controller.stop()

    assert way == "rest"
    assert controller.feedback == [("", BODY)]
    assert service.taken == []


def test_a_controller_without_grpc_takes_it_on_rest_whatever_the_line():
    controller = KagentController()
    try:
        way = send_feedback(controller.url, "U0ADA", BODY, line=KAGENT_1_0, grpc_port=free_port())
    finally:
        controller.stop()

    assert way == "rest"
    assert controller.feedback == [("U0ADA", BODY)]


def test_when_neither_answers_it_is_not_sent_for_good_and_says_so():
    controller = KagentController()  # serves no /api/feedback when told to answer 404
    controller.feedback_status = 404
    try:
        with pytest.raises(FeedbackNotSent) as raised:
            send_feedback(controller.url, "U0ADA", BODY, line=KAGENT_1_0, grpc_port=free_port())
    finally:
        controller.stop()

    assert raised.value.reason == NEITHER_ANSWERS
    assert raised.value.transient is False
