"""Reading a slash command and a message shortcut as Slack sends them: every field the product uses,
and a payload with one missing or of another type is unreadable, never half read."""

from typing import Any

import pytest

from kourier.slack.incoming import UnreadableEvent, why_unreadable
from kourier.slack.surfaces import (
    HELP,
    STATUS,
    MessageShortcut,
    SlashCommand,
    read_message_shortcut,
    read_slash_command,
)

COMMAND = {
    "token": "t",
    "team_id": "T0001",
    "channel_id": "C0001",
    "user_id": "U0ADA",
    "command": "/kourier",
    "text": "  why is it slow?  ",
    "response_url": "https://hooks.slack.com/commands/T0001/1/abc",
    "trigger_id": "1.2.3",
}
SHORTCUT: dict[str, Any] = {
    "type": "message_action",
    "callback_id": "ask_about_message",
    "team": {"id": "T0001", "domain": "kourier"},
    "user": {"id": "U0GRACE", "name": "grace"},
    "channel": {"id": "C0001", "name": "agents"},
    "message_ts": "1700000000.000100",
    "message": {"type": "message", "ts": "1700000000.000100", "user": "U0ADA", "text": "the build is red"},
    "response_url": "https://hooks.slack.com/app/T0001/1/abc",
    "trigger_id": "1.2.3",
}


def test_a_slash_command_is_read_with_its_text_stripped():
    command = read_slash_command(COMMAND)
    assert command == SlashCommand(
        "/kourier", "why is it slow?", "T0001", "C0001", "U0ADA", COMMAND["response_url"], "1.2.3"
    )
    assert command.subcommand == ""


@pytest.mark.parametrize(
    ("text", "subcommand"), [("", HELP), ("help", HELP), ("STATUS", STATUS), ("status please", "")]
)
def test_help_and_status_are_words_of_their_own_and_no_text_asks_for_help(text, subcommand):
    command = read_slash_command({**COMMAND, "text": text})
    assert isinstance(command, SlashCommand)
    assert command.subcommand == subcommand


@pytest.mark.parametrize(
    "change",
    [{"channel_id": None}, {"user_id": 7}, {"response_url": ""}, {"text": ["x"]}, {"text": "x" * 4001}],
)
def test_a_slash_command_missing_a_field_or_too_long_is_unreadable(change):
    assert isinstance(read_slash_command({**COMMAND, **change}), UnreadableEvent)


def test_the_door_takes_a_slash_commands_fields_without_a_type_and_refuses_them_half_there():
    assert why_unreadable(COMMAND) is None
    assert why_unreadable({**COMMAND, "channel_id": 3}) == "slash command without channel_id"
    assert why_unreadable({"text": "no command"}) == "no type"


def test_a_message_shortcut_is_read_with_its_message_and_author():
    shortcut = read_message_shortcut(SHORTCUT)
    assert isinstance(shortcut, MessageShortcut)
    assert (shortcut.user_id, shortcut.channel_id, shortcut.message_ts) == (
        "U0GRACE",
        "C0001",
        SHORTCUT["message_ts"],
    )
    assert (shortcut.message_author, shortcut.author_is_bot, shortcut.message_text) == (
        "U0ADA",
        False,
        "the build is red",
    )
    assert shortcut.thread_root == SHORTCUT["message_ts"]  # a thread under the message


def test_a_shortcut_on_a_reply_stays_in_its_thread_and_an_apps_message_is_known_by_its_bot():
    message = {**SHORTCUT["message"], "thread_ts": "1699999999.000001", "bot_id": "B0ALERTS"}
    shortcut = read_message_shortcut({**SHORTCUT, "message": message})
    assert isinstance(shortcut, MessageShortcut)
    assert shortcut.thread_root == "1699999999.000001"
    assert (shortcut.message_author, shortcut.author_is_bot) == ("B0ALERTS", True)


@pytest.mark.parametrize(
    "change",
    [
        {"user": None},
        {"channel": {"name": "x"}},
        {"message": {"text": "no ts"}},
        {"message": {"ts": "1.2", "text": 5}},
        {"response_url": "ftp://x"},
    ],
)
def test_a_shortcut_missing_what_slack_always_sends_is_unreadable(change):
    assert isinstance(read_message_shortcut({**SHORTCUT, **change}), UnreadableEvent)


def test_the_door_refuses_a_message_action_without_a_callback_id():
    assert why_unreadable(SHORTCUT) is None
    assert why_unreadable({**SHORTCUT, "callback_id": None}) == "message_action without a callback_id"
