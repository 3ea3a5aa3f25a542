"""Migrations ``alerts.0004``/``0005``: what the earlier release recorded of an alert's posts is carried
over to the outbox's record before its columns go."""

from datetime import UTC, datetime

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from alerts import delivery
from alerts.models import Alert, AlertMember, AlertPost
from sessions.models import PostIntent
from tests.factories import BindingFactory, SessionFactory

BEFORE = [("alerts", "0003_alert_delivery_failures"), ("threads", "0010_turn_time_indexes")]
BEGUN = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


@pytest.mark.django_db(transaction=True)
def test_posts_confirmed_are_delivered_and_posts_begun_are_looked_for_before_they_are_posted_again():
    binding = BindingFactory()
    old = migrate(BEFORE)
    try:
        OldAlert, OldPost = old.get_model("alerts", "Alert"), old.get_model("alerts", "AlertPost")
        thread = OldAlert.objects.create(
            binding_id=binding.pk, trigger="t", key="k", channel_id="C1", first_fired_at=BEGUN
        )

        def post(key, kind, **record):
            OldPost.objects.create(alert=thread, key=key, kind=kind, text=f"{key} text", **record)

        # The root was confirmed and the worker died before the alert kept its ts.
        post(f"alert-{thread.pk}", "message", state="confirmed", ts="1.000001", attempted_at=BEGUN)
        post("joined", "note", state="confirmed", ts="1.000002", attempted_at=BEGUN)
        post("fired-again", "note", state="intended", attempted_at=BEGUN)  # may have reached Slack
        post("resolved", "note", state="intended")  # never tried
    finally:
        migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())

    assert Alert.objects.get().root_ts == "1.000001"
    delivered = AlertPost.objects.exclude(delivered_at=None).values_list("key", flat=True)
    assert sorted(delivered) == sorted([f"alert-{thread.pk}", "joined"])
    begun = PostIntent.objects.get()
    assert (begun.key, begun.kind, begun.state, begun.turn, begun.created_at) == (
        "fired-again",
        "note",
        PostIntent.State.INTENDED,
        None,
        BEGUN,
    )
    assert delivery.owes_posts(thread.pk)


@pytest.mark.django_db(transaction=True)
def test_the_threads_whose_session_an_earlier_release_deleted_and_kept_are_deleted():
    binding = BindingFactory()
    live = SessionFactory(binding=binding)
    old = migrate([("alerts", "0005_alert_posts_keep_no_record_of_their_own")])
    try:
        OldAlert, OldMember = old.get_model("alerts", "Alert"), old.get_model("alerts", "AlertMember")

        def thread(key, **fields):
            made = OldAlert.objects.create(
                binding_id=binding.pk, trigger="t", key=key, channel_id="C1", first_fired_at=BEGUN, **fields
            )
            OldMember.objects.create(
                thread=made, fingerprint=key, name=key, occurrence="o", first_fired_at=BEGUN
            )

        thread("unowned", root_ts="1.000001", thread_started_at=BEGUN)  # its session deleted, SET_NULL
        thread("owned", root_ts="1.000002", thread_started_at=BEGUN, session_id=live.pk)
        thread("not-started-yet", root_ts="1.000003")
    finally:
        migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())

    assert sorted(Alert.objects.values_list("key", flat=True)) == ["not-started-yet", "owned"]
    assert sorted(AlertMember.objects.values_list("fingerprint", flat=True)) == ["not-started-yet", "owned"]
