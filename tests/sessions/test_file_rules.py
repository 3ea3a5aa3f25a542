"""Which files go to the agent and to the thread, and the lines that say what did not (sessions/file_rules.py)."""

import pytest

from bindings.manifest import FilesSpec
from sessions import file_rules
from sessions.file_rules import Refused

SPEC = FilesSpec(types=("image/*", "text/plain", "application/pdf"), max_file_bytes=100)


@pytest.mark.parametrize(
    ("pattern", "media_type", "matched"),
    [
        ("image/*", "image/png", True),
        ("image/*", "application/png", False),
        ("text/plain", "Text/Plain; charset=utf-8", True),
        ("text", "text/csv", True),  # kagent's cards say "text"
        ("text", "image/png", False),
        ("*/*", "application/zip", True),
        ("application/pdf", "application/pdfx", False),
    ],
)
def test_a_media_type_matches_a_type_a_family_or_anything(pattern, media_type, matched):
    assert file_rules.matches(pattern, media_type) is matched


def test_a_file_goes_when_the_binding_allows_it_the_card_takes_it_and_it_fits():
    assert file_rules.first_refusal("image/png", 100, SPEC, ("image/png",)) is None
    assert file_rules.first_refusal("application/zip", 1, SPEC, ("*/*",)) == file_rules.TYPE_NOT_ALLOWED
    assert file_rules.first_refusal("image/png", 1, SPEC, ("text",)) == file_rules.TYPE_NOT_TAKEN
    assert file_rules.first_refusal("image/png", 101, SPEC, ("image/*",)) == file_rules.TOO_BIG


def test_a_card_that_names_no_input_modes_takes_plain_text_only():
    assert file_rules.first_refusal("text/plain", 1, SPEC, ()) is None
    assert file_rules.first_refusal("application/pdf", 1, SPEC, ()) == file_rules.TYPE_NOT_TAKEN


def test_what_did_not_go_is_named_in_one_fixed_line_in_the_order_shared():
    refused = [Refused("big.zip", file_rules.TYPE_NOT_ALLOWED), Refused("huge.pdf", file_rules.TOO_BIG)]
    assert (
        file_rules.not_sent_line(refused)
        == "Not sent to the agent: big.zip (type not allowed), huge.pdf (too big)"
    )
    assert (
        file_rules.not_uploaded_line(refused[:1]) == "Not uploaded to the thread: big.zip (type not allowed)"
    )


def test_a_text_file_is_redacted_and_any_other_left_as_it_is():
    log = b"ok\ntoken=ghp_abcdefghijklmnopqrstuvwxyz0123456789\n"
    assert b"ghp_abcdefghijklmnopqrstuvwxyz0123456789" not in file_rules.redacted(log, "text/plain")
    assert b"ok\n" in file_rules.redacted(log, "text/plain")
    assert file_rules.redacted(log, "image/png") == log
