"""The mode a reply is in, and the moves it may make: one table, checked at every move (writer.py).

How a reply takes a write depends on its mode (and on whether cards were refused, a fallback of its
own):

===============  ==================================================================================
mode             the reply
===============  ==================================================================================
``NOT_STARTED``  a chat thread's live reply that has shown nothing yet: its first write that shows
                 something starts a stream (where it begins)
``STREAMING``    a stream is open: appended to, stopped by the last write
``MESSAGE``      a message, posted the first time it is written, then updated: an alert thread's
                 reply, a final answer (where they begin), a stream refused, over or given up
``TAKEN_OVER``   a message an earlier runner began (``existing_ts``, where it begins, or found by
                 the outbox): it may still stream, so it is stopped before it is first rewritten
``ENDED``        the last write was made or failed: nothing is written any more
===============  ==================================================================================

Its moves (``REPLY_MOVES``; any other raises ``IllegalReplyMove``):

- ``NOT_STARTED`` → ``STREAMING``: ``chat.startStream`` took the first write;
- ``NOT_STARTED`` → ``MESSAGE``: Slack refused the stream, or the first write to show is the last
  (it is posted whole);
- ``NOT_STARTED`` or ``MESSAGE`` not posted yet → ``TAKEN_OVER``: the outbox knows the message an
  earlier attempt made;
- ``STREAMING`` → ``MESSAGE``: the stream was stopped (by the last write, or after the last write
  failed), is over, or was given up;
- ``TAKEN_OVER`` → ``MESSAGE``: stopped if it still streamed, before it is rewritten or left as is;
- any other → ``ENDED``: ``end()``, which first closes the queue (writes asked for later are
  dropped) and lets a write already talking to Slack finish.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping


class ReplyMode(enum.Enum):
    """What the reply is now (module docstring)."""

    NOT_STARTED = "not_started"
    STREAMING = "streaming"
    MESSAGE = "message"
    TAKEN_OVER = "taken_over"
    ENDED = "ended"


# Every move a reply may make, from each mode (module docstring).
REPLY_MOVES: Mapping[ReplyMode, frozenset[ReplyMode]] = {
    ReplyMode.NOT_STARTED: frozenset(
        {ReplyMode.STREAMING, ReplyMode.MESSAGE, ReplyMode.TAKEN_OVER, ReplyMode.ENDED}
    ),
    ReplyMode.STREAMING: frozenset({ReplyMode.MESSAGE, ReplyMode.ENDED}),
    ReplyMode.MESSAGE: frozenset({ReplyMode.TAKEN_OVER, ReplyMode.ENDED}),
    ReplyMode.TAKEN_OVER: frozenset({ReplyMode.MESSAGE, ReplyMode.ENDED}),
    ReplyMode.ENDED: frozenset(),
}


class IllegalReplyMove(RuntimeError):
    """A move ``REPLY_MOVES`` does not allow: a bug in the writer, never a fault of Slack's."""


def check_move(current: ReplyMode, to: ReplyMode) -> None:
    if to not in REPLY_MOVES[current]:
        raise IllegalReplyMove(f"a reply cannot move from {current.name} to {to.name}")
