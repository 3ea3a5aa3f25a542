import pytest
from django.contrib.auth.models import Group, User

from audit.models import AuditEvent
from audit.services import DJANGO_USER
from interactions.outside import PERMISSION
from kourier.sso.accounts import AUDIT_ACTION, signed_in
from kourier.sso.roles import Roles

pytestmark = pytest.mark.django_db

ALL = Roles(staff=True, superuser=True, decide=True)


def audited() -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(action=AUDIT_ACTION).order_by("pk"))


def fresh(username: str) -> User:
    return User.objects.get(username=username)  # permissions are cached on an instance


def test_a_first_sign_in_makes_the_user_with_its_roles_and_no_usable_password():
    signed_in(username="ada@example.com", email="ada@example.com", roles=ALL, groups=[])

    user = fresh("ada@example.com")
    assert (user.is_staff, user.is_superuser, user.email) == (True, True, "ada@example.com")
    assert user.user_permissions.filter(codename=PERMISSION.split(".")[1]).exists()
    assert not user.has_usable_password()
    [row] = audited()
    assert (row.actor_kind, row.actor_id, row.subject) == (
        DJANGO_USER,
        "ada@example.com",
        "user ada@example.com",
    )
    assert row.details == {
        "created": True,
        "granted": ["decide", "staff", "superuser"],
        "revoked": [],
        "groups_joined": [],
        "groups_left": [],
    }


def test_a_later_sign_in_revokes_what_the_provider_no_longer_names():
    signed_in(username="ada", email="", roles=ALL, groups=[])
    signed_in(username="ada", email="", roles=Roles(staff=True), groups=[])

    user = fresh("ada")
    assert (user.is_staff, user.is_superuser, user.has_perm(PERMISSION)) == (True, False, False)
    assert audited()[-1].details["revoked"] == ["decide", "superuser"]


def test_the_decide_permission_alone_lets_its_holder_decide():
    signed_in(username="ada", email="", roles=Roles(staff=True, decide=True), groups=[])

    assert fresh("ada").has_perm(PERMISSION)


def test_the_users_django_groups_are_those_the_provider_names_that_exist():
    approvers, _ = Group.objects.get_or_create(name="approvers")
    Group.objects.create(name="ops")
    user = signed_in(
        username="ada", email="", roles=Roles(staff=True), groups=["approvers", "ops", "nobody-made-it"]
    )
    assert sorted(user.groups.values_list("name", flat=True)) == ["approvers", "ops"]

    signed_in(username="ada", email="", roles=Roles(staff=True), groups=["approvers"])

    assert list(fresh("ada").groups.all()) == [approvers]
    assert not Group.objects.filter(name="nobody-made-it").exists()
    assert audited()[-1].details["groups_left"] == ["ops"]


def test_a_sign_in_that_changes_nothing_is_not_audited_again():
    signed_in(username="ada", email="", roles=Roles(staff=True), groups=[])
    signed_in(username="ada", email="", roles=Roles(staff=True), groups=[])

    assert len(audited()) == 1


def test_a_local_user_of_the_same_name_is_the_one_signed_in_and_keeps_its_password():
    User.objects.create_user("ada", password="a local password", is_superuser=True, is_staff=True)

    signed_in(username="ada", email="", roles=Roles(staff=True), groups=[])

    user = fresh("ada")
    assert (user.is_superuser, user.has_usable_password()) == (False, True)
