"""The audit log in the admin: browsed, filtered and searched, never added to, changed or deleted."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from audit.services import record
from interactions.models import Interaction
from tests.factories import TurnFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def rows():
    return [
        record("interaction.decided", binding_name="ops", actor_id="U0ADA", subject="interaction 12",
               details={"approved": 1, "denied": 1}),
        record("interaction.timed_out", binding_name="dev", subject="interaction 13"),
    ]  # fmt: skip


def changelist(admin_client, **query):
    return admin_client.get(reverse("admin:audit_auditevent_changelist"), query)


@pytest.mark.parametrize(
    ("query", "shown"),
    [
        ({"binding_name": "ops"}, ["interaction 12"]),
        ({"action": "interaction.timed_out"}, ["interaction 13"]),
        ({"actor_id": "U0ADA"}, ["interaction 12"]),
        ({"q": "interaction 13"}, ["interaction 13"]),
    ],
)
def test_the_audit_list_filters_by_binding_action_slack_user_and_searches_by_interaction(
    admin_client, rows, query, shown
):
    response = changelist(admin_client, **query)
    assert response.status_code == 200
    assert [row.subject for row in response.context["cl"].result_list] == shown


def test_a_date_range_filters_the_list(admin_client, rows):
    today = timezone.now().date()
    inside = changelist(admin_client, at__gte=str(today), at__lt=str(today + timedelta(days=1)))
    before = changelist(
        admin_client, at__gte=str(today - timedelta(days=9)), at__lt=str(today - timedelta(days=8))
    )
    assert len(inside.context["cl"].result_list) == 2
    assert len(before.context["cl"].result_list) == 0


def test_a_row_has_a_read_only_detail_page_and_nobody_adds_changes_or_deletes(admin_client, rows):
    row = rows[0]
    detail = admin_client.get(reverse("admin:audit_auditevent_change", args=[row.pk]))
    assert detail.status_code == 200
    assert b"interaction 12" in detail.content
    assert b'name="_save"' not in detail.content
    assert admin_client.get(reverse("admin:audit_auditevent_add")).status_code == 403
    assert admin_client.post(reverse("admin:audit_auditevent_delete", args=[row.pk])).status_code == 403
    admin_client.post(reverse("admin:audit_auditevent_change", args=[row.pk]), {"action": "changed"})
    row.refresh_from_db()
    assert row.action == "interaction.decided"


@pytest.fixture
def turn():
    return TurnFactory()


def test_pending_interactions_are_listed_with_their_deadlines(admin_client, turn):
    deadline = timezone.now() + timedelta(minutes=30)
    Interaction.objects.create(
        turn=turn, session=turn.session, kind="approval", pause={}, deadline=deadline, channel_id="C1"
    )
    response = admin_client.get(
        reverse("admin:interactions_interaction_changelist"), {"state__exact": "open"}
    )
    assert response.status_code == 200
    [listed] = response.context["cl"].result_list
    assert listed.deadline == deadline
    assert b"Deadline" in response.content
