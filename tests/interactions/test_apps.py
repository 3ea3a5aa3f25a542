"""The interactions app hands the session core its pauses at start-up (sessions/pauses.py): without
it, a question or an approval could not be put to a thread, nor a typed reply taken as an answer."""

from interactions.asking import Asking
from sessions import pauses


def test_the_session_core_knows_pauses_through_what_interactions_handed_in_at_start_up():
    assert isinstance(pauses.current(), Asking)
