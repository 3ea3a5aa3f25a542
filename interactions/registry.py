"""Every kind of pause people settle (kinds.py), by its Interaction kind and by its prompt's buttons;
a third kind is added here. And what is done whatever the kind: closing an ended prompt."""

from __future__ import annotations

import logging

from kourier.slack.clients import SlackError, error_name

from . import approvals, closings, questions, services
from .kinds import PauseKind
from .models import Interaction
from .retries import TryOutcome

KINDS: dict[str, PauseKind] = {kind.kind: kind for kind in (questions.QUESTION, approvals.APPROVAL)}
BY_ACTION: dict[str, PauseKind] = {action: kind for kind in KINDS.values() for action in kind.actions}
ACTIONS = tuple(BY_ACTION)  # every prompt button a press comes from

logger = logging.getLogger(__name__)


def close_prompt(interaction_id: int) -> bool:
    """Rewrites an ended Interaction's prompt to say how it ended, its controls removed. Safe to repeat
    (``chat.update`` shows the same however often it is sent). False when there is nothing to close."""
    interaction = (
        Interaction.objects.select_related("session__connection", "answer_turn")
        .filter(pk=interaction_id)
        .first()
    )
    if interaction is None or interaction.state == Interaction.State.OPEN:
        return False
    services.rewrite_prompt(interaction, KINDS[interaction.kind])
    services.mark_closed(interaction_id)
    return True


def close_owed_prompt(interaction_id: int, attempt: int) -> TryOutcome:
    """Try ``attempt`` at a prompt's owed rewrite (closings.py, through the retry machine: retries.py):
    taken once, then the prompt rewritten as its Interaction stands now. A Slack failure puts the
    rewrite off; anything else is a bug and raises (the row stays owed: the sweep tries it again once
    overdue, up to the last try)."""
    retries = closings.RETRIES
    if not retries.claim(interaction_id, attempt):
        return TryOutcome.STALE
    try:
        close_prompt(interaction_id)
    except SlackError as exc:
        outcome = retries.put_off(interaction_id, attempt)
        log = logger.error if outcome is TryOutcome.GAVE_UP else logger.warning
        log(
            "interaction.prompt_not_closed",
            extra={"interaction_id": interaction_id, "attempt": attempt, "error": error_name(exc)},
        )
        return outcome
    except Exception:
        retries.given_up_if_last(interaction_id, attempt)
        raise
    retries.finished(interaction_id, attempt)
    return TryOutcome.DONE
