"""Putting a paused task's question to the thread: the Interaction opened, its prompt posted once.

Called by the runner when a turn's task pauses to ask and the Binding has askUser. A runner that dies
half-way is followed by one that reads the same pause again and lands here again: the Interaction is
the turn's one, and the prompt's post is in the outbox under the turn's key.
"""

from __future__ import annotations

from kourier.a2a.events import Question
from kourier.db import in_database_thread
from kourier.slack.outbox import PostKind, post_once, prompt_metadata
from sessions.outbox import TurnOutbox

from . import prompts, services


async def put_question(
    slack, *, turn_id: int, channel_id: str, thread_ts: str, reply_key: str, question: Question
) -> int:
    """Opens the turn's Interaction and posts its prompt in the thread; the Interaction's id."""
    interaction = await in_database_thread(services.open_question)(turn_id, question)
    key = f"{reply_key}:prompt"
    try:
        ts = await post_once(
            slack,
            channel_id,
            thread_ts,
            key=key,
            kind=PostKind.PROMPT,
            metadata=prompt_metadata(key),
            outbox=TurnOutbox(turn_id),
            blocks=prompts.open_prompt(question, interaction.pk, typed_replies=interaction.typed_replies),
            text=prompts.fallback_text(question),
        )
    except Exception:
        await in_database_thread(services.give_up)(interaction.pk)
        raise
    await in_database_thread(services.record_prompt)(interaction.pk, ts)
    return interaction.pk
