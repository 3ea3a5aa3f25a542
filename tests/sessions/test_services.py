import threading
from datetime import timedelta

import pytest
from django import db
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from bindings import directory
from kourier.slack.files import SharedFile
from sessions import pauses, services, turns
from sessions.models import Session, ThreadNote, Turn
from sessions.routing import Route
from tests.factories import BindingFactory
from tests.sessions.messages import CHANNEL, said
from tests.support.queue import enqueued

pytestmark = pytest.mark.django_db


@pytest.fixture
def binding():
    return BindingFactory(channels=[CHANNEL])


def test_a_mention_starts_a_session_and_queues_its_turn(binding, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as callbacks:
        result = services.route_message(binding.connection, said())
    session = Session.objects.get()
    turn = Turn.objects.get()
    assert (result.route, result.created) == (Route.TURN, True)
    assert (session.channel_id, session.thread_ts, session.context_id) == (CHANNEL, "1700000001.000100", "")
    assert (turn.state, turn.user_id, turn.session) == (Turn.State.QUEUED, "U0ADA", session)
    assert enqueued(callbacks) == [("drive_session", (session.id,))]  # one message per turn


@pytest.mark.requires_postgres("a top-level mention's turn is inserted in one statement there")
def test_the_files_a_message_shares_are_kept_with_its_turn(binding, monkeypatch):
    monkeypatch.setenv(binding.connection.bot_token_env, "xoxb-test")
    shared = SharedFile("F1", "app.log", "text/plain", 12, "https://files.slack.com/files-pri/T1-F1/app.log")
    services.route_message(binding.connection, said(files=(shared,)))
    services.route_message(
        binding.connection,
        said("and this", ts="1700000002.000100", thread_ts="1700000001.000100", files=(shared,)),
    )

    assert [turn.files for turn in Turn.objects.order_by("message_ts")] == [[shared.as_json()]] * 2
    assert turns.start_turn(Turn.objects.order_by("message_ts").first().pk).files == (shared,)


def test_the_same_message_delivered_again_is_one_turn(binding, django_capture_on_commit_callbacks):
    services.route_message(binding.connection, said())
    with django_capture_on_commit_callbacks() as callbacks:
        again = services.route_message(binding.connection, said())
    assert again.created is False
    assert Turn.objects.count() == 1
    assert callbacks == []


@pytest.mark.parametrize("thread_ts", [None, "1700000000.000100"], ids=["top level", "thread reply"])
def test_a_message_slack_sends_again_unacknowledged_queues_its_session_again(
    binding, thread_ts, django_capture_on_commit_callbacks
):
    """The process that stored the turn may have died before it queued it: nothing else would."""
    if thread_ts:
        services.route_message(binding.connection, said(ts=thread_ts))
    first = services.route_message(binding.connection, said(thread_ts=thread_ts))
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        again = services.route_message(binding.connection, said(thread_ts=thread_ts, redelivered=True))
    assert (again.created, again.turn_id) == (False, first.turn_id)
    assert enqueued(callbacks) == [("drive_session", (Session.objects.get().id,))]
    assert Turn.objects.filter(message_ts=said().ts).count() == 1


def rows_written() -> int:
    """Rows inserted, updated or deleted so far: by this connection (SQLite), in this transaction, the
    test's (PostgreSQL)."""
    with db.connection.cursor() as cursor:
        if db.connection.vendor == "sqlite":
            cursor.execute("SELECT total_changes()")
        else:
            cursor.execute("SELECT sum(n_tup_ins + n_tup_upd + n_tup_del) FROM pg_stat_xact_user_tables")
        return cursor.fetchone()[0] or 0


@pytest.mark.parametrize("thread_ts", [None, "1700000000.000100"], ids=["top level", "thread reply"])
def test_a_redelivery_names_the_turn_the_first_delivery_made_in_one_statement_and_writes_nothing(
    binding, thread_ts
):
    if thread_ts:
        services.route_message(binding.connection, said(ts=thread_ts))
    first = services.route_message(binding.connection, said(thread_ts=thread_ts))
    written = rows_written()
    with CaptureQueriesContext(db.connection) as queries:
        again = services.route_message(binding.connection, said(thread_ts=thread_ts))
    assert (again.route, again.created, again.turn_id) == (Route.TURN, False, first.turn_id)
    assert len(queries.captured_queries) == 1
    assert rows_written() == written


# The statements a new mention at the top level costs ingress. PostgreSQL stores its session and turn
# in one statement; SQLite, which has no INSERT in a WITH, takes the general path: the thread read,
# then the session and the turn inserted in a transaction (its savepoint and release included). Both
# are asserted, so that a statement more fails `make test` on SQLite too.
NEW_MENTION_STATEMENTS = {"postgresql": 1, "sqlite": 5}


def test_a_new_mention_at_the_top_level_costs_as_few_statements_as_its_database_allows(binding):
    directory.current()  # the process's snapshot of Bindings, as ingress has it
    with CaptureQueriesContext(db.connection) as queries:
        services.route_message(binding.connection, said())
    assert Turn.objects.get().session == Session.objects.get()
    assert len(queries.captured_queries) == NEW_MENTION_STATEMENTS[db.connection.vendor]


def test_a_note_delivered_again_is_one_note():
    binding = BindingFactory(channels=[CHANNEL], thread_replies="mention")
    services.route_message(binding.connection, said())
    reply = said("fyi", ts="1700000002.000000", thread_ts="1700000001.000100", mentions_bot=False)
    assert services.route_message(binding.connection, reply).created is True
    assert services.route_message(binding.connection, reply).created is False
    assert ThreadNote.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_deliveries_of_one_message_at_the_same_time_make_one_session_and_one_turn(binding):
    """Both find no session and race to insert it and the turn; the unique constraints decide."""
    deliveries = 4
    start = threading.Barrier(deliveries)
    results: list[services.RouteResult] = []

    def deliver() -> None:
        try:
            start.wait()
            results.append(services.route_message(binding.connection, said()))
        finally:
            db.connection.close()

    threads = [threading.Thread(target=deliver) for _ in range(deliveries)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    turn = Turn.objects.get()
    assert Session.objects.count() == 1
    assert sorted(result.created for result in results) == [False] * (deliveries - 1) + [True]
    assert {result.turn_id for result in results} == {turn.id}


def test_the_turn_message_id_is_derived_from_the_slack_message(binding):
    services.route_message(binding.connection, said())
    turn = Turn.objects.get()
    assert turn.message_id == turns.message_id_for(binding.connection_id, CHANNEL, "1700000001.000100")
    assert turn.message_id != turns.message_id_for(binding.connection_id, CHANNEL, "1700000001.000200")


def test_a_message_in_an_unbound_channel_is_nothing(binding):
    result = services.route_message(binding.connection, said(channel="C0UNBOUND1"))
    assert result.route is None
    assert not Session.objects.exists()


def test_replies_in_a_session_thread_queue_in_order(binding):
    services.route_message(binding.connection, said())
    services.route_message(
        binding.connection,
        said("b", ts="1700000003.000000", thread_ts="1700000001.000100", mentions_bot=False),
    )
    services.route_message(
        binding.connection,
        said("a", ts="1700000002.000000", thread_ts="1700000001.000100", mentions_bot=False),
    )
    session = Session.objects.get()
    assert [t.text for t in session.turns.order_by("message_ts")] == ["hello", "a", "b"]
    assert turns.next_queued_turn(session.id).text == "hello"


def test_with_threadreplies_mention_a_plain_reply_is_kept_as_a_note(django_capture_on_commit_callbacks):
    binding = BindingFactory(channels=[CHANNEL], thread_replies="mention")
    services.route_message(binding.connection, said())
    with django_capture_on_commit_callbacks() as callbacks:
        result = services.route_message(
            binding.connection,
            said("fyi", ts="1700000002.000000", thread_ts="1700000001.000100", mentions_bot=False),
        )
    assert result.route is Route.NOTE
    assert ThreadNote.objects.get().text == "fyi"
    assert Turn.objects.count() == 1
    assert callbacks == []


def test_a_reply_after_the_ttl_gets_the_expiry_notice_once(binding, django_capture_on_commit_callbacks):
    services.route_message(binding.connection, said())
    later = timezone.now() + binding.thread_ttl + timedelta(seconds=1)
    reply = said("still there?", ts="1700000009.000000", thread_ts="1700000001.000100", mentions_bot=False)
    with django_capture_on_commit_callbacks() as callbacks:
        result = services.route_message(binding.connection, reply, now=later)
        services.route_message(binding.connection, reply, now=later)
    turn = Turn.objects.get(message_ts="1700000009.000000")
    assert result.route is Route.EXPIRED
    assert turn.state == Turn.State.EXPIRED
    assert enqueued(callbacks) == [("tell_expired", (turn.id,))]


def test_activity_moves_the_expiry_forward(binding):
    start = timezone.now()
    services.route_message(binding.connection, said(), now=start)
    later = start + timedelta(days=30)
    services.route_message(
        binding.connection, said("more", ts="1700000002.000000", thread_ts="1700000001.000100"), now=later
    )
    session = Session.objects.get()
    assert session.expires_at == later + binding.thread_ttl


class AwaitingATypedReply:
    """Pauses handed in whose open pause in every thread takes a typed reply, recording the takes."""

    def __init__(self) -> None:
        self.taken: list[str] = []

    def awaits_typed_reply(self, session_id: int) -> bool:
        return True

    def take_typed_reply(self, session, *, message_ts, user_id, text, now) -> int | None:
        self.taken.append(message_ts)
        return Turn.objects.create(
            session=session,
            connection_id=session.connection_id,
            channel_id=session.channel_id,
            message_ts=message_ts,
            kind=Turn.Kind.TYPED_ANSWER,
            user_id=user_id,
        ).pk


class TestAReplyThatWouldAnswerTheOpenPause:
    """Its author is checked as a press's presser is, by the door, before it is taken as the answer."""

    REPLY = said("staging", ts="1700000002.000100", thread_ts="1700000001.000100", mentions_bot=False)

    @pytest.fixture
    def pause(self, binding, monkeypatch) -> AwaitingATypedReply:
        services.route_message(binding.connection, said())
        awaiting = AwaitingATypedReply()
        monkeypatch.setattr(pauses, "_pauses", awaiting)
        return awaiting

    def test_is_not_stored_until_its_author_is_checked(self, binding, pause):
        result = services.route_message(binding.connection, self.REPLY)
        assert (result.author_unchecked, result.created, result.turn_id) == (True, False, None)
        assert pause.taken == []
        assert Turn.objects.count() == 1

    def test_is_the_answer_once_its_author_may_answer(self, binding, pause):
        result = services.route_message(binding.connection, self.REPLY, author_may_answer=True)
        assert pause.taken == [self.REPLY.ts]
        assert Turn.objects.get(pk=result.turn_id).kind == Turn.Kind.TYPED_ANSWER

    def test_from_someone_who_may_not_answer_is_a_reply_as_any_other(self, binding, pause):
        result = services.route_message(binding.connection, self.REPLY, author_may_answer=False)
        assert pause.taken == []
        assert (result.route, result.created) == (Route.TURN, True)
        assert Turn.objects.get(pk=result.turn_id).kind == Turn.Kind.MESSAGE
