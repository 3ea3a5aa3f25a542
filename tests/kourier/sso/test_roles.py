import pytest

from kourier.sso.roles import Roles, groups_in, roles_for

MAPPING = {
    "staff_groups": ["kourier-staff"],
    "superuser_groups": ["kourier-admins"],
    "decide_groups": ["kourier-approvers"],
}


@pytest.mark.parametrize(
    ("value", "groups"),
    [
        (["a", "b"], {"a", "b"}),
        ("a", {"a"}),  # some providers send a single group as a string
        (["a", 3, None, ""], {"a"}),
        ("", set()),
        ({"a": True}, set()),
        (None, set()),
    ],
)
def test_the_groups_claim_names_groups_as_a_list_or_one_string(value, groups):
    assert groups_in({"groups": value}, "groups") == groups


def test_a_claim_that_is_not_there_names_no_group():
    assert groups_in({"roles": ["a"]}, "groups") == frozenset()


def test_a_mapped_group_gives_its_role():
    assert roles_for(["kourier-staff", "other"], **MAPPING) == Roles(staff=True)


def test_a_superuser_and_someone_who_decides_are_staff_too():
    assert roles_for(["kourier-admins"], **MAPPING) == Roles(staff=True, superuser=True)
    assert roles_for(["kourier-approvers"], **MAPPING) == Roles(staff=True, decide=True)


def test_no_mapped_group_gives_no_role():
    assert roles_for(["everyone"], **MAPPING) == Roles()
    assert roles_for([], **{name: [] for name in MAPPING}) == Roles()


def test_roles_are_named_in_one_order():
    assert Roles(staff=True, superuser=True, decide=True).names() == ["staff", "superuser", "decide"]
