"""What the audit keeps of an answer: its shape (which questions, how many choices picked, how long the
free text was, in buckets), never a word of it."""

import json

import pytest

from interactions.audit import answer_shape, length_bucket

from .questions import FREE_TEXT, ONE_OF_THREE, SEVERAL_OF_THREE, asked, choices, question

SECRET_TEXT = "The launch code is 0000, tell nobody"


def test_the_shape_counts_the_questions_and_the_choices_picked_of_each():
    shape = answer_shape(
        question(ONE_OF_THREE, SEVERAL_OF_THREE, FREE_TEXT),
        [["Asia Pacific"], ["Europe", "North America"], ["Soon."]],
    )
    assert shape == {
        "questions": 3,
        "answers": [
            {"question": 1, "choices": 3, "picked": 1},
            {"question": 2, "choices": 3, "picked": 2},
            {"question": 3, "text_length": "1-20"},
        ],
        "agent": "",
    }


def test_the_shape_names_the_sub_agent_that_asked():
    assert answer_shape(question(FREE_TEXT, agent="billing-agent"), [["ok"]])["agent"] == "billing-agent"


def test_no_answer_appears_anywhere_in_the_shape():
    many = choices(150, name="Secret project")
    answers = [["Asia Pacific"], [SECRET_TEXT], [many[41], many[99]]]
    shape = answer_shape(question(ONE_OF_THREE, FREE_TEXT, asked("Which?", many, multiple=True)), answers)
    written = json.dumps(shape)
    for answer in [*answers[0], *answers[1], *answers[2], "0000", "launch", "Secret"]:
        assert answer not in written


def test_free_text_of_several_parts_is_measured_as_a_whole():
    shape = answer_shape(question(FREE_TEXT), [["x" * 15, "y" * 15]])
    assert shape["answers"] == [{"question": 1, "text_length": "21-100"}]


@pytest.mark.parametrize(
    ("length", "bucket"),
    [
        (0, "empty"),
        (1, "1-20"),
        (20, "1-20"),
        (21, "21-100"),
        (100, "21-100"),
        (101, "101-500"),
        (500, "101-500"),
        (501, "over 500"),
        (40_000, "over 500"),
    ],
)
def test_a_text_length_is_kept_only_as_its_bucket(length, bucket):
    assert length_bucket(length) == bucket
