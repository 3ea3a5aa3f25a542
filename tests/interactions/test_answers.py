"""Reading a Submit press: the prompt's ``state.values`` (as Slack sends them for the prompt's own
blocks) into one list of chosen or typed answers per question, or why it cannot be taken."""

import pytest

from interactions import prompts
from interactions.answers import Incomplete, Mismatch, read_answers, read_typed_reply
from simulator.interactivity import state_values

from .questions import (
    FREE_TEXT,
    ONE_OF_THREE,
    REGIONS,
    SEVERAL_OF_THREE,
    asked,
    choices,
    question,
    text_question,
)


def pressed(asked_question, **picked):
    """What Slack sends when a person picks or types ``picked`` (by action_id) in the prompt and
    presses Submit; inputs left alone carry their empty value."""
    blocks = prompts.open_prompt(asked_question, 1, typed_replies=False)
    return read_answers(asked_question, state_values(blocks, picked))


class TestEachWidgetsValue:
    def test_a_text_input_gives_the_text_typed_without_surrounding_space(self):
        assert pressed(question(FREE_TEXT), **{"answer-0": "  Ship it on Friday.\n"}) == [
            ["Ship it on Friday."]
        ]

    @pytest.mark.parametrize("count", [3, 11], ids=["radio buttons", "select"])
    def test_one_choice_gives_the_stored_choice_at_the_options_index(self, count):
        listed = (*REGIONS, *choices(count - 3))
        assert pressed(question(asked("Which?", listed)), **{"answer-0": "1"}) == [["North America"]]

    @pytest.mark.parametrize("count", [3, 11], ids=["checkboxes", "multi-select"])
    def test_several_choices_give_the_stored_choices_in_the_order_picked(self, count):
        listed = (*REGIONS, *choices(count - 3))
        answers = pressed(question(asked("Which?", listed, multiple=True)), **{"answer-0": ["2", "0"]})
        assert answers == [["Asia Pacific", "Europe"]]

    def test_a_choice_shortened_on_screen_is_given_whole(self):
        long_choice = "Roll back every service deployed since Tuesday " * 5
        answers = pressed(question(asked("Which?", (long_choice, "Nothing"))), **{"answer-0": "0"})
        assert answers == [[long_choice]]

    @pytest.mark.parametrize(
        ("typed", "picked"),
        [("7", [7]), (" 101 ", [101]), ("3, 1", [3, 1]), ("3,1;  5 9", [3, 1, 5, 9])],
    )
    def test_a_numbered_list_gives_the_choices_of_the_numbers_typed(self, typed, picked):
        many = choices(101)
        answers = pressed(question(asked("Which?", many, multiple=True)), **{"answer-0": typed})
        assert answers == [[many[number - 1] for number in picked]]

    def test_several_questions_give_one_answer_each_in_the_questions_order(self):
        asked_question = question(ONE_OF_THREE, SEVERAL_OF_THREE, FREE_TEXT)
        answers = pressed(asked_question, **{"answer-0": "2", "answer-1": ["0", "1"], "answer-2": "No rush."})
        assert answers == [["Asia Pacific"], ["Europe", "North America"], ["No rush."]]

    def test_a_typed_reply_answers_the_one_text_question(self):
        assert read_typed_reply(text_question(), "Orion") == [["Orion"]]


class TestAnIncompleteAnswer:
    @pytest.mark.parametrize(
        ("asked_question", "picked", "says"),
        [
            (FREE_TEXT, {}, "needs an answer."),
            (FREE_TEXT, {"answer-0": "   "}, "needs an answer."),
            (ONE_OF_THREE, {}, "needs a choice."),
            (asked("Which region?", choices(50)), {}, "needs a choice."),
            (SEVERAL_OF_THREE, {}, "needs at least one choice."),
            (asked("Which regions?", choices(50), multiple=True), {}, "needs at least one choice."),
            (asked("Which?", choices(101)), {}, "needs an answer."),
        ],
        ids=[
            "no text",
            "only spaces",
            "no radio",
            "no select",
            "no checkbox",
            "no multi-select",
            "no number",
        ],
    )
    def test_names_the_question_left_empty(self, asked_question, picked, says):
        result = pressed(question(asked_question), **picked)
        assert isinstance(result, Incomplete)
        assert result.message == f"Question 1 ({asked_question.text}) {says}"

    def test_names_every_question_left_empty_and_only_those(self):
        result = pressed(question(ONE_OF_THREE, FREE_TEXT, SEVERAL_OF_THREE), **{"answer-0": "1"})
        assert result == Incomplete(
            "Question 2 (Anything else?) needs an answer. Question 3 (Which regions?) needs at least one choice."
        )

    def test_of_a_question_missing_from_the_press_names_it(self):
        result = read_answers(question(ONE_OF_THREE, FREE_TEXT), {})
        assert result == Incomplete(
            "Question 1 (Which region?) needs an answer. Question 2 (Anything else?) needs an answer."
        )

    def test_names_a_long_question_by_its_beginning(self):
        result = pressed(question(asked("Why " * 100)))
        assert isinstance(result, Incomplete)
        assert result.message.startswith("Question 1 (Why Why ")
        assert len(result.message) < 100


class TestANumberedListsNumbers:
    @pytest.mark.parametrize(
        ("typed", "says"),
        [
            ("0", "0 is not on the list (1 to 101)."),
            ("102", "102 is not on the list (1 to 101)."),
            ("5, 999", "999 is not on the list (1 to 101)."),
            ("4, 4", "each number may be given once."),
            ("the third", "type numbers from the list, separated by commas."),
            ("1-3", "type numbers from the list, separated by commas."),
            ("1,,2", "type numbers from the list, separated by commas."),
            ("#2", "type numbers from the list, separated by commas."),
        ],
    )
    def test_out_of_range_repeated_or_malformed_are_turned_away_saying_why(self, typed, says):
        result = pressed(question(asked("Which?", choices(101), multiple=True)), **{"answer-0": typed})
        assert result == Incomplete(f"Question 1 (Which?): {says}")

    def test_where_only_one_may_be_chosen_just_one_number_is_taken(self):
        single = question(asked("Which?", choices(101)))
        assert pressed(single, **{"answer-0": "2, 3"}) == Incomplete(
            "Question 1 (Which?): choose just one number."
        )
        assert pressed(single, **{"answer-0": "3"}) == [["Option 3"]]


class TestAMismatch:
    """Values no press on this prompt could carry: a stale prompt, or a forged payload."""

    @pytest.mark.parametrize(
        "option",
        [
            {"value": "radio"},
            {"value": "3"},
            {"value": "-1"},
            {"value": "1.0"},
            {"value": "²"},
            {"value": 1},
            {"text": {"type": "plain_text", "text": "Europe"}},
            "0",
        ],
        ids=[
            "not a number",
            "past the end",
            "negative",
            "not an integer",
            "a digit int() refuses",
            "not a string",
            "no value",
            "not an object",
        ],
    )
    @pytest.mark.parametrize("asked_question", [ONE_OF_THREE, SEVERAL_OF_THREE], ids=["one", "several"])
    def test_an_option_that_is_not_one_of_the_choices(self, asked_question, option):
        key = "selected_options" if asked_question.multiple else "selected_option"
        entry = {key: [option] if asked_question.multiple else option}
        result = read_answers(question(asked_question), {"question-0": {"answer-0": entry}})
        assert isinstance(result, Mismatch)

    def test_the_same_option_chosen_twice(self):
        twice = {"selected_options": [{"value": "1"}, {"value": "1"}]}
        assert isinstance(
            read_answers(question(SEVERAL_OF_THREE), {"question-0": {"answer-0": twice}}), Mismatch
        )

    @pytest.mark.parametrize(
        "values",
        [
            {"question-0": {"answer-0": "Ship it"}},
            {"question-0": {"answer-0": {"value": 42}}},
            {"question-0": "Ship it"},
            {"question-0": ["Ship it"]},
        ],
        ids=["input not an object", "text not a string", "block not an object", "block a list"],
    )
    def test_values_of_the_wrong_type_for_a_text_question(self, values):
        assert isinstance(read_answers(question(FREE_TEXT), values), Mismatch)

    def test_selected_options_that_are_not_a_list(self):
        entry = {"selected_options": {"value": "0"}}
        assert isinstance(
            read_answers(question(SEVERAL_OF_THREE), {"question-0": {"answer-0": entry}}), Mismatch
        )

    def test_wins_over_a_question_left_empty_so_that_a_forged_press_is_never_told_what_to_fix(self):
        values = {"question-1": {"answer-1": {"selected_option": {"value": "9"}}}}
        assert isinstance(read_answers(question(FREE_TEXT, ONE_OF_THREE), values), Mismatch)
