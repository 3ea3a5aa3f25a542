"""A prompt answers to the app that posted it.

Every Slack app of the workspace that can see a prompt can send a press on it, signed with its own
secret: the press comes in through that app's Connection. Only a press through the Connection of the
prompt's session is taken; any other is refused privately before anything is read or decided.
"""

from __future__ import annotations

from .models import Interaction

ANOTHER_APP = "This prompt belongs to another app, so your press was not taken."


def posted_by_another_app(interaction_id: int, connection_id: int) -> bool:
    """Whether the Interaction exists and its prompt was posted through another Connection than
    ``connection_id`` (an unknown Interaction is the press paths' own refusal)."""
    return (
        Interaction.objects.filter(pk=interaction_id).exclude(session__connection_id=connection_id).exists()
    )
