"""Running the runner's coroutines as the worker's turn loop does, and reading what they left in a thread."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from django import db

from sessions.models import Turn
from simulator import defaults


def run(work) -> Any:
    """Runs a coroutine as the worker's loop does: its database calls on a thread."""

    async def scenario() -> Any:
        database_thread = ThreadPoolExecutor(max_workers=1)
        asyncio.get_running_loop().set_default_executor(database_thread)
        try:
            return await work
        finally:
            await asyncio.get_running_loop().run_in_executor(database_thread, lambda: db.connection.close())

    return asyncio.run(scenario())


def thread_texts(slack_fake, turn: Turn) -> list[str]:
    """What the bot and people said in the turn's thread after its first message."""
    return [message.text for message in slack_fake.thread(defaults.CHANNEL_ID, turn.session.thread_ts)[1:]]
