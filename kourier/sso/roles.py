"""What a signed-in person may do in Kourier, from the groups their identity provider says they are in.
Pure: no I/O.

The operator maps groups to roles in the settings (``OIDC_STAFF_GROUPS``, ``OIDC_SUPERUSER_GROUPS``,
``OIDC_DECIDE_GROUPS``). A superuser and someone who may decide tool approvals are staff too: both use
the admin, which lets in staff only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Roles:
    staff: bool = False
    superuser: bool = False
    decide: bool = False

    def names(self) -> list[str]:
        return [name for name in ("staff", "superuser", "decide") if getattr(self, name)]


def groups_in(claims: Mapping[str, Any], claim: str) -> frozenset[str]:
    """The groups ``claims`` name under ``claim``: a list of names, or one name (some providers send a
    single group as a string). Anything else names none."""
    value = claims.get(claim)
    if isinstance(value, str):
        return frozenset([value]) if value else frozenset()
    if isinstance(value, list | tuple):
        return frozenset(item for item in value if isinstance(item, str) and item)
    return frozenset()


def roles_for(
    groups: Iterable[str],
    *,
    staff_groups: Iterable[str],
    superuser_groups: Iterable[str],
    decide_groups: Iterable[str],
) -> Roles:
    held = frozenset(groups)
    superuser = bool(held & frozenset(superuser_groups))
    decide = bool(held & frozenset(decide_groups))
    staff = superuser or decide or bool(held & frozenset(staff_groups))
    return Roles(staff=staff, superuser=superuser, decide=decide)
