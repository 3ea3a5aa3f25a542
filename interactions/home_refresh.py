"""Keeping Home tabs current (issue 33, point 4): who opened theirs lately, and a refresh queued when
an approval was put to a thread or ended, so that an approver's tab lists it, or stops listing it,
without being opened again.

Within views.publish's budget (Tier 4: about 100 a minute per workspace): one refresh per Connection
at most every ``HOME_TAB_REFRESH_SECONDS`` (the changes meanwhile wait for it: it reads what holds
when it runs), of at most ``MOST_REFRESHED`` tabs, those opened in the last hour, the latest first.
The viewers are kept in the shared cache: losing them loses only refreshes, never a decision.
"""

from __future__ import annotations

import time
from functools import partial

from django.conf import settings
from django.db import transaction

from kourier import shared_cache
from kourier.queue import enqueue_after_commit_in

from .models import Interaction
from .task_names import REFRESH_HOME_TABS

VIEWERS_SECONDS = 3600  # a tab opened longer ago is not refreshed (it is published again when opened)
MOST_REFRESHED = 20


def _viewers_key(connection_id: int) -> str:
    return f"home-viewers:{connection_id}"


def _due_key(connection_id: int) -> str:
    return f"home-refresh-due:{connection_id}"


async def remember_viewer(connection_id: int, user_id: str) -> None:
    """The person opened their Home tab: it is refreshed for the next hour when approvals change."""
    seen = await shared_cache.aget(_viewers_key(connection_id)) or {}
    now = time.time()
    seen = {user: at for user, at in seen.items() if now - at < VIEWERS_SECONDS}
    seen[user_id] = now
    await shared_cache.aset(_viewers_key(connection_id), seen, VIEWERS_SECONDS)


async def recent_viewers(connection_id: int) -> list[str]:
    """Who opened their tab in the last hour, the latest first, at most MOST_REFRESHED."""
    seen = await shared_cache.aget(_viewers_key(connection_id)) or {}
    now = time.time()
    recent = sorted((at, user) for user, at in seen.items() if now - at < VIEWERS_SECONDS)
    return [user for _, user in reversed(recent)][:MOST_REFRESHED]


async def refresh_taken(connection_id: int) -> None:
    """The queued refresh runs now: a change from here on queues the next one."""
    await shared_cache.adelete(_due_key(connection_id))


def approvals_changed(interaction_id: int) -> None:
    """An approval was put to its thread or ended: once committed, the Connection's tabs are owed a
    refresh (one already queued covers this change too)."""
    connection_id = (
        Interaction.objects.filter(pk=interaction_id, kind=Interaction.Kind.APPROVAL)
        .values_list("session__connection_id", flat=True)
        .first()
    )
    if connection_id is not None:
        transaction.on_commit(partial(_queue_refresh, connection_id))


def _queue_refresh(connection_id: int) -> None:
    seconds = settings.HOME_TAB_REFRESH_SECONDS
    if shared_cache.backend().add(_due_key(connection_id), 1, int(seconds) + 60):
        enqueue_after_commit_in(seconds, REFRESH_HOME_TABS, connection_id)
