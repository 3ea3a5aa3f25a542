import random

import pytest

from kourier.a2a.events import TextDelta
from kourier.a2a.text import ReplyText


class Shown:
    """What a consumer shows when it applies TextDelta events as documented."""

    def __init__(self) -> None:
        self.text = ""
        self.replaces = 0

    def apply(self, delta: TextDelta | None) -> None:
        if delta is None:
            return
        if delta.replace:
            self.replaces += 1
            self.text = delta.text
        else:
            self.text += delta.text


def test_artifact_chunks_append_and_an_identical_full_last_chunk_changes_nothing():
    reply = ReplyText()
    reply.artifact_chunk("a", "I will add the num", append=False, last_chunk=False)
    assert reply.delta() == TextDelta("I will add the num")
    reply.artifact_chunk("a", "bers.", append=True, last_chunk=False)
    assert reply.delta() == TextDelta("bers.")
    reply.artifact_chunk("a", "I will add the numbers.", append=False, last_chunk=True)
    assert reply.delta() is None
    assert reply.text == "I will add the numbers."


def test_a_full_last_chunk_that_differs_from_the_chunks_replaces_them():
    reply = ReplyText()
    reply.artifact_chunk("a", "Helo", append=False, last_chunk=False)
    reply.delta()
    reply.artifact_chunk("a", "Hello", append=False, last_chunk=True)
    assert reply.delta() == TextDelta("Hello", replace=True)


def test_a_full_last_chunk_that_extends_the_chunks_appends_the_rest():
    reply = ReplyText()
    reply.artifact_chunk("a", "Hello", append=False, last_chunk=False)
    reply.delta()
    reply.artifact_chunk("a", "Hello, world", append=False, last_chunk=True)
    assert reply.delta() == TextDelta(", world")


def test_partial_deltas_then_the_full_message():
    reply = ReplyText()
    reply.add_partial("p1", "Echo: ")
    reply.add_partial("p2", "hel")
    assert reply.delta() == TextDelta("Echo: hel")
    reply.add_partial("p3", "lo")
    assert reply.delta() == TextDelta("lo")
    reply.set_message("full", "Echo: hello")
    assert reply.delta() is None
    assert reply.text == "Echo: hello"


def test_a_full_message_that_differs_from_its_partials_replaces_them():
    reply = ReplyText()
    reply.add_partial("p1", "Echo: helo")
    reply.delta()
    reply.set_message("full", "Echo: hello")
    assert reply.delta() == TextDelta("Echo: hello", replace=True)


def test_a_full_message_without_text_keeps_the_partials():
    reply = ReplyText()
    reply.add_partial("p1", "Calling the tool")
    reply.delta()
    reply.set_message("tool-call-only", "")
    reply.set_message("next", "Done.")
    assert reply.text == "Calling the tool\n\nDone."


def test_the_closing_artifact_that_repeats_the_last_message_is_not_shown_again():
    reply = ReplyText()
    reply.add_partial("p1", "Echo: yes")
    reply.set_message("full", "Echo: yes")
    reply.delta()
    reply.artifact_chunk("closing", "Echo: yes", append=False, last_chunk=True)
    assert reply.delta() is None
    assert reply.text == "Echo: yes"


def test_text_that_differs_from_the_last_segment_is_a_new_segment():
    reply = ReplyText()
    reply.set_message("m1", "I will add the numbers.")
    assert reply.delta() == TextDelta("I will add the numbers.")
    reply.artifact_chunk("a", "The sum is 5.", append=False, last_chunk=True)
    assert reply.delta() == TextDelta("\n\nThe sum is 5.")


def test_only_complete_artifacts_are_taken_for_restatements():
    # A first streamed chunk that happens to equal the last text is the start of new text.
    reply = ReplyText()
    reply.set_message("m1", "OK")
    reply.artifact_chunk("a", "OK", append=False, last_chunk=False)
    reply.artifact_chunk("a", ", done", append=True, last_chunk=False)
    assert reply.text == "OK\n\nOK, done"


def test_the_same_message_or_artifact_again_updates_in_place():
    reply = ReplyText()
    reply.set_message("m1", "first")
    reply.artifact_chunk("a", "second", append=False, last_chunk=True)
    reply.delta()
    reply.set_message("m1", "first")
    reply.artifact_chunk("a", "second", append=False, last_chunk=True)
    reply.add_partial("p-seen-later", "")  # harmless
    assert reply.delta() is None
    assert reply.text == "first\n\nsecond"


def test_partials_replayed_from_a_snapshot_are_not_appended_twice():
    reply = ReplyText()
    for message_id, chunk in [("p1", "Echo: "), ("p2", "hello")]:
        reply.add_partial(message_id, chunk)
    reply.set_message("full", "Echo: hello")
    reply.delta()
    for message_id, chunk in [("p1", "Echo: "), ("p2", "hello")]:  # the task's history, read again
        reply.add_partial(message_id, chunk)
    reply.set_message("full", "Echo: hello")
    assert reply.delta() is None
    assert reply.text == "Echo: hello"


@pytest.mark.parametrize("seed", range(25))
def test_any_chunking_shows_exactly_the_text_with_no_replace(seed):
    rng = random.Random(seed)
    turns = [
        "".join(rng.choice("ab \n.") for _ in range(rng.randint(1, 60))) for _ in range(rng.randint(1, 4))
    ]
    reply, shown = ReplyText(), Shown()
    for number, full in enumerate(turns):
        cuts = (
            sorted(rng.sample(range(1, len(full)), k=min(len(full) - 1, rng.randint(0, 6))))
            if len(full) > 1
            else []
        )
        chunks = [full[start:end] for start, end in zip([0, *cuts], [*cuts, len(full)], strict=True)]
        if number % 2:  # kagent 0.10: partial deltas, then the full message
            for index, chunk in enumerate(chunks):
                reply.add_partial(f"{number}-{index}", chunk)
                shown.apply(reply.delta())
            reply.set_message(f"{number}-full", full)
        else:  # kagent 1.0: artifact chunks, then the full artifact
            for index, chunk in enumerate(chunks):
                reply.artifact_chunk(f"artifact-{number}", chunk, append=index > 0, last_chunk=False)
                shown.apply(reply.delta())
            reply.artifact_chunk(f"artifact-{number}", full, append=False, last_chunk=True)
        shown.apply(reply.delta())

    assert shown.text == reply.text == "\n\n".join(turn for turn in turns)
    assert shown.replaces == 0
