"""A press on a prompt (a question's Submit, an approval's buttons) as the door's listener hands it
over, against the Slack fake: only a channel member who is not a bot may press (members read from
Slack, every page, kept a minute), an approval's presser must be in one of the Binding's approver
groups (read on every press; a read that fails for now keeps the press for a retry), and every press
that is not taken is told why in a message only that person sees."""

import asyncio
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pytest
from django import db
from django.core.cache import caches

from interactions import approval_prompts, approvals, presses, prompts, questions, services
from interactions.kinds import Refusal
from interactions.models import Interaction, KeptPress, ThreadGrant
from interactions.presses import KEPT_FOR_RETRY, PressOutcome, decide_press, receive_press
from kourier.a2a.events import AnswerFormat, ApprovalRequest, ToolToApprove
from kourier.slack.incoming import SubmitPress
from kourier.slack.people import MEMBERS_PAGE_SIZE, forget_channel_members
from sessions.models import Turn
from simulator import defaults
from simulator.interactivity import state_values
from tests.factories import BindingFactory, TurnFactory

from .questions import FREE_TEXT, ONE_OF_THREE, question

# The press is taken from the database threads async code uses: they must see the test's rows.
pytestmark = pytest.mark.django_db(transaction=True)

ASKED = question(ONE_OF_THREE, FREE_TEXT)
COMPLETE = {"answer-0": "0", "answer-1": "Whenever suits."}
OUTSIDER = "U0EVE"  # in the workspace, not in the channel
OTHER_BOT = "U0ALERTS"
NOT_A_MEMBER = questions.QUESTION.refusals[Refusal.NOT_A_MEMBER]


@dataclass(frozen=True)
class Prompt:
    interaction_id: int
    connection_id: int
    thread_ts: str
    ts: str
    blocks: list


@pytest.fixture(autouse=True)
def _nobody_remembered():
    """Who is in the channel, and who is a bot, as an earlier test's Slack said, is forgotten."""
    # A cache of the settings as they are now: this thread's may predate the test Redis.
    caches.create_connection("default").delete_many(
        [f"slack-members:{defaults.CHANNEL_ID}"]
        + [f"slack-bot:{user}" for user in (defaults.ADA, defaults.GRACE, OUTSIDER, OTHER_BOT)]
    )


@pytest.fixture
def prompt(slack_fake, slack_client, settings, monkeypatch) -> Prompt:
    """The agent's question, posted in a thread of the fake's channel; the app's calls so far forgotten."""
    settings.SLACK_API_URL = slack_fake.url
    monkeypatch.setenv("SLACK_BOT_TOKEN", slack_fake.bot_token)
    slack_fake.add_user(OUTSIDER, "Eve Outsider")
    binding = BindingFactory(channels=[defaults.CHANNEL_ID], ask_user=True)
    root = slack_fake.user_says(
        defaults.ADA, defaults.CHANNEL_ID, f"{slack_fake.bot_mention} hi", deliver="none"
    )
    turn = TurnFactory(
        session__binding=binding,
        session__thread_ts=root,
        message_ts=root,
        state=Turn.State.DONE,
        outcome=Turn.Outcome.ASKED,
    )
    interaction = questions.open_question(turn.pk, ASKED)
    blocks = prompts.open_prompt(ASKED, interaction.pk, typed_replies=False)
    ts = slack_client.chat_postMessage(
        channel=defaults.CHANNEL_ID, thread_ts=root, blocks=blocks, text=prompts.fallback_text(ASKED)
    )["ts"]
    services.record_prompt(interaction.pk, ts)
    slack_fake.reset_calls()
    return Prompt(interaction.pk, binding.connection_id, root, ts, blocks)


def submit(
    slack_fake,
    prompt: Prompt,
    user: str,
    picked=COMPLETE,
    *,
    value: str | None = None,
    response_url: str | None = None,
) -> None:
    """``user`` picks or types ``picked`` (by action_id) in the prompt and presses Submit."""
    press = SubmitPress(
        value=str(prompt.interaction_id) if value is None else value,
        team_id=defaults.TEAM_ID,
        channel_id=defaults.CHANNEL_ID,
        message_ts=prompt.ts,
        thread_ts=prompt.thread_ts,
        user_id=user,
        values=state_values(prompt.blocks, picked),
        response_url=response_url or slack_fake.response_url(user, defaults.CHANNEL_ID, prompt.ts),
        action_id=prompts.SUBMIT_ACTION,
    )

    async def scenario() -> None:
        # One database thread, whose connection is closed after: it must not hold the test database.
        database_thread = ThreadPoolExecutor(max_workers=1)
        asyncio.get_running_loop().set_default_executor(database_thread)
        try:
            await receive_press(press, connection_id=prompt.connection_id, bot_token=slack_fake.bot_token)
        finally:
            await asyncio.get_running_loop().run_in_executor(database_thread, lambda: db.connection.close())

    asyncio.run(scenario())


def told(slack_fake, user: str) -> list[tuple[str, str | None]]:
    """What the user alone was shown in the channel, and in which thread."""
    return [(shown.text, shown.thread_ts) for shown in slack_fake.ephemerals(user, defaults.CHANNEL_ID)]


def answered() -> bool:
    return Interaction.objects.get().state == Interaction.State.ANSWERED


def answer_turns() -> int:
    return Turn.objects.filter(kind=Turn.Kind.ANSWER).count()


def test_a_members_complete_answer_is_taken_and_nobody_is_told_anything(prompt, slack_fake):
    submit(slack_fake, prompt, defaults.ADA)
    assert answered()
    assert Turn.objects.get(kind=Turn.Kind.ANSWER).answers == [["Europe"], ["Whenever suits."]]
    assert slack_fake.count("chat.postEphemeral") == 0


def test_someone_outside_the_channel_is_refused_in_their_own_message_and_nothing_is_taken(prompt, slack_fake):
    submit(slack_fake, prompt, OUTSIDER)
    assert not answered()
    assert answer_turns() == 0
    # Through the press's response_url, which reaches them though they are not in the channel
    # (chat.postEphemeral would be refused: user_not_in_channel).
    assert told(slack_fake, OUTSIDER) == [(NOT_A_MEMBER, prompt.thread_ts)]


def test_a_bot_in_the_channel_is_refused_privately_and_nothing_is_taken(prompt, slack_fake):
    slack_fake.add_bot(OTHER_BOT, "alerts")
    slack_fake.join(defaults.CHANNEL_ID, OTHER_BOT)
    submit(slack_fake, prompt, OTHER_BOT)
    assert not answered()
    assert told(slack_fake, OTHER_BOT) == [(NOT_A_MEMBER, prompt.thread_ts)]
    assert told(slack_fake, defaults.ADA) == []


def test_someone_who_left_the_channel_is_refused_once_slack_says_so_not_a_minute_later(prompt, slack_fake):
    submit(slack_fake, prompt, defaults.GRACE, {"answer-0": "1"})  # incomplete: the members are read, kept
    slack_fake.leave(defaults.CHANNEL_ID, defaults.GRACE)
    asyncio.run(forget_channel_members(defaults.CHANNEL_ID))  # the door's listener of member_left_channel
    submit(slack_fake, prompt, defaults.GRACE)
    assert not answered()
    assert told(slack_fake, defaults.GRACE)[-1] == (NOT_A_MEMBER, prompt.thread_ts)


def test_a_member_who_left_an_answer_incomplete_is_told_privately_what_to_fix(prompt, slack_fake):
    submit(slack_fake, prompt, defaults.ADA, {"answer-0": "1"})
    assert not answered()
    assert told(slack_fake, defaults.ADA) == [
        ("Your answer was not sent: Question 2 (Anything else?) needs an answer.", prompt.thread_ts)
    ]
    assert told(slack_fake, defaults.GRACE) == []


def test_a_member_who_answers_second_is_told_privately_it_was_already_answered(prompt, slack_fake):
    submit(slack_fake, prompt, defaults.ADA)
    submit(slack_fake, prompt, defaults.GRACE, {"answer-0": "2", "answer-1": "Now."})
    assert told(slack_fake, defaults.GRACE) == [
        (questions.QUESTION.refusals[Refusal.TAKEN], prompt.thread_ts)
    ]
    assert answer_turns() == 1
    assert Interaction.objects.get().answered_by == defaults.ADA


@pytest.mark.parametrize("value", ["not-an-id", "²", "99999999999999999999999999"])
def test_a_press_that_names_no_question_is_refused_privately(prompt, slack_fake, value):
    submit(slack_fake, prompt, defaults.ADA, value=value)
    assert not answered()
    assert told(slack_fake, defaults.ADA) == [
        (questions.QUESTION.refusals[Refusal.UNKNOWN], prompt.thread_ts)
    ]


class TestTheChannelsMembers:
    @pytest.fixture
    def crowd(self, slack_fake) -> list[str]:
        """More people join the channel than one page of conversations.members holds."""
        people = [f"U1{number:06d}" for number in range(MEMBERS_PAGE_SIZE + 50)]
        for person in people:
            slack_fake.add_user(person, f"Person {person}")
            slack_fake.join(defaults.CHANNEL_ID, person)
        return people

    def test_are_read_page_by_page_so_that_a_member_on_the_last_page_may_answer(
        self, crowd, prompt, slack_fake
    ):
        submit(slack_fake, prompt, crowd[-1])
        assert answered()
        pages = slack_fake.calls("conversations.members")
        assert len(pages) == 2
        assert "cursor" not in pages[0].args or not pages[0].args["cursor"]
        assert pages[1].args["cursor"] == pages[0].response["response_metadata"]["next_cursor"]

    def test_are_read_once_for_the_presses_of_a_minute(self, prompt, slack_fake):
        submit(slack_fake, prompt, defaults.GRACE, {"answer-0": "1"})
        submit(slack_fake, prompt, defaults.ADA)
        submit(slack_fake, prompt, defaults.GRACE)
        assert slack_fake.count("conversations.members") == 1
        assert answered()

    @pytest.mark.parametrize("method", ["conversations.members", "users.info"])
    def test_that_slack_cannot_tell_refuse_the_press_saying_why_and_take_nothing(
        self, prompt, slack_fake, method
    ):
        slack_fake.fail(method, "internal_error", times=None)
        submit(slack_fake, prompt, defaults.ADA)
        assert not answered()
        assert answer_turns() == 0
        assert told(slack_fake, defaults.ADA) == [
            (questions.QUESTION.refusals[Refusal.MEMBERSHIP_UNKNOWN], prompt.thread_ts)
        ]
        slack_fake.clear_faults()
        submit(slack_fake, prompt, defaults.ADA)
        assert answered()


def test_a_refusal_slack_will_not_show_does_not_fail_the_press(prompt, slack_fake):
    dead_url = f"{slack_fake.url}/actions/{defaults.TEAM_ID}/R0GONE/secret"  # Slack: no_active_hooks
    submit(slack_fake, prompt, defaults.ADA, {}, response_url=dead_url)  # does not raise
    assert not answered()
    assert told(slack_fake, defaults.ADA) == []


# -- a press on an approval prompt: the same path, and the Binding's approver groups read on every press


REQUEST = ApprovalRequest(
    tools=(
        ToolToApprove(approval_id="adk-0", call_id="call-0", name="restart_service", args={"name": "api"}),
    ),
    task_id="task-1",
    context_id="ctx-1",
    answer_format=AnswerFormat.HITL_V1,
    agent=None,
)
OPS = "S0OPS"


@pytest.fixture
def approval(slack_fake, slack_client, settings, monkeypatch) -> Prompt:
    """An approval request, posted in a thread of the fake's channel; only Grace is in its approver group."""
    settings.SLACK_API_URL = slack_fake.url
    monkeypatch.setenv("SLACK_BOT_TOKEN", slack_fake.bot_token)
    slack_fake.add_usergroup(OPS, "ops", [defaults.GRACE])
    binding = BindingFactory(
        channels=[defaults.CHANNEL_ID], dialect="kagent-v1", tool_approvals=True, approver_groups=[OPS]
    )
    root = slack_fake.user_says(
        defaults.ADA, defaults.CHANNEL_ID, f"{slack_fake.bot_mention} restart it", deliver="none"
    )
    turn = TurnFactory(
        session__binding=binding,
        session__thread_ts=root,
        message_ts=root,
        state=Turn.State.DONE,
        outcome=Turn.Outcome.ASKED,
    )
    interaction = approvals.open_approval(turn.pk, REQUEST)
    blocks = approval_prompts.open_prompt(REQUEST, interaction.pk)
    assert isinstance(blocks, list)
    ts = slack_client.chat_postMessage(
        channel=defaults.CHANNEL_ID,
        thread_ts=root,
        blocks=blocks,
        text=approval_prompts.fallback_text(REQUEST),
    )["ts"]
    services.record_prompt(interaction.pk, ts)
    slack_fake.reset_calls()
    return Prompt(interaction.pk, binding.connection_id, root, ts, blocks)


def approve(slack_fake, prompt: Prompt, user: str, *, last_attempt: bool | None = None) -> PressOutcome:
    """``user`` presses Approve: through the listener's entry, or as a kept press's try."""
    press = SubmitPress(
        value=str(prompt.interaction_id),
        team_id=defaults.TEAM_ID,
        channel_id=defaults.CHANNEL_ID,
        message_ts=prompt.ts,
        thread_ts=prompt.thread_ts,
        user_id=user,
        values={},
        response_url=slack_fake.response_url(user, defaults.CHANNEL_ID, prompt.ts),
        action_id=approval_prompts.APPROVE_ACTION,
    )

    async def scenario() -> PressOutcome:
        database_thread = ThreadPoolExecutor(max_workers=1)
        asyncio.get_running_loop().set_default_executor(database_thread)
        try:
            if last_attempt is None:
                return await receive_press(
                    press, connection_id=prompt.connection_id, bot_token=slack_fake.bot_token
                )
            return await decide_press(
                approvals.APPROVAL,
                press,
                connection_id=prompt.connection_id,
                bot_token=slack_fake.bot_token,
                last_attempt=last_attempt,
            )
        finally:
            await asyncio.get_running_loop().run_in_executor(database_thread, lambda: db.connection.close())

    return asyncio.run(scenario())


def test_an_approver_in_a_listed_group_decides_and_is_told_nothing(approval, slack_fake):
    assert approve(slack_fake, approval, defaults.GRACE) is PressOutcome.TAKEN
    assert answered()
    assert Turn.objects.get(kind=Turn.Kind.ANSWER).answers == [True]
    assert told(slack_fake, defaults.GRACE) == []


def test_a_bot_in_the_channel_and_its_approver_group_is_refused_privately_and_nothing_is_decided(
    approval, slack_fake
):
    slack_fake.add_bot(OTHER_BOT, "alerts")
    slack_fake.join(defaults.CHANNEL_ID, OTHER_BOT)
    slack_fake.add_usergroup(OPS, "ops", [defaults.GRACE, OTHER_BOT])
    assert approve(slack_fake, approval, OTHER_BOT) is PressOutcome.REFUSED
    assert not answered()
    assert answer_turns() == 0
    assert not KeptPress.objects.exists()
    assert told(slack_fake, OTHER_BOT) == [
        (approvals.APPROVAL.refusals[Refusal.NOT_A_MEMBER], approval.thread_ts)
    ]


def test_a_bot_is_refused_on_an_approval_without_approver_groups_too(
    slack_fake, slack_client, settings, monkeypatch
):
    settings.SLACK_API_URL = slack_fake.url
    monkeypatch.setenv("SLACK_BOT_TOKEN", slack_fake.bot_token)
    slack_fake.add_bot(OTHER_BOT, "alerts")
    slack_fake.join(defaults.CHANNEL_ID, OTHER_BOT)
    prompt = put_to_the_thread(slack_fake, slack_client, REQUEST)  # any member may decide
    assert approve(slack_fake, prompt, OTHER_BOT) is PressOutcome.REFUSED
    assert not answered()
    assert told(slack_fake, OTHER_BOT) == [
        (approvals.APPROVAL.refusals[Refusal.NOT_A_MEMBER], prompt.thread_ts)
    ]
    assert approve(slack_fake, prompt, defaults.ADA) is PressOutcome.TAKEN


def test_a_channel_member_outside_the_approver_groups_is_refused_privately(approval, slack_fake):
    assert approve(slack_fake, approval, defaults.ADA) is PressOutcome.REFUSED
    assert not answered()
    assert told(slack_fake, defaults.ADA) == [
        (approvals.APPROVAL.refusals[Refusal.NOT_AN_APPROVER], approval.thread_ts)
    ]


def test_someone_outside_the_channel_is_refused_before_any_group_is_read(approval, slack_fake):
    slack_fake.add_user(OUTSIDER, "Eve Outsider")
    assert approve(slack_fake, approval, OUTSIDER) is PressOutcome.REFUSED
    assert told(slack_fake, OUTSIDER) == [
        (approvals.APPROVAL.refusals[Refusal.NOT_A_MEMBER], approval.thread_ts)
    ]
    assert slack_fake.count("usergroups.users.list") == 0


def test_a_group_slack_refuses_for_good_decides_nothing_keeps_nothing_and_says_so(approval, slack_fake):
    slack_fake.fail("usergroups.users.list", "missing_scope")
    assert approve(slack_fake, approval, defaults.GRACE) is PressOutcome.REFUSED
    assert not answered()
    assert not KeptPress.objects.exists()
    assert told(slack_fake, defaults.GRACE) == [
        (approvals.APPROVAL.refusals[Refusal.GROUPS_UNREADABLE], approval.thread_ts)
    ]


def test_a_group_slack_cannot_read_for_now_keeps_the_press_and_tells_the_presser_it_is_retried(
    approval, slack_fake
):
    slack_fake.fail("usergroups.users.list", "http_503")
    assert approve(slack_fake, approval, defaults.GRACE) is PressOutcome.RETRY
    assert not answered()
    assert KeptPress.objects.get().interaction_id == approval.interaction_id
    assert told(slack_fake, defaults.GRACE) == [(KEPT_FOR_RETRY, approval.thread_ts)]


def test_a_failure_that_is_not_slacks_is_raised_and_never_kept_for_a_retry(approval, slack_fake, monkeypatch):
    async def broken(slack, group_id):
        raise RuntimeError("a bug, not an outage")

    monkeypatch.setattr(presses, "usergroup_members", broken)
    with pytest.raises(RuntimeError):
        approve(slack_fake, approval, defaults.GRACE)
    assert not KeptPress.objects.exists()
    assert not answered()


def test_the_last_try_that_still_cannot_read_the_groups_tells_the_presser(approval, slack_fake):
    slack_fake.fail("usergroups.users.list", "http_503")
    assert approve(slack_fake, approval, defaults.GRACE, last_attempt=True) is PressOutcome.REFUSED
    assert not answered()
    assert told(slack_fake, defaults.GRACE) == [
        (approvals.APPROVAL.refusals[Refusal.GROUPS_UNAVAILABLE], approval.thread_ts)
    ]


def try_kept_press(kept_id: int, attempt: int) -> PressOutcome:
    """Try ``attempt`` of a kept press, as its Celery task runs it."""

    async def scenario() -> PressOutcome:
        database_thread = ThreadPoolExecutor(max_workers=1)
        asyncio.get_running_loop().set_default_executor(database_thread)
        try:
            return await presses.retry_kept_press(kept_id, attempt)
        finally:
            await asyncio.get_running_loop().run_in_executor(database_thread, lambda: db.connection.close())

    return asyncio.run(scenario())


def test_a_kept_press_is_put_off_while_slack_still_cannot_read_the_groups_then_taken(approval, slack_fake):
    slack_fake.fail("usergroups.users.list", "http_503", times=None)
    assert approve(slack_fake, approval, defaults.GRACE) is PressOutcome.RETRY
    kept = KeptPress.objects.get()
    assert try_kept_press(kept.pk, 0) is PressOutcome.RETRY
    assert KeptPress.objects.get().attempt == 1  # the next try's message is for try 1
    assert try_kept_press(kept.pk, 0) is PressOutcome.STALE  # a try runs once however often it comes
    slack_fake.clear_faults()
    assert try_kept_press(kept.pk, 1) is PressOutcome.TAKEN
    assert answered()
    assert not KeptPress.objects.exists()


# -- beyond the spec, opt-in (issue 21): four eyes and rules per tool, checked on every press ---------

TWO_TOOLS = ApprovalRequest(
    tools=(
        ToolToApprove(approval_id="adk-0", call_id="call-0", name="restart_service", args={"name": "api"}),
        ToolToApprove(approval_id="adk-1", call_id="call-1", name="db_drop", args={"table": "t"}),
    ),
    task_id="task-1",
    context_id="ctx-1",
    answer_format=AnswerFormat.HITL_V1,
    agent=None,
)
DBA = "S0DBA"


def put_to_the_thread(slack_fake, slack_client, request: ApprovalRequest, **binding_fields) -> Prompt:
    """Ada asks; the agent pauses for ``request`` under a Binding with ``binding_fields`` (``tools``:
    its tool rules, as the manifest writes them)."""
    binding = BindingFactory(
        channels=[defaults.CHANNEL_ID],
        dialect="kagent-v1",
        tool_approvals=True,
        tool_rules=binding_fields.pop("tools", []),
        **binding_fields,
    )
    root = slack_fake.user_says(
        defaults.ADA, defaults.CHANNEL_ID, f"{slack_fake.bot_mention} fix it", deliver="none"
    )
    turn = TurnFactory(
        session__binding=binding,
        session__thread_ts=root,
        message_ts=root,
        user_id=defaults.ADA,
        state=Turn.State.DONE,
        outcome=Turn.Outcome.ASKED,
    )
    interaction = approvals.open_approval(turn.pk, request)
    blocks = approval_prompts.open_prompt(request, interaction.pk)
    assert isinstance(blocks, list)
    ts = slack_client.chat_postMessage(
        channel=defaults.CHANNEL_ID,
        thread_ts=root,
        blocks=blocks,
        text=approval_prompts.fallback_text(request),
    )["ts"]
    services.record_prompt(interaction.pk, ts)
    slack_fake.reset_calls()
    return Prompt(interaction.pk, binding.connection_id, root, ts, blocks)


@pytest.fixture
def rules(slack_fake, slack_client, settings, monkeypatch):
    settings.SLACK_API_URL = slack_fake.url
    monkeypatch.setenv("SLACK_BOT_TOKEN", slack_fake.bot_token)
    slack_fake.add_usergroup(OPS, "ops", [defaults.GRACE])
    slack_fake.add_usergroup(DBA, "dba", [defaults.ADA])
    return lambda request, **fields: put_to_the_thread(slack_fake, slack_client, request, **fields)


def press_on(slack_fake, prompt: Prompt, user: str, action: str, choices=None) -> PressOutcome:
    press = SubmitPress(
        value=str(prompt.interaction_id),
        team_id=defaults.TEAM_ID,
        channel_id=defaults.CHANNEL_ID,
        message_ts=prompt.ts,
        thread_ts=prompt.thread_ts,
        user_id=user,
        values=state_values(prompt.blocks, choices or {}),
        response_url=slack_fake.response_url(user, defaults.CHANNEL_ID, prompt.ts),
        action_id=action,
    )

    async def scenario() -> PressOutcome:
        database_thread = ThreadPoolExecutor(max_workers=1)
        asyncio.get_running_loop().set_default_executor(database_thread)
        try:
            return await receive_press(
                press, connection_id=prompt.connection_id, bot_token=slack_fake.bot_token
            )
        finally:
            await asyncio.get_running_loop().run_in_executor(database_thread, lambda: db.connection.close())

    return asyncio.run(scenario())


FOUR_EYES = "You asked for this, so someone else must approve it. You can still deny it."


class TestFourEyes:
    def test_the_person_who_asked_cannot_approve_and_is_told_so_privately_in_fixed_words(
        self, rules, slack_fake
    ):
        prompt = rules(REQUEST, separate_approver=True)

        assert (
            press_on(slack_fake, prompt, defaults.ADA, approval_prompts.APPROVE_ACTION)
            is PressOutcome.REFUSED
        )

        assert not answered()
        assert told(slack_fake, defaults.ADA) == [(FOUR_EYES, prompt.thread_ts)]
        assert approvals.SEPARATE_APPROVER == FOUR_EYES

    def test_the_person_who_asked_may_deny(self, rules, slack_fake):
        prompt = rules(REQUEST, separate_approver=True)

        assert press_on(slack_fake, prompt, defaults.ADA, approval_prompts.DENY_ACTION) is PressOutcome.TAKEN
        assert Turn.objects.get(kind=Turn.Kind.ANSWER).answers == [False]

    def test_someone_else_may_approve(self, rules, slack_fake):
        prompt = rules(REQUEST, separate_approver=True)

        assert (
            press_on(slack_fake, prompt, defaults.GRACE, approval_prompts.APPROVE_ACTION)
            is PressOutcome.TAKEN
        )
        assert told(slack_fake, defaults.GRACE) == []

    def test_without_it_the_person_who_asked_approves_as_the_spec_says(self, rules, slack_fake):
        prompt = rules(REQUEST)

        assert (
            press_on(slack_fake, prompt, defaults.ADA, approval_prompts.APPROVE_ACTION) is PressOutcome.TAKEN
        )

    def test_a_submit_that_approves_a_tool_under_four_eyes_is_refused_naming_it(self, rules, slack_fake):
        prompt = rules(TWO_TOOLS, tools=[{"match": "db_*", "separateApprover": True}])
        choices = {"verdict-0": "approve", "verdict-1": "approve"}

        assert (
            press_on(slack_fake, prompt, defaults.ADA, approval_prompts.DECIDE_ACTION, choices)
            is PressOutcome.REFUSED
        )

        assert told(slack_fake, defaults.ADA) == [
            (f"{FOUR_EYES} (Someone else must approve: db_drop.)", prompt.thread_ts)
        ]
        assert not answered()

    def test_a_submit_that_denies_the_tool_under_four_eyes_is_taken(self, rules, slack_fake):
        prompt = rules(TWO_TOOLS, tools=[{"match": "db_*", "separateApprover": True}])
        choices = {"verdict-0": "approve", "verdict-1": "deny"}

        assert (
            press_on(slack_fake, prompt, defaults.ADA, approval_prompts.DECIDE_ACTION, choices)
            is PressOutcome.TAKEN
        )
        assert Turn.objects.get(kind=Turn.Kind.ANSWER).answers == [True, False]


class TestRulesPerTool:
    def test_a_tool_rules_groups_are_read_for_its_tool_and_the_bindings_for_the_others(
        self, rules, slack_fake
    ):
        prompt = rules(TWO_TOOLS, approver_groups=[OPS], tools=[{"match": "db_*", "approverGroups": [DBA]}])

        # Grace is in ops (restart_service) but not in dba (db_drop): refused, naming the tool.
        assert (
            press_on(slack_fake, prompt, defaults.GRACE, approval_prompts.APPROVE_ACTION)
            is PressOutcome.REFUSED
        )
        assert told(slack_fake, defaults.GRACE) == [
            (
                "Only members of the approver groups set for db_drop can decide on this request; "
                "your decision was not sent.",
                prompt.thread_ts,
            )
        ]
        # Ada is in dba but not in ops: the Binding's own refusal, as the spec words it.
        assert (
            press_on(slack_fake, prompt, defaults.ADA, approval_prompts.DENY_ACTION) is PressOutcome.REFUSED
        )
        assert told(slack_fake, defaults.ADA) == [
            (approvals.APPROVAL.refusals[Refusal.NOT_AN_APPROVER], prompt.thread_ts)
        ]
        assert not answered()

    def test_someone_in_every_tools_groups_decides_each_group_read_once(self, rules, slack_fake):
        slack_fake.add_usergroup(DBA, "dba", [defaults.ADA, defaults.GRACE])
        prompt = rules(
            TWO_TOOLS,
            approver_groups=[OPS],
            tools=[
                {"match": "restart_*", "approverGroups": [OPS]},
                {"match": "db_*", "approverGroups": [DBA, OPS]},
            ],
        )

        assert (
            press_on(slack_fake, prompt, defaults.GRACE, approval_prompts.APPROVE_ACTION)
            is PressOutcome.TAKEN
        )
        assert [call.args["usergroup"] for call in slack_fake.calls("usergroups.users.list")] == [OPS, DBA]

    def test_a_rule_with_no_groups_lets_any_member_decide_its_tool(self, rules, slack_fake):
        prompt = rules(
            REQUEST, approver_groups=[OPS], tools=[{"match": "restart_service", "approverGroups": []}]
        )

        assert (
            press_on(slack_fake, prompt, defaults.ADA, approval_prompts.APPROVE_ACTION) is PressOutcome.TAKEN
        )
        assert slack_fake.calls("usergroups.users.list") == []


class TestAllowForThread:
    """Beyond the spec, opt-in (issue 33): "Allow for this thread" is pressed as Approve is."""

    def test_an_approver_in_the_group_allows_the_tool_for_the_thread(self, rules, slack_fake):
        prompt = rules(REQUEST, approver_groups=[OPS], allow_for_thread=True)

        outcome = press_on(slack_fake, prompt, defaults.GRACE, approval_prompts.ALLOW_FOR_THREAD_ACTION)

        assert outcome is PressOutcome.TAKEN
        assert ThreadGrant.objects.get().granted_by == defaults.GRACE

    def test_a_member_outside_the_approver_groups_is_refused_privately_and_nothing_is_stored(
        self, rules, slack_fake
    ):
        prompt = rules(REQUEST, approver_groups=[OPS], allow_for_thread=True)

        outcome = press_on(slack_fake, prompt, defaults.ADA, approval_prompts.ALLOW_FOR_THREAD_ACTION)

        assert outcome is PressOutcome.REFUSED
        assert told(slack_fake, defaults.ADA) == [
            (approvals.APPROVAL.refusals[Refusal.NOT_AN_APPROVER], prompt.thread_ts)
        ]
        assert not answered()
        assert not ThreadGrant.objects.exists()

    def test_a_forged_press_on_a_binding_that_does_not_offer_it_is_refused_privately(self, rules, slack_fake):
        prompt = rules(REQUEST, approver_groups=[OPS])

        outcome = press_on(slack_fake, prompt, defaults.GRACE, approval_prompts.ALLOW_FOR_THREAD_ACTION)

        assert outcome is PressOutcome.REFUSED
        assert told(slack_fake, defaults.GRACE) == [
            (approvals.APPROVAL.refusals[Refusal.MISMATCH], prompt.thread_ts)
        ]
        assert not answered()
        assert not ThreadGrant.objects.exists()

    def test_a_press_after_the_prompt_ended_is_refused_privately(self, rules, slack_fake):
        prompt = rules(REQUEST, approver_groups=[OPS], allow_for_thread=True)
        press_on(slack_fake, prompt, defaults.GRACE, approval_prompts.DENY_ACTION)
        slack_fake.reset_calls()

        outcome = press_on(slack_fake, prompt, defaults.GRACE, approval_prompts.ALLOW_FOR_THREAD_ACTION)

        assert outcome is PressOutcome.REFUSED
        assert told(slack_fake, defaults.GRACE) == [
            (approvals.APPROVAL.refusals[Refusal.TAKEN], prompt.thread_ts)
        ]
        assert not ThreadGrant.objects.exists()
