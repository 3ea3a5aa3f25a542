"""The audit log in the admin: browsed, filtered and searched, exported as CSV with the same filters,
never added to, changed or deleted."""

import csv
import io
import json
from datetime import datetime, timedelta

import pytest
from asgiref.sync import async_to_sync
from django.urls import reverse
from django.utils import timezone

from audit import chain
from audit.export import read_cell
from audit.services import record
from interactions.models import Interaction
from tests.factories import StaffUserFactory, TurnFactory

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


# --- CSV export --------------------------------------------------------------------------------------


def export(client, **query) -> list[dict[str, str]]:
    """The export's rows, read as the web process (ASGI) streams them."""
    response = client.get(reverse("admin:audit_auditevent_export"), query)
    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv"
    assert response["Content-Disposition"].startswith('attachment; filename="audit-')

    async def read() -> bytes:
        return b"".join([part async for part in response.streaming_content])

    return list(csv.DictReader(io.StringIO(async_to_sync(read)().decode())))


@pytest.mark.parametrize(
    ("query", "exported"),
    [
        ({}, ["interaction 13", "interaction 12"]),
        ({"binding_name": "ops"}, ["interaction 12"]),
        ({"action": "interaction.timed_out"}, ["interaction 13"]),
        ({"actor_id": "U0ADA"}, ["interaction 12"]),
        ({"q": "interaction 13"}, ["interaction 13"]),
        ({"o": "1"}, ["interaction 12", "interaction 13"]),  # by action, A to Z
    ],
)
def test_the_export_has_the_rows_the_list_shows_for_the_same_filters_search_and_order(
    admin_client, rows, query, exported
):
    listed = [row.subject for row in changelist(admin_client, **query).context["cl"].result_list]

    assert [row["subject"] for row in export(admin_client, **query)] == listed == exported


def test_the_export_follows_a_date_range(admin_client, rows):
    today = timezone.now().date()

    assert len(export(admin_client, at__gte=str(today), at__lt=str(today + timedelta(days=1)))) == 2
    assert (
        export(admin_client, at__gte=str(today - timedelta(days=9)), at__lt=str(today - timedelta(days=8)))
        == []
    )


def test_an_exported_row_has_what_its_detail_page_shows_and_nothing_else(admin_client, rows):
    [row] = export(admin_client, binding_name="ops")

    assert row == {
        "id": str(rows[0].pk),
        "at": rows[0].at.isoformat(),
        "action": "interaction.decided",
        "binding_name": "ops",
        "actor_kind": "user",
        "actor_id": "U0ADA",
        "requester": "",
        "policy": "",
        "subject": "interaction 12",
        "details": '{"approved":1,"denied":1}',
        "previous_hash": rows[0].previous_hash,
        "hash": rows[0].hash,
        "key_id": "",
    }


def test_an_export_is_checkable_on_its_own_each_row_chained_to_the_one_before(admin_client, rows):
    exported = export(admin_client)
    exported.sort(key=lambda row: int(row["id"]))
    previous_hash = chain.GENESIS

    for row in exported:
        content = {**row, "at": datetime.fromisoformat(row["at"]), "details": json.loads(row["details"])}
        assert row["previous_hash"] == previous_hash
        assert chain.digest(previous_hash, content) == row["hash"]
        previous_hash = row["hash"]
    assert len(exported) == 2


# What a spreadsheet would run, at the start of a cell (OWASP's CSV injection list), and quotes before it.
FORMULAS = ['=HYPERLINK("http://x")', "+1+1", "-2+3", "@SUM(A1)", "\tcmd", "\rcmd", "'=already quoted"]


@pytest.mark.parametrize("formula", FORMULAS)
def test_a_cell_a_spreadsheet_would_run_is_exported_quoted_and_still_checks(admin_client, formula):
    record("interaction.decided", binding_name="ops", actor_id=formula, subject=formula, policy=formula)

    [row] = export(admin_client)

    for column in ("actor_id", "subject", "policy"):
        assert row[column] == "'" + formula
        assert read_cell(row[column]) == formula
    content = {
        **{column: read_cell(value) for column, value in row.items()},
        "at": datetime.fromisoformat(row["at"]),
        "details": json.loads(row["details"]),
    }
    assert chain.digest(row["previous_hash"], content) == row["hash"]


@pytest.mark.parametrize("kept", ["U0ADA", "'quoted", "a=b", "", "interaction 12"])
def test_any_other_cell_is_exported_as_it_is(admin_client, kept):
    record("interaction.decided", binding_name="ops", actor_id="U0ADA", subject=kept)

    [row] = export(admin_client)

    assert row["subject"] == read_cell(row["subject"]) == kept


def test_the_list_offers_the_export_with_its_filters_but_not_its_page(admin_client, rows):
    content = changelist(admin_client, binding_name="ops", q="interaction", p="1").content.decode()

    assert 'href="/admin/audit/auditevent/export/?binding_name=ops&amp;q=interaction"' in content


def test_a_detail_page_offers_the_export_of_its_row(admin_client, rows):
    detail = admin_client.get(reverse("admin:audit_auditevent_change", args=[rows[1].pk])).content.decode()

    assert f'href="/admin/audit/auditevent/export/?id__exact={rows[1].pk}"' in detail
    assert [row["subject"] for row in export(admin_client, id__exact=rows[1].pk)] == ["interaction 13"]


def test_filters_the_audit_does_not_have_are_refused(admin_client, rows):
    response = admin_client.get(reverse("admin:audit_auditevent_export"), {"secret": "x"})

    assert response.status_code == 400


def test_the_export_is_for_those_who_may_view_the_audit(client, rows):
    client.force_login(StaffUserFactory(permissions=["threads.view_turn"]))

    assert client.get(reverse("admin:audit_auditevent_export")).status_code == 403
