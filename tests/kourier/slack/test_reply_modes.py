"""A reply's modes: the moves the table allows, and no other (the writer's moves are in test_writer.py)."""

import pytest

from kourier.slack.reply_modes import REPLY_MOVES, IllegalReplyMove, ReplyMode, check_move


@pytest.mark.parametrize(
    ("current", "to"),
    [
        (ReplyMode.ENDED, ReplyMode.STREAMING),  # writing after the end
        (ReplyMode.ENDED, ReplyMode.MESSAGE),
        (ReplyMode.ENDED, ReplyMode.ENDED),  # ending twice
        (ReplyMode.MESSAGE, ReplyMode.STREAMING),  # streaming after the stream was given up
        (ReplyMode.TAKEN_OVER, ReplyMode.STREAMING),  # a message taken over is rewritten, never streamed
        (ReplyMode.STREAMING, ReplyMode.NOT_STARTED),
        (ReplyMode.STREAMING, ReplyMode.TAKEN_OVER),
    ],
)
def test_a_move_the_table_does_not_allow_is_refused(current, to):
    with pytest.raises(IllegalReplyMove):
        check_move(current, to)


def test_every_mode_but_ended_may_end_and_ended_goes_nowhere():
    for mode in ReplyMode:
        if mode is not ReplyMode.ENDED:
            check_move(mode, ReplyMode.ENDED)
    assert REPLY_MOVES[ReplyMode.ENDED] == frozenset()
