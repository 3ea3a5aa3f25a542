"""Feedback on answers (spec.feedback): a thumbs press recorded once per person and answer (the
other thumb changes it), audited without text and counted; a press on a gone answer stores nothing;
a thumbs down's comment checked, redacted and kept; each change sent once to kagent's controller."""

import json
import logging
import threading

import pytest
from django import db

from audit.models import AuditEvent
from interactions import feedback
from interactions.models import Feedback
from interactions.task_names import SEND_FEEDBACK
from kourier import metrics
from kourier.a2a.kagent_feedback import NEITHER_ANSWERS, FeedbackNotSent
from kourier.slack.incoming import ModalSubmission
from sessions.admin import TurnAdmin
from sessions.models import Turn
from simulator import defaults
from simulator.modals import view_problems
from tests.factories import BindingFactory, TurnFactory
from tests.fakes.kagent_grpc_feedback import kagent_grpc_feedback
from tests.support.private_redis import free_port
from tests.support.queue import enqueued

pytestmark = pytest.mark.django_db

REPLY_TS = "1700000300.000200"
SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def an_answer(*, feedback_on: bool = True, controller: str = "", user_identity: str = "slack-user-id"):
    binding = BindingFactory(
        channels=[defaults.CHANNEL_ID],
        feedback=feedback_on,
        kagent_controller=controller,
        user_identity=user_identity,
    )
    return TurnFactory(
        session__binding=binding,
        channel_id=defaults.CHANNEL_ID,
        state=Turn.State.DONE,
        outcome=Turn.Outcome.COMPLETED,
        reply_ts=REPLY_TS,
        task_id="task-9",
    )


def thumbs(turn: Turn, positive: bool, user: str = defaults.ADA, ts: str = REPLY_TS):
    return feedback.record_press(
        turn.pk,
        connection_id=turn.connection_id,
        channel_id=turn.channel_id,
        message_ts=ts,
        user_id=user,
        positive=positive,
    )


def counted(binding: str, verdict: str) -> float:
    return metrics.FEEDBACK.labels(binding, verdict)._value.get()


class TestAPress:
    def test_is_recorded_once_per_person_and_answer_and_the_other_thumb_changes_it(self):
        turn = an_answer()
        name = turn.session.binding.name
        first = thumbs(turn, True)
        again = thumbs(turn, True)
        changed = thumbs(turn, False)
        other_person = thumbs(turn, False, user=defaults.GRACE)

        assert (first.changed, again.changed, changed.changed, other_person.changed) == (
            True,
            False,
            True,
            True,
        )
        assert first.feedback_id == again.feedback_id == changed.feedback_id
        assert sorted(Feedback.objects.values_list("user_id", "is_positive")) == [
            (defaults.ADA, False),
            (defaults.GRACE, False),
        ]
        rows = AuditEvent.objects.filter(action=feedback.RECORDED).order_by("pk")
        assert [(row.actor_id, row.details) for row in rows] == [
            (defaults.ADA, {"verdict": "up"}),
            (defaults.ADA, {"verdict": "down"}),
            (defaults.GRACE, {"verdict": "down"}),
        ]
        assert (counted(name, "up"), counted(name, "down")) == (1, 2)

    @pytest.mark.parametrize("gone", ["deleted", "another message", "feedback off"])
    def test_on_an_answer_that_is_gone_or_not_one_stores_nothing_and_says_so_in_the_log(self, gone, caplog):
        turn = an_answer(feedback_on=gone != "feedback off")
        ts = "1700000999.000001" if gone == "another message" else REPLY_TS
        if gone == "deleted":
            turn.session.delete()
        with caplog.at_level(logging.INFO, logger="interactions.feedback"):
            assert thumbs(turn, True, ts=ts) is None
        assert not Feedback.objects.exists()
        assert not AuditEvent.objects.filter(action=feedback.RECORDED).exists()
        assert "feedback.answer_gone" in caplog.messages

    def test_for_a_kagent_agent_each_change_is_queued_to_send_after_commit(
        self, django_capture_on_commit_callbacks
    ):
        turn = an_answer(controller="http://kagent-controller.kagent:8083")
        with django_capture_on_commit_callbacks() as callbacks:
            recorded = thumbs(turn, True)
            thumbs(turn, True)
        sends = [each for each in callbacks if getattr(each, "args", ("",))[0] == SEND_FEEDBACK]
        assert enqueued(sends) == [("send_feedback", (recorded.feedback_id, 1))]

    def test_without_a_controller_nothing_is_queued(self, django_capture_on_commit_callbacks):
        with django_capture_on_commit_callbacks() as callbacks:
            thumbs(an_answer(), True)
        assert not [each for each in callbacks if getattr(each, "args", ("",))[0] == SEND_FEEDBACK]


def submitted(feedback_id, comment="", issue=None, user=defaults.ADA, metadata=None) -> ModalSubmission:
    values = {
        feedback.COMMENT_BLOCK: {
            feedback.COMMENT_ACTION: {"type": "plain_text_input", "value": comment or None}
        },
        feedback.ISSUE_BLOCK: {
            feedback.ISSUE_ACTION: {
                "type": "static_select",
                "selected_option": {"value": issue} if issue else None,
            }
        },
    }
    metadata = metadata if metadata is not None else json.dumps({"f": feedback_id})
    return ModalSubmission(user, defaults.TEAM_ID, feedback.CALLBACK_ID, metadata, values)


class TestTheComment:
    def test_the_modal_fits_slacks_limits(self):
        view = feedback.comment_modal(feedback.Recorded(7, 1, changed=True))
        assert view_problems(view) == []
        assert json.loads(view["private_metadata"]) == {"f": 7}

    def test_is_redacted_kept_and_audited_without_its_text(self):
        turn = an_answer()
        recorded = thumbs(turn, False)
        comment = feedback.read_comment(submitted(recorded.feedback_id, f"wrong token {SECRET}", "factual"))
        assert isinstance(comment, feedback.Comment)

        assert feedback.add_comment(comment) is True

        kept = Feedback.objects.get()
        assert (kept.comment, kept.issue_type, kept.version) == ("wrong token [redacted]", "factual", 2)
        row = AuditEvent.objects.get(action=feedback.COMMENTED)
        assert row.details == {"issue_type": "factual", "comment": True}
        assert SECRET not in json.dumps(list(AuditEvent.objects.values()), default=str)

    def test_the_fixed_wordings(self):
        assert (feedback.TITLE, feedback.SUBMIT, feedback.CLOSE) == ("Feedback", "Send", "Skip")
        assert feedback.ASKING == "Thanks. What was wrong with this answer? Both are optional."
        assert feedback.COMMENT_TOO_LONG == "A comment can be at most 500 characters."
        assert feedback.NO_COMMENT == {True: "Thumbs up in Slack.", False: "Thumbs down in Slack."}

    def test_too_long_is_to_be_fixed_and_an_unknown_modal_is_none(self):
        assert feedback.read_comment(submitted(1, "x" * 501)) == feedback.COMMENT_TOO_LONG
        assert feedback.read_comment(submitted(1, metadata="{}")) is None
        assert feedback.read_comment(submitted(1, metadata="nope")) is None

    def test_on_a_thumbs_down_changed_since_or_deleted_nothing_is_kept(self):
        turn = an_answer()
        recorded = thumbs(turn, False)
        thumbs(turn, True)
        comment = feedback.read_comment(submitted(recorded.feedback_id, "late"))
        assert feedback.add_comment(comment) is False
        turn.session.delete()
        assert feedback.add_comment(comment) is False
        assert not AuditEvent.objects.filter(action=feedback.COMMENTED).exists()


class TestSendingToKagent:
    def test_a_version_is_sent_once_as_kagents_feedback_api_takes_it(self, kagent_controller):
        turn = an_answer(controller=kagent_controller.url)
        recorded = thumbs(turn, False)
        feedback.add_comment(feedback.read_comment(submitted(recorded.feedback_id, "missed the pod", "tool")))

        assert feedback.send(recorded.feedback_id, 1) == "nothing"  # superseded by the comment
        assert feedback.send(recorded.feedback_id, 2) == "sent"
        assert feedback.send(recorded.feedback_id, 2) == "nothing"  # a task run twice sends once

        assert kagent_controller.feedback == [
            (
                defaults.ADA,
                {
                    "is_positive": False,
                    "feedback_text": "missed the pod (A2A task task-9)",
                    "issue_type": "tool",
                },
            )
        ]

    def test_a_thumbs_up_without_text_is_sent_with_the_fixed_text(self, kagent_controller):
        turn = an_answer(controller=kagent_controller.url)
        recorded = thumbs(turn, True)
        assert feedback.send(recorded.feedback_id, recorded.version) == "sent"
        assert kagent_controller.feedback[0][1]["feedback_text"] == "Thumbs up in Slack. (A2A task task-9)"

    @pytest.mark.parametrize(
        ("user_identity", "sent_as"),
        [("none", ""), ("slack-user-id", defaults.ADA), ("email", defaults.ADA_EMAIL)],
    )
    def test_the_person_is_named_only_as_the_bindings_turns_name_them(
        self, kagent_controller, slack_fake, settings, monkeypatch, user_identity, sent_as
    ):
        settings.SLACK_API_URL = slack_fake.url
        monkeypatch.setenv("SLACK_BOT_TOKEN", slack_fake.bot_token)
        turn = an_answer(controller=kagent_controller.url, user_identity=user_identity)
        recorded = thumbs(turn, True)

        assert feedback.send(recorded.feedback_id, recorded.version) == "sent"

        assert [user for user, _ in kagent_controller.feedback] == [sent_as]

    def test_with_email_and_no_bot_token_the_slack_id_is_sent_as_turns_send_it(
        self, kagent_controller, monkeypatch
    ):
        monkeypatch.delenv("SLACK_BOT_TOKEN", raising=False)
        turn = an_answer(controller=kagent_controller.url, user_identity="email")
        recorded = thumbs(turn, True)

        assert feedback.send(recorded.feedback_id, recorded.version) == "sent"

        assert [user for user, _ in kagent_controller.feedback] == [defaults.ADA]

    def test_a_controller_that_fails_is_tried_again_and_one_that_refuses_is_not(self, kagent_controller):
        turn = an_answer(controller=kagent_controller.url)
        recorded = thumbs(turn, True)
        kagent_controller.feedback_status = 503
        with pytest.raises(FeedbackNotSent):
            feedback.send(recorded.feedback_id, 1)
        kagent_controller.feedback_status = 400
        assert feedback.send(recorded.feedback_id, 1) == "refused"
        assert Feedback.objects.get().sent_version == 0

    def test_a_kagent_1_0_agents_feedback_goes_to_its_controllers_grpc_feedback_service(
        self, kagent_controller, settings
    ):
        turn = an_answer(controller=kagent_controller.url)
        turn.session.binding.protocol_version = "1.0"
        turn.session.binding.save()
        recorded = thumbs(turn, True)
        with kagent_grpc_feedback() as service:
            settings.KAGENT_GRPC_PORT = service.port
            assert feedback.send(recorded.feedback_id, recorded.version) == "sent"

        assert service.taken == [
            (defaults.ADA, {"is_positive": True, "feedback_text": "Thumbs up in Slack. (A2A task task-9)"})
        ]
        assert kagent_controller.feedback == []

    def test_when_neither_of_the_controllers_ways_answers_the_admin_says_so(
        self, kagent_controller, settings
    ):
        settings.KAGENT_GRPC_PORT = free_port()  # nothing listens there
        kagent_controller.feedback_status = 404
        turn = an_answer(controller=kagent_controller.url)
        recorded = thumbs(turn, False)

        assert feedback.send(recorded.feedback_id, recorded.version) == "refused"

        row = Feedback.objects.get()
        assert (row.sent_version, row.kagent_problem) == (0, NEITHER_ANSWERS)
        shown = TurnAdmin(Turn, None).feedback(turn)  # type: ignore[arg-type]
        assert f"not sent to kagent: {NEITHER_ANSWERS}" in shown


@pytest.mark.requires_postgres("SQLite serializes every write")
@pytest.mark.django_db(transaction=True)
def test_a_persons_presses_at_once_make_one_row_and_the_other_thumb_wins_or_not_but_never_twice():
    turn = an_answer()
    presses = 8
    start = threading.Barrier(presses)
    results: list[object] = []

    def press(positive: bool) -> None:
        try:
            start.wait()
            results.append(thumbs(turn, positive))
        finally:
            db.connection.close()

    threads = [threading.Thread(target=press, args=(n % 2 == 0,)) for n in range(presses)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(results) == presses  # none failed
    [row] = Feedback.objects.all()
    changes = AuditEvent.objects.filter(action=feedback.RECORDED)
    assert changes.count() == row.version  # every change audited once
    assert changes.order_by("pk").last().details == {"verdict": "up" if row.is_positive else "down"}
