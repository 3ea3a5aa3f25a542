"""A question's prompt in Block Kit: the widget each question gets, the Submit button that finds the
Interaction, and the prompt once it is over; every one a message Slack would accept."""

import re
from datetime import UTC, datetime

import pytest

from interactions import prompts
from interactions.prompts import Widget
from simulator import defaults
from simulator.blocks import MAX_BLOCKS_PER_MESSAGE, block_problems, interactive_elements

from .questions import FREE_TEXT, ONE_OF_THREE, REGIONS, SEVERAL_OF_THREE, asked, choices, question

INTERACTION_ID = 42


def inputs(blocks):
    return [block for block in blocks if block["type"] == "input"]


def the_input(blocks):
    [block] = inputs(blocks)
    return block


def submit_buttons(blocks):
    return [
        element
        for _, element in interactive_elements(blocks)
        if element.get("action_id") == prompts.SUBMIT_ACTION
    ]


def section_texts(blocks):
    return [block["text"]["text"] for block in blocks if block["type"] == "section"]


def open_prompt(*questions, agent=None, typed_replies=False):
    return prompts.open_prompt(question(*questions, agent=agent), INTERACTION_ID, typed_replies=typed_replies)


EVERY_KIND_OF_PROMPT = {
    "free text": [FREE_TEXT],
    "radio buttons": [ONE_OF_THREE],
    "checkboxes": [SEVERAL_OF_THREE],
    "a select": [asked("Which one?", choices(11))],
    "a multi-select": [asked("Which ones?", choices(100), multiple=True)],
    "a numbered list": [asked("Which one?", choices(101))],
    "a long numbered list": [asked("Which ones?", choices(1000, name="A rather long choice"), multiple=True)],
    "several questions": [ONE_OF_THREE, SEVERAL_OF_THREE, FREE_TEXT, asked("Which?", choices(150))],
    "long texts": [asked("Why? " * 1000, ("x" * 500, "y" * 500))],
}


class TestTheWidgetOfAQuestion:
    @pytest.mark.parametrize(
        ("count", "multiple", "widget"),
        [
            (0, False, Widget.TEXT),
            (0, True, Widget.TEXT),
            (1, False, Widget.RADIO),
            (10, False, Widget.RADIO),
            (1, True, Widget.CHECKBOXES),
            (10, True, Widget.CHECKBOXES),
            (11, False, Widget.SELECT),
            (100, False, Widget.SELECT),
            (11, True, Widget.MULTI_SELECT),
            (100, True, Widget.MULTI_SELECT),
            (101, False, Widget.NUMBERS),
            (101, True, Widget.NUMBERS),
            (5000, True, Widget.NUMBERS),
        ],
    )
    def test_follows_the_number_of_choices_and_whether_several_may_be_chosen(self, count, multiple, widget):
        assert prompts.widget_for(asked(choices=choices(count), multiple=multiple)) is widget

    def test_a_question_without_choices_is_a_text_input(self):
        element = the_input(open_prompt(FREE_TEXT))["element"]
        assert element["type"] == "plain_text_input"
        assert "options" not in element

    @pytest.mark.parametrize(
        ("multiple", "kind"), [(False, "radio_buttons"), (True, "checkboxes")], ids=["one", "several"]
    )
    def test_up_to_ten_choices_are_buttons_whose_values_are_the_choices_indexes(self, multiple, kind):
        element = the_input(open_prompt(asked("Which?", REGIONS, multiple=multiple)))["element"]
        assert element["type"] == kind
        assert [option["text"]["text"] for option in element["options"]] == list(REGIONS)
        assert [option["value"] for option in element["options"]] == ["0", "1", "2"]

    @pytest.mark.parametrize(
        ("multiple", "kind"),
        [(False, "static_select"), (True, "multi_static_select")],
        ids=["one", "several"],
    )
    def test_eleven_to_a_hundred_choices_are_a_select_with_every_choice(self, multiple, kind):
        element = the_input(open_prompt(asked("Which?", choices(100), multiple=multiple)))["element"]
        assert element["type"] == kind
        assert [option["value"] for option in element["options"]] == [str(index) for index in range(100)]
        assert element["placeholder"]["text"] == ("Choose several" if multiple else "Choose one")

    def test_a_choice_too_long_for_an_option_is_shortened_on_screen_only(self):
        long_choice = "a" * 200
        element = the_input(open_prompt(asked("Which?", (long_choice, "short"))))["element"]
        shown = element["options"][0]["text"]["text"]
        assert len(shown) == 75
        assert shown.endswith("…")
        assert element["options"][0]["value"] == "0"  # the answer is the stored choice, whole


class TestANumberedList:
    def test_above_a_hundred_choices_every_choice_is_numbered_above_a_text_box(self):
        blocks = open_prompt(asked("Which one?", choices(101)))
        listed = "\n".join(section_texts(blocks)[1:])  # after the asker's line
        assert listed.splitlines() == [f"{number}. Option {number}" for number in range(1, 102)]
        box = the_input(blocks)
        assert box["element"]["type"] == "plain_text_input"
        assert blocks.index(box) > max(
            index for index, block in enumerate(blocks) if block["block_id"].startswith("choices-0-")
        )

    @pytest.mark.parametrize(
        ("multiple", "hint"),
        [
            (False, "Type the number of your choice."),
            (True, "Type the numbers of your choices, separated by commas."),
        ],
        ids=["one", "several"],
    )
    def test_its_text_box_has_a_hint_that_says_how_many_numbers_to_type(self, multiple, hint):
        box = the_input(open_prompt(asked("Which?", choices(101), multiple=multiple)))
        assert box["hint"]["text"] == hint

    def test_a_long_list_is_split_into_sections_under_slacks_limit_losing_no_line(self):
        many = choices(1000, name="A choice with a name long enough to need several sections")
        blocks = open_prompt(asked("Which ones?", many, multiple=True))
        listed = [block for block in blocks if block["block_id"].startswith("choices-0-")]
        assert len(listed) > 1
        assert all(len(block["text"]["text"]) <= 3000 for block in listed)
        lines = [line for block in listed for line in block["text"]["text"].splitlines()]
        assert lines == [f"{number}. {choice}" for number, choice in enumerate(many, start=1)]

    def test_a_choice_is_escaped_for_slacks_markup(self):
        blocks = open_prompt(asked("Which?", ("<!channel> & friends", *choices(100))))
        assert "1. &lt;!channel&gt; &amp; friends" in section_texts(blocks)[1].splitlines()


class TestEveryPrompt:
    @pytest.mark.parametrize("questions", EVERY_KIND_OF_PROMPT.values(), ids=EVERY_KIND_OF_PROMPT.keys())
    def test_is_blocks_slack_accepts(self, questions):
        blocks = open_prompt(*questions)
        assert block_problems(blocks, max_blocks=MAX_BLOCKS_PER_MESSAGE) == []

    @pytest.mark.parametrize("questions", EVERY_KIND_OF_PROMPT.values(), ids=EVERY_KIND_OF_PROMPT.keys())
    def test_ends_with_one_submit_button_whose_value_is_the_interactions_id(self, questions):
        blocks = open_prompt(*questions)
        [button] = submit_buttons(blocks)
        assert button["type"] == "button"
        assert button["value"] == str(INTERACTION_ID)
        assert blocks[-1]["elements"] == [button]

    def test_has_one_input_per_question_in_the_agents_order(self):
        blocks = open_prompt(ONE_OF_THREE, SEVERAL_OF_THREE, FREE_TEXT)
        assert [block["label"]["text"] for block in inputs(blocks)] == [
            "Which region?",
            "Which regions?",
            "Anything else?",
        ]
        assert [block["block_id"] for block in inputs(blocks)] == ["question-0", "question-1", "question-2"]
        assert [block["element"]["action_id"] for block in inputs(blocks)] == [
            "answer-0",
            "answer-1",
            "answer-2",
        ]

    def test_lets_every_input_be_left_empty_so_that_submit_always_reaches_kourier(self):
        # Slack would hold back a press with a required input empty, and the person would not learn why.
        assert all(block["optional"] for block in inputs(open_prompt(ONE_OF_THREE, FREE_TEXT)))

    def test_says_the_agent_asks_and_how_many_questions(self):
        assert section_texts(open_prompt(FREE_TEXT))[0] == "The agent asks a question:"
        assert section_texts(open_prompt(ONE_OF_THREE, FREE_TEXT))[0] == "The agent asks 2 questions:"

    def test_of_a_sub_agent_is_labelled_with_its_name(self):
        blocks = open_prompt(FREE_TEXT, agent="billing-agent")
        assert section_texts(blocks)[0] == "The sub-agent *billing-agent* asks a question:"

    def test_that_takes_typed_replies_says_a_reply_in_the_thread_answers_it(self):
        blocks = open_prompt(FREE_TEXT, typed_replies=True)
        hints = [block for block in blocks if block["type"] == "context"]
        assert [element["text"] for hint in hints for element in hint["elements"]] == [
            prompts.TYPED_REPLY_HINT
        ]
        assert block_problems(blocks) == []

    def test_that_does_not_take_typed_replies_says_nothing_of_them(self):
        blocks = open_prompt(FREE_TEXT, typed_replies=False)
        assert [block for block in blocks if block["type"] == "context"] == []
        assert prompts.TYPED_REPLY_HINT not in str(blocks)

    def test_notifies_with_the_first_question(self):
        assert prompts.fallback_text(question(ONE_OF_THREE, FREE_TEXT)) == "The agent asks: Which region?"
        assert (
            prompts.fallback_text(question(FREE_TEXT, agent="billing-agent"))
            == "The sub-agent *billing-agent* asks: Anything else?"
        )


def test_a_prompt_with_inputs_is_a_message_slack_posts_in_a_thread(slack_fake, slack_client):
    root = slack_fake.user_says(defaults.ADA, defaults.CHANNEL_ID, "hi", deliver="none")
    blocks = open_prompt(*EVERY_KIND_OF_PROMPT["several questions"], typed_replies=True)
    posted = slack_client.chat_postMessage(
        channel=defaults.CHANNEL_ID,
        thread_ts=root,
        blocks=blocks,
        text=prompts.fallback_text(question(ONE_OF_THREE)),
    )
    assert posted["ok"]
    shown = slack_fake.message(defaults.CHANNEL_ID, posted["ts"]).blocks
    assert [block["type"] for block in inputs(shown)] == ["input"] * 4


class TestAClosedPrompt:
    ANSWERED_AT = datetime(2026, 3, 4, 5, 6, tzinfo=UTC)

    @pytest.mark.parametrize(
        "line",
        [prompts.answered_line(defaults.ADA, ANSWERED_AT), prompts.TIMED_OUT_LINE],
        ids=["answered", "timed out"],
    )
    def test_has_no_controls_and_says_how_it_ended(self, line):
        blocks = prompts.closed_prompt(question(ONE_OF_THREE, SEVERAL_OF_THREE, FREE_TEXT), line)
        assert list(interactive_elements(blocks)) == []
        assert blocks[-1]["elements"][0]["text"] == line
        assert block_problems(blocks) == []

    def test_still_lists_the_questions_that_were_asked(self):
        blocks = prompts.closed_prompt(question(ONE_OF_THREE, FREE_TEXT, agent="billing-agent"), "over")
        assert section_texts(blocks) == [
            "The sub-agent *billing-agent* asks:\n• Which region?\n• Anything else?"
        ]

    def test_of_a_long_question_fits_in_one_section(self):
        blocks = prompts.closed_prompt(question(asked("Why? " * 1000)), prompts.TIMED_OUT_LINE)
        assert block_problems(blocks) == []

    def test_once_answered_names_who_answered_and_when_in_each_readers_time_zone(self):
        line = prompts.answered_line(defaults.ADA, self.ANSWERED_AT)
        stamp = int(self.ANSWERED_AT.timestamp())
        assert line.startswith(f"Answered by <@{defaults.ADA}> ")
        assert re.search(rf"<!date\^{stamp}\^[^|]+\|at 2026-03-04 05:06 UTC>", line)

    def test_once_timed_out_says_the_task_was_cancelled(self):
        assert "timed out" in prompts.TIMED_OUT_LINE
        assert "cancelled" in prompts.TIMED_OUT_LINE


# --- What the agent names or asks never notifies anyone, in any mrkdwn Kourier builds from it -----

HOSTILE = [
    "<!channel>",
    "<!here|here>",
    "<!subteam^S0OPS|@ops>",
    "<@U0ADA>",
    "@everyone",
    "<https://evil.example|ok>",
]


def mrkdwn_texts(blocks) -> list[str]:
    """Every mrkdwn text in blocks (plain_text shows its characters as they are)."""
    found = []

    def walk(node):
        if isinstance(node, dict):
            if node.get("type") == "mrkdwn":
                found.append(node["text"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(blocks)
    return found


def assert_inert(text: str) -> None:
    assert not re.search(r"<[!@]|<https?:", text), text
    assert not re.search(r"(?<![\w@])@(channel|here|everyone)\b", text), text


def hostile_question(hostile: str):
    return question(
        asked(f"Deploy? {hostile}", ("yes", "no")), asked(f"Why {hostile}"), agent=f"k8s {hostile}"
    )


def hostile_request(hostile: str):
    from kourier.a2a.events import AnswerFormat, ApprovalRequest, ToolToApprove

    tools = tuple(ToolToApprove(f"a{n}", f"c{n}", f"delete_{n}{hostile}", {"x": 1}) for n in range(2))
    return ApprovalRequest(tools, "task-1", None, AnswerFormat.HITL_V1, agent=f"ops {hostile}")


@pytest.mark.parametrize("hostile", HOSTILE)
def test_a_questions_prompt_its_notification_its_ending_and_its_refusals_are_inert(hostile):
    from interactions.answers import read_answers

    asked_question = hostile_question(hostile)
    texts = [
        *mrkdwn_texts(prompts.open_prompt(asked_question, INTERACTION_ID, typed_replies=False)),
        *mrkdwn_texts(prompts.closed_prompt(asked_question, prompts.TIMED_OUT_LINE)),
        prompts.fallback_text(asked_question),
        read_answers(asked_question, {}).message,
    ]
    for text in texts:
        assert_inert(text)


@pytest.mark.parametrize("hostile", HOSTILE)
def test_an_approvals_prompt_its_notification_its_ending_and_the_still_undecided_refusal_are_inert(hostile):
    from interactions import approval_prompts, decisions

    request = hostile_request(hostile)
    prompt = approval_prompts.open_prompt(request, INTERACTION_ID)
    texts = [
        *mrkdwn_texts(prompt),
        *mrkdwn_texts(approval_prompts.decided_prompt(request, [True, False], "Decided.")),
        *mrkdwn_texts(approval_prompts.timed_out_prompt(request)),
        approval_prompts.fallback_text(request),
        decisions.read_decision(request, approval_prompts.DECIDE_ACTION, {}).message,
    ]
    for text in texts:
        assert_inert(text)
