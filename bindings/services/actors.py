"""Who changed a Connection or a Binding, as the audit names them."""

from __future__ import annotations

from audit import services as audit


def actor_kind(actor: str) -> str | None:
    """The audit's kind of actor for a change: a Django user in the admin (``admin:<user>``), an
    operator running apply (``apply:<login>``); None lets the audit decide (a Slack user, or the system)."""
    if actor.startswith("admin:"):
        return audit.DJANGO_USER
    if actor.startswith("apply:"):
        return audit.OPERATOR
    return None


def apply_actor() -> str:
    """Who applies, for the audit: the operating-system user running ``manage.py apply``."""
    return f"apply:{audit.operating_system_user()}"
