"""The Django user a sign-in names: made at the first one, brought in line with the provider's word at
every one after. The provider is the source of truth for whoever signs in through it:

- staff, superuser and the permission to decide tool approvals outside Slack
  (``interactions.decide_interaction``) follow the groups the operator mapped (``roles``), granted
  and revoked alike;
- the user's Django groups are those named as their provider's groups (a Binding's deciding groups
  are Django groups): a Django group nobody created is not made, and a membership the provider no
  longer names is ended;
- a user made here has no usable password: they sign in through the provider only.

A change of roles or groups is audited (``sso.roles_changed``), with the user as its actor.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth.models import Group, Permission, User
from django.db import transaction

from audit.services import DJANGO_USER, record
from interactions.outside import PERMISSION as DECIDE_PERMISSION

from .roles import Roles

AUDIT_ACTION = "sso.roles_changed"


def decide_permission() -> Permission:
    app_label, codename = DECIDE_PERMISSION.split(".")
    return Permission.objects.get(content_type__app_label=app_label, codename=codename)


def roles_of(user: User, permission: Permission) -> Roles:
    return Roles(
        staff=user.is_staff,
        superuser=user.is_superuser,
        decide=user.user_permissions.filter(pk=permission.pk).exists(),
    )


def signed_in(*, username: str, email: str, roles: Roles, groups: Iterable[str]) -> User:
    """The user ``username`` with ``roles`` and the Django groups among ``groups``, made if new."""
    with transaction.atomic():
        user, created = User.objects.select_for_update().get_or_create(username=username)
        permission = decide_permission()
        before = Roles() if created else roles_of(user, permission)
        groups_before = set() if created else set(user.groups.values_list("name", flat=True))
        if created:
            user.set_unusable_password()
        user.is_staff, user.is_superuser = roles.staff, roles.superuser
        if email:
            user.email = email
        user.save()
        if roles.decide:
            user.user_permissions.add(permission)
        else:
            user.user_permissions.remove(permission)
        mirrored = list(Group.objects.filter(name__in=set(groups)).order_by("name"))
        user.groups.set(mirrored)
        groups_after = {group.name for group in mirrored}
        if created or before != roles or groups_before != groups_after:
            record(
                AUDIT_ACTION,
                actor_id=username,
                actor_kind=DJANGO_USER,
                subject=f"user {username}",
                details={
                    "created": created,
                    "granted": sorted(set(roles.names()) - set(before.names())),
                    "revoked": sorted(set(before.names()) - set(roles.names())),
                    "groups_joined": sorted(groups_after - groups_before),
                    "groups_left": sorted(groups_before - groups_after),
                },
            )
    return user
