"""Text others wrote, printed on a terminal with no character that acts (kourier/terminal.py)."""

import pytest

from kourier.terminal import printable


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("\x1b]0;pwned\x07add", "\\x1b]0;pwned\\x07add"),  # sets the window's title
        ("\x1b[2J\x1b[Hok", "\\x1b[2J\\x1b[Hok"),  # clears the screen
        ("\x9b31mred", "\\x9b31mred"),  # C1's one-byte CSI
        ("deny_all\rapprove_all", "deny_all\\rapprove_all"),
        ("one\ntwo\tthree", "one\\ntwo\\tthree"),
        ("safe\u202elpv.exe", "safe\\u202elpv.exe"),  # reads right to left from there
        ("\x00\x7f", "\\x00\\x7f"),
        ("check_status", "check_status"),
        ("préparer_déploiement 🚀", "préparer_déploiement 🚀"),
    ],
)
def test_every_character_that_acts_on_a_terminal_is_shown_as_its_escape(text, shown):
    assert printable(text) == shown
