"""Sessions and turns are browsed read-only; a turn's message text is shown to superusers only."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse
from django.utils import timezone

from sessions.models import Turn
from tests.factories import BindingFactory, SessionFactory, StaffUserFactory, TurnFactory

pytestmark = pytest.mark.django_db

SECRET_TEXT = "the database password is hunter2"


@pytest.fixture
def turn():
    return TurnFactory(
        text=SECRET_TEXT,
        state=Turn.State.DONE,
        outcome=Turn.Outcome.COMPLETED,
        task_id="task-7f3a",
        started_at=timezone.now() - timedelta(seconds=9),
        ended_at=timezone.now(),
    )


@pytest.fixture
def staff_client(client):
    client.force_login(StaffUserFactory(permissions=["threads.view_turn", "threads.view_session"]))
    return client


def turn_page(client, turn):
    response = client.get(reverse("admin:threads_turn_change", args=[turn.pk]))
    assert response.status_code == 200
    return response


def fieldsets_of(page) -> list[str | None]:
    return [fieldset.name for fieldset in page.context["adminform"]]


def test_the_turn_list_shows_state_outcome_task_id_and_times_but_no_text(staff_client, turn):
    response = staff_client.get(reverse("admin:threads_turn_changelist"))

    assert response.status_code == 200
    [listed] = response.context["cl"].result_list
    assert listed == turn
    content = response.content.decode()
    assert "task-7f3a" in content
    assert "completed" in content
    assert SECRET_TEXT not in content


def test_a_turn_links_to_its_thread_in_slack_once_the_workspace_is_known(staff_client, turn):
    turn.session.binding.connection.team_id = "T0001"
    turn.session.binding.connection.save()
    thread = (
        f"https://app.slack.com/client/T0001/{turn.session.channel_id}/thread/"
        f"{turn.session.channel_id}-{turn.session.thread_ts}"
    )

    content = staff_client.get(reverse("admin:threads_turn_changelist")).content.decode()

    assert f'<a href="{thread}" target="_blank" rel="noopener">open thread</a>' in content


def test_under_the_simulator_a_turn_links_to_its_thread_on_the_simulators_page(staff_client, turn, settings):
    settings.SIMULATOR_URL = "http://127.0.0.1:8091/"

    content = staff_client.get(reverse("admin:threads_turn_changelist")).content.decode()

    assert f'<a href="/simulator/#thread={turn.session.thread_ts}" target="_blank"' in content


@pytest.mark.parametrize(
    ("query", "shown"),
    [
        ({"state__exact": "failed"}, ["failed"]),
        ({"outcome__exact": "unreachable"}, ["failed"]),
        ({"state__exact": "queued"}, ["queued"]),
        ({"q": "task-failed"}, ["failed"]),
    ],
)
def test_turns_filter_by_state_outcome_and_search_by_task_id(admin_client, query, shown):
    TurnFactory(state=Turn.State.QUEUED)
    TurnFactory(state=Turn.State.FAILED, outcome=Turn.Outcome.UNREACHABLE, task_id="task-failed")

    response = admin_client.get(reverse("admin:threads_turn_changelist"), query)

    assert [t.state for t in response.context["cl"].result_list] == shown


def test_turns_filter_by_binding(admin_client):
    ops = BindingFactory(name="ops")
    mine = TurnFactory(session__binding=ops)
    TurnFactory()

    response = admin_client.get(
        reverse("admin:threads_turn_changelist"), {"session__binding__id__exact": ops.pk}
    )

    assert list(response.context["cl"].result_list) == [mine]


def test_a_staff_member_sees_a_turn_without_its_message_text(staff_client, turn):
    page = turn_page(staff_client, turn)

    assert fieldsets_of(page) == [None, "Agent", "Reply", "Times"]
    assert "task-7f3a" in page.content.decode()
    assert SECRET_TEXT not in page.content.decode()


def test_a_superuser_sees_the_turns_message_text(admin_client, turn):
    page = turn_page(admin_client, turn)

    assert fieldsets_of(page) == [None, "Agent", "Reply", "Times", "Message"]
    assert SECRET_TEXT in page.content.decode()


def test_nobody_adds_changes_or_deletes_a_turn_or_a_session(admin_client, turn):
    page = turn_page(admin_client, turn).content.decode()

    assert 'name="_save"' not in page
    assert admin_client.get(reverse("admin:threads_turn_add")).status_code == 403
    assert admin_client.post(reverse("admin:threads_turn_delete", args=[turn.pk])).status_code == 403
    assert admin_client.get(reverse("admin:threads_session_add")).status_code == 403
    assert (
        admin_client.post(reverse("admin:threads_session_delete", args=[turn.session.pk])).status_code == 403
    )
    admin_client.post(reverse("admin:threads_turn_change", args=[turn.pk]), {"state": "queued"})
    turn.refresh_from_db()
    assert turn.state == Turn.State.DONE


@pytest.mark.parametrize(
    ("state", "shown"),
    [("open", ["running", "open"]), ("running", ["running"]), ("expired", ["expired"])],
)
def test_sessions_filter_by_state(admin_client, state, shown):
    now = timezone.now()
    SessionFactory(thread_ts="1.000001", last_activity_at=now)
    SessionFactory(
        thread_ts="1.000002",
        last_activity_at=now + timedelta(seconds=1),
        lease_owner="worker-1",
        lease_expires_at=now + timedelta(minutes=1),
    )
    SessionFactory(
        thread_ts="1.000003", last_activity_at=now - timedelta(days=2), expires_at=now - timedelta(days=1)
    )

    response = admin_client.get(reverse("admin:threads_session_changelist"), {"state": state})

    model_admin = response.context["cl"].model_admin
    assert [model_admin.state(s) for s in response.context["cl"].result_list] == shown


def test_a_sessions_page_lists_its_turns_without_their_text(staff_client, turn):
    response = staff_client.get(reverse("admin:threads_session_change", args=[turn.session.pk]))

    assert response.status_code == 200
    content = response.content.decode()
    assert "task-7f3a" in content
    assert SECRET_TEXT not in content


# What a member of staff who may view activity could try, to learn a text the pages hide: each a
# filter in the query string that Django would otherwise allow on the model's own field.
HIDDEN_TEXT_LOOKUPS = [
    ("threads_turn_changelist", {"text__contains": "hunter2"}),
    ("threads_turn_changelist", {"text__icontains": "HUNTER2"}),
    ("threads_turn_changelist", {"text__startswith": "the database"}),
    ("threads_turn_changelist", {"text__regex": "hunter[0-9]"}),
    ("threads_turn_changelist", {"text": SECRET_TEXT}),
    ("threads_turn_changelist", {"answers__icontains": "yes"}),
    ("threads_turn_changelist", {"answers__contains": "[true]"}),
    ("threads_turn_changelist", {"stream_cards__icontains": "deploy"}),
    ("interactions_interaction_changelist", {"pause__icontains": "password"}),
    ("interactions_interaction_changelist", {"pause__contains": "{}"}),
    ("interactions_interaction_changelist", {"turn__text__contains": "hunter2"}),
    ("interactions_interaction_changelist", {"answer_turn__text__contains": "hunter2"}),
    ("threads_session_changelist", {"turns__text__contains": "hunter2"}),
]


@pytest.mark.parametrize(("page", "query"), HIDDEN_TEXT_LOOKUPS)
def test_staff_cannot_filter_on_a_text_the_pages_hide(client, turn, page, query):
    client.force_login(
        StaffUserFactory(
            permissions=["threads.view_turn", "threads.view_session", "interactions.view_interaction"]
        )
    )

    response = client.get(reverse(f"admin:{page}"), query)

    assert response.status_code == 400


@pytest.mark.parametrize(("page", "query"), HIDDEN_TEXT_LOOKUPS[:5])
def test_a_superuser_who_sees_the_text_may_filter_on_it(admin_client, turn, page, query):
    assert admin_client.get(reverse(f"admin:{page}"), query).status_code == 200


def test_no_search_or_ordering_reaches_a_hidden_text(rf):
    from django.contrib.admin.sites import site

    request = rf.get("/")
    request.user = StaffUserFactory(permissions=["threads.view_turn"])
    for model in site._registry:
        model_admin = site._registry[model]
        hidden = set(getattr(model_admin, "hidden_fields", ()))
        searched = {f.lstrip("^=@").split("__")[0] for f in model_admin.get_search_fields(request)}
        assert not hidden & searched, model
        assert not hidden & set(model_admin.get_sortable_by(request)), model


def test_a_turn_row_shows_the_person_and_to_superusers_a_short_snippet(admin_client):
    long_text = "please look at the payments service, it is slow since this morning and customers notice"
    TurnFactory(text=long_text, user_id="U0ADA")
    TurnFactory(text="Disk full", user_id="")

    response = admin_client.get(reverse("admin:threads_turn_changelist"))

    content = response.content.decode()
    assert "U0ADA" in content
    assert ">kourier-system<" in content  # a trigger's turn is filed under the system identity
    assert "please look at the payments service, it is slow since this…" in content
    assert long_text not in content


def test_staff_see_the_person_but_no_snippet(staff_client, turn):
    response = staff_client.get(reverse("admin:threads_turn_changelist"))

    assert "Filed under" in response.content.decode()
    assert "snippet" not in response.context["cl"].list_display
    assert SECRET_TEXT not in response.content.decode()


def test_an_ended_turns_acknowledgment_taken_off_reads_as_done_not_as_a_red_cross(admin_client, turn):
    content = turn_page(admin_client, turn).content.decode()

    assert "Reaction taken off: the turn ended" in content
    assert "icon-no.svg" not in content


def test_the_turn_shows_peoples_feedback_on_its_answer_without_comments(staff_client, turn):
    from interactions.models import Feedback

    Feedback.objects.create(turn=turn, user_id="U0ADA", is_positive=True)
    Feedback.objects.create(
        turn=turn, user_id="U0GRACE", is_positive=False, comment="it was wrong", issue_type="factual"
    )

    page = turn_page(staff_client, turn).content.decode()

    assert "👍 U0ADA, 👎 U0GRACE (factual)" in page
    assert "it was wrong" not in page


def test_the_admin_calls_the_sessions_app_sessions_and_keeps_its_stored_label(staff_client):
    page = staff_client.get(reverse("admin:app_list", kwargs={"app_label": "threads"}))

    assert page.status_code == 200
    assert page.context["title"] == "Sessions administration"
    assert "Thread sessions" not in page.content.decode()
    view_session = Permission.objects.get(codename="view_session", content_type__app_label="threads")
    assert str(view_session) == "Sessions | session | Can view session"


def test_a_sessions_page_draws_its_timeline_without_message_text_for_staff(staff_client, turn):
    response = staff_client.get(reverse("admin:threads_session_change", args=[turn.session.pk]))

    assert response.status_code == 200
    content = response.content.decode()
    assert '<svg class="session-timeline"' in content
    assert f"turn {turn.pk} ran: completed" in content
    assert SECRET_TEXT not in content


def test_a_superuser_sees_the_message_text_in_the_timeline(admin_client, turn):
    response = admin_client.get(reverse("admin:threads_session_change", args=[turn.session.pk]))

    content = response.content.decode()
    start = content.index('<svg class="session-timeline"')
    drawing = content[start : content.index("</svg>", start)]
    assert SECRET_TEXT in drawing
