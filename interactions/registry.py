"""Every kind of pause people settle (kinds.py), by its Interaction kind and by its prompt's buttons;
a third kind is added here. And what is done whatever the kind: closing an ended prompt."""

from __future__ import annotations

from . import approvals, questions, services
from .kinds import PauseKind
from .models import Interaction

KINDS: dict[str, PauseKind] = {kind.kind: kind for kind in (questions.QUESTION, approvals.APPROVAL)}
BY_ACTION: dict[str, PauseKind] = {action: kind for kind in KINDS.values() for action in kind.actions}
ACTIONS = tuple(BY_ACTION)  # every prompt button a press comes from


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
