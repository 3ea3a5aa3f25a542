"""What the test provider says about its users: their email and preferred username, their groups (the
``groups`` scope: the names of their Django groups here), and the faults a test asks of it.

A test gives a user a quirk by adding them to a group named ``quirk:<what>`` (never sent as a group):

- ``quirk:expired``: the ID token says it was issued 11 minutes ago, for its 10 minutes: as from a
  provider whose clock is behind;
- ``quirk:audience``: the ID token is made out to another client (``OTHER_CLIENT``), signed as usual;
- ``quirk:issuer``: the ID token names another issuer (``OTHER_ISSUER``), signed as usual.
"""

from typing import Any

from oidc_provider.lib.claims import ScopeClaims

QUIRK = "quirk:"
OTHER_CLIENT = "another-application"
OTHER_ISSUER = "https://identity.example.com"


def userinfo(claims: dict[str, Any], user: Any) -> dict[str, Any]:
    claims["email"] = user.email
    claims["email_verified"] = True
    claims["preferred_username"] = user.username
    claims["name"] = user.get_full_name() or user.username
    return claims


def groups_of(user: Any) -> list[str]:
    return sorted(name for name in user.groups.values_list("name", flat=True) if not name.startswith(QUIRK))


class GroupsClaims(ScopeClaims):
    info_groups = ("Groups", "The groups you are in.")

    def scope_groups(self) -> dict[str, Any]:
        return {"groups": groups_of(self.user)}


def as_quirks_say(id_token: dict[str, Any], user: Any, **kwargs: Any) -> dict[str, Any]:
    quirks = {
        name[len(QUIRK) :] for name in user.groups.values_list("name", flat=True) if name.startswith(QUIRK)
    }
    if "expired" in quirks:
        id_token["iat"] -= 11 * 60
        id_token["exp"] = id_token["iat"] + 10 * 60
    if "audience" in quirks:
        id_token["aud"] = OTHER_CLIENT
    if "issuer" in quirks:
        id_token["iss"] = OTHER_ISSUER
    return id_token
