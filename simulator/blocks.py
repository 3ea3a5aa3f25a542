"""Block Kit, stream chunk and message metadata validation, as pure functions.

Each ``*_problems`` function returns what Slack would complain about, one string per problem in the
shape Slack puts in an ``invalid_blocks`` answer (``"<what is wrong> [json-pointer:/blocks/0/text]"``).
An empty list means Slack accepts the payload. Limits come from docs/slack-platform.md §3 and slack_sdk's
model validators; limits that page marks UNVERIFIED are deliberately not enforced.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, TypeGuard

MAX_BLOCKS_PER_MESSAGE = 50
MAX_BLOCK_ID = 255
MAX_ACTION_ID = 255
MAX_SECTION_TEXT = 3000
MAX_SECTION_FIELDS = 10
MAX_SECTION_FIELD_TEXT = 2000
MAX_HEADER_TEXT = 150
MAX_MARKDOWN_BLOCK_TEXT = 12000  # cumulative over the markdown blocks of one payload
MAX_CONTEXT_ELEMENTS = 10
MAX_ACTIONS_ELEMENTS = 25
MAX_CONTEXT_ACTIONS_ELEMENTS = 5
MAX_CHOICE_OPTIONS = 10  # radio_buttons, checkboxes
MAX_SELECT_OPTIONS = 100  # static selects: options, and option_groups
MAX_OVERFLOW_OPTIONS = 5
MAX_OPTION_TEXT = 75
MAX_OPTION_VALUE = 150
MAX_OPTION_DESCRIPTION = 75
MAX_BUTTON_TEXT = 75
MAX_BUTTON_VALUE = 2000
MAX_BUTTON_URL = 3000
MAX_PLACEHOLDER = 150
MAX_INPUT_LABEL = 2000
MAX_INPUT_HINT = 2000
MAX_IMAGE_ALT_TEXT = 2000

TASK_STATUSES = frozenset({"pending", "in_progress", "complete", "error"})
TASK_CARD_BLOCK_TYPES = frozenset({"task_card", "plan"})
BLOCK_TYPES = frozenset(
    {
        "actions",
        "alert",
        "call",
        "card",
        "carousel",
        "container",
        "context",
        "context_actions",
        "divider",
        "file",
        "header",
        "image",
        "input",
        "markdown",
        "plan",
        "rich_text",
        "section",
        "table",
        "task_card",
        "video",
    }
)
SELECT_TYPES = frozenset({"static_select", "multi_static_select"})
CHOICE_TYPES = frozenset({"radio_buttons", "checkboxes"})
# Elements that take no options of their own; only their action_id and placeholder are checked.
OTHER_ELEMENT_TYPES = frozenset(
    {
        "channels_select",
        "conversations_select",
        "datepicker",
        "datetimepicker",
        "email_text_input",
        "external_select",
        "feedback_buttons",
        "file_input",
        "icon_button",
        "image",
        "multi_channels_select",
        "multi_conversations_select",
        "multi_external_select",
        "multi_users_select",
        "number_input",
        "plain_text_input",
        "rich_text_input",
        "timepicker",
        "url_text_input",
        "users_select",
        "workflow_button",
    }
)
ELEMENT_TYPES = frozenset({"button", "overflow"}) | SELECT_TYPES | CHOICE_TYPES | OTHER_ELEMENT_TYPES
CHUNK_TYPES = frozenset({"markdown_text", "task_update", "plan_update", "blocks"})

_METADATA_EVENT_TYPE = re.compile(r"^[A-Za-z0-9_.\-]+$")


class _Report:
    def __init__(self) -> None:
        self.problems: list[str] = []
        self.markdown_chars = 0

    def add(self, pointer: str, message: str) -> None:
        self.problems.append(f"{message} [json-pointer:{pointer}]")


def block_problems(
    blocks: object,
    *,
    allow_task_cards: bool = True,
    max_blocks: int = MAX_BLOCKS_PER_MESSAGE,
    pointer: str = "/blocks",
) -> list[str]:
    """Everything Slack would refuse in a message's ``blocks``."""
    report = _Report()
    _check_blocks(report, blocks, pointer, allow_task_cards=allow_task_cards, max_blocks=max_blocks)
    return report.problems


def chunk_problems(chunks: object, *, allow_task_cards: bool = True) -> list[str]:
    """Everything Slack would refuse in a stream call's ``chunks`` (docs/slack-platform.md §1.2)."""
    report = _Report()
    if not isinstance(chunks, list):
        report.add("/chunks", "must be an array")
        return report.problems
    for index, chunk in enumerate(chunks):
        pointer = f"/chunks/{index}"
        if not isinstance(chunk, dict) or not isinstance(chunk.get("type"), str):
            report.add(pointer, "must be an object with a type")
            continue
        kind = chunk["type"]
        if kind not in CHUNK_TYPES:
            report.add(f"{pointer}/type", f"unsupported chunk type {kind!r}")
        elif kind == "markdown_text":
            if not isinstance(chunk.get("text"), str):
                report.add(f"{pointer}/text", "must be a string")
        elif kind == "task_update":
            if not allow_task_cards:
                report.add(pointer, "task cards are not available to this app")
            _check_task_update(report, chunk, pointer)
        elif kind == "plan_update":
            if not allow_task_cards:
                report.add(pointer, "plans are not available to this app")
            if not _is_text(chunk.get("title")):
                report.add(f"{pointer}/title", "must be a non-empty string")
        else:
            _check_blocks(
                report,
                chunk.get("blocks"),
                f"{pointer}/blocks",
                allow_task_cards=allow_task_cards,
                max_blocks=MAX_BLOCKS_PER_MESSAGE,
                min_blocks=1,
            )
    return report.problems


def metadata_error(metadata: object) -> str | None:
    """The error Slack answers for bad message ``metadata``, or None when it is acceptable."""
    if not isinstance(metadata, dict):
        return "invalid_metadata_format"
    event_type = metadata.get("event_type")
    if not isinstance(event_type, str) or not _METADATA_EVENT_TYPE.match(event_type):
        return "invalid_metadata_schema"
    if not isinstance(metadata.get("event_payload"), dict):
        return "invalid_metadata_schema"
    return None


def has_task_card_blocks(blocks: Iterable[object]) -> bool:
    return any(isinstance(block, dict) and block.get("type") in TASK_CARD_BLOCK_TYPES for block in blocks)


def interactive_elements(blocks: Iterable[dict[str, Any]]) -> Iterable[tuple[str | None, dict[str, Any]]]:
    """(block_id, element) for every element a person can use in these blocks."""
    for block in blocks:
        block_id = block.get("block_id")
        kind = block.get("type")
        if kind in ("actions", "context_actions"):
            for element in block.get("elements") or []:
                if isinstance(element, dict):
                    yield block_id, element
        elif kind == "section" and isinstance(block.get("accessory"), dict):
            yield block_id, block["accessory"]
        elif kind == "input" and isinstance(block.get("element"), dict):
            yield block_id, block["element"]


# Blocks.


def _check_blocks(
    report: _Report,
    blocks: object,
    pointer: str,
    *,
    allow_task_cards: bool,
    max_blocks: int,
    min_blocks: int = 0,
) -> None:
    if not isinstance(blocks, list):
        report.add(pointer, "must be an array")
        return
    if len(blocks) > max_blocks:
        report.add(pointer, f"no more than {max_blocks} items allowed")
    if len(blocks) < min_blocks:
        report.add(pointer, f"must provide at least {min_blocks} items")
    seen_block_ids: set[str] = set()
    for index, block in enumerate(blocks):
        block_pointer = f"{pointer}/{index}"
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            report.add(block_pointer, "must be an object with a type")
            continue
        kind = block["type"]
        if kind not in BLOCK_TYPES:
            report.add(f"{block_pointer}/type", f"unsupported type {kind!r}")
            continue
        if kind in TASK_CARD_BLOCK_TYPES and not allow_task_cards:
            report.add(f"{block_pointer}/type", f"{kind} blocks are not available to this app")
        _check_block_id(report, block, block_pointer, seen_block_ids)
        checker = _BLOCK_CHECKERS.get(kind)
        if checker is not None:
            checker(report, block, block_pointer)


def _check_block_id(report: _Report, block: dict[str, Any], pointer: str, seen: set[str]) -> None:
    if "block_id" not in block:
        return
    block_id = block["block_id"]
    if not isinstance(block_id, str) or not block_id:
        report.add(f"{pointer}/block_id", "must be a non-empty string")
    elif len(block_id) > MAX_BLOCK_ID:
        report.add(f"{pointer}/block_id", f"must be less than {MAX_BLOCK_ID + 1} characters")
    elif block_id in seen:
        report.add(f"{pointer}/block_id", f"duplicate block_id {block_id!r}")
    else:
        seen.add(block_id)


def _check_section(report: _Report, block: dict[str, Any], pointer: str) -> None:
    if "text" not in block and "fields" not in block:
        report.add(pointer, "must provide either text or fields")
    if "text" in block:
        _check_text_object(report, block["text"], f"{pointer}/text", max_length=MAX_SECTION_TEXT)
    if "fields" in block:
        fields = block["fields"]
        if not isinstance(fields, list) or not fields:
            report.add(f"{pointer}/fields", "must be a non-empty array")
        else:
            if len(fields) > MAX_SECTION_FIELDS:
                report.add(f"{pointer}/fields", f"no more than {MAX_SECTION_FIELDS} items allowed")
            for index, text in enumerate(fields):
                _check_text_object(
                    report, text, f"{pointer}/fields/{index}", max_length=MAX_SECTION_FIELD_TEXT
                )
    if "accessory" in block:
        _check_element(report, block["accessory"], f"{pointer}/accessory")


def _check_header(report: _Report, block: dict[str, Any], pointer: str) -> None:
    _check_text_object(
        report, block.get("text"), f"{pointer}/text", max_length=MAX_HEADER_TEXT, plain_only=True
    )


def _check_context(report: _Report, block: dict[str, Any], pointer: str) -> None:
    elements = _item_list(report, block.get("elements"), f"{pointer}/elements", MAX_CONTEXT_ELEMENTS)
    for index, element in enumerate(elements or []):
        element_pointer = f"{pointer}/elements/{index}"
        if isinstance(element, dict) and element.get("type") == "image":
            _check_image(report, element, element_pointer)
        else:
            _check_text_object(report, element, element_pointer, max_length=None)


def _check_actions(report: _Report, block: dict[str, Any], pointer: str) -> None:
    _check_interactive_list(report, block.get("elements"), f"{pointer}/elements", MAX_ACTIONS_ELEMENTS)


def _check_context_actions(report: _Report, block: dict[str, Any], pointer: str) -> None:
    _check_interactive_list(
        report, block.get("elements"), f"{pointer}/elements", MAX_CONTEXT_ACTIONS_ELEMENTS
    )


def _check_input(report: _Report, block: dict[str, Any], pointer: str) -> None:
    _check_text_object(
        report, block.get("label"), f"{pointer}/label", max_length=MAX_INPUT_LABEL, plain_only=True
    )
    if "hint" in block:
        _check_text_object(
            report, block["hint"], f"{pointer}/hint", max_length=MAX_INPUT_HINT, plain_only=True
        )
    if "element" not in block:
        report.add(f"{pointer}/element", "is required")
    else:
        _check_element(report, block["element"], f"{pointer}/element")


def _check_markdown(report: _Report, block: dict[str, Any], pointer: str) -> None:
    text = block.get("text")
    if not _is_text(text):
        report.add(f"{pointer}/text", "must be a non-empty string")
        return
    report.markdown_chars += len(text)
    if report.markdown_chars > MAX_MARKDOWN_BLOCK_TEXT:
        report.add(
            f"{pointer}/text",
            f"markdown blocks hold no more than {MAX_MARKDOWN_BLOCK_TEXT} characters in all",
        )


def _check_rich_text(report: _Report, block: dict[str, Any], pointer: str) -> None:
    if not isinstance(block.get("elements"), list):
        report.add(f"{pointer}/elements", "must be an array")


def _check_image(report: _Report, block: dict[str, Any], pointer: str) -> None:
    if not _is_text(block.get("image_url")) and not isinstance(block.get("slack_file"), dict):
        report.add(pointer, "must provide image_url or slack_file")
    alt_text = block.get("alt_text")
    if not _is_text(alt_text):
        report.add(f"{pointer}/alt_text", "must be a non-empty string")
    elif len(alt_text) > MAX_IMAGE_ALT_TEXT:
        report.add(f"{pointer}/alt_text", f"must be less than {MAX_IMAGE_ALT_TEXT + 1} characters")


def _check_task_card(report: _Report, block: dict[str, Any], pointer: str) -> None:
    if not _is_text(block.get("task_id")):
        report.add(f"{pointer}/task_id", "must be a non-empty string")
    if not _is_text(block.get("title")):
        report.add(f"{pointer}/title", "must be a non-empty string")
    if "status" in block and block["status"] not in TASK_STATUSES:
        report.add(f"{pointer}/status", f"must be one of {sorted(TASK_STATUSES)}")


def _check_plan(report: _Report, block: dict[str, Any], pointer: str) -> None:
    if not _is_text(block.get("title")):
        report.add(f"{pointer}/title", "must be a non-empty string")
    tasks = block.get("tasks", [])
    if not isinstance(tasks, list):
        report.add(f"{pointer}/tasks", "must be an array")
        return
    for index, task in enumerate(tasks):
        task_pointer = f"{pointer}/tasks/{index}"
        if not isinstance(task, dict) or task.get("type") != "task_card":
            report.add(task_pointer, "must be a task_card block")
        else:
            _check_task_card(report, task, task_pointer)


_BLOCK_CHECKERS = {
    "actions": _check_actions,
    "context": _check_context,
    "context_actions": _check_context_actions,
    "header": _check_header,
    "image": _check_image,
    "input": _check_input,
    "markdown": _check_markdown,
    "plan": _check_plan,
    "rich_text": _check_rich_text,
    "section": _check_section,
    "task_card": _check_task_card,
}


# Elements and composition objects.


def _item_list(report: _Report, items: object, pointer: str, max_items: int) -> list[Any] | None:
    """The items when they are a non-empty array (reporting more than ``max_items``), else None."""
    if not isinstance(items, list) or not items:
        report.add(pointer, "must be a non-empty array")
        return None
    if len(items) > max_items:
        report.add(pointer, f"no more than {max_items} items allowed")
    return items


def _check_interactive_list(report: _Report, items: object, pointer: str, max_items: int) -> None:
    action_ids: set[str] = set()
    for index, element in enumerate(_item_list(report, items, pointer, max_items) or []):
        element_pointer = f"{pointer}/{index}"
        _check_element(report, element, element_pointer)
        action_id = element.get("action_id") if isinstance(element, dict) else None
        if isinstance(action_id, str):
            if action_id in action_ids:
                report.add(f"{element_pointer}/action_id", f"duplicate action_id {action_id!r} in this block")
            action_ids.add(action_id)


def _check_element(report: _Report, element: object, pointer: str) -> None:
    if not isinstance(element, dict) or not isinstance(element.get("type"), str):
        report.add(pointer, "must be an object with a type")
        return
    kind = element["type"]
    if kind not in ELEMENT_TYPES:
        report.add(f"{pointer}/type", f"unsupported element type {kind!r}")
        return
    if "action_id" in element:
        action_id = element["action_id"]
        if not isinstance(action_id, str) or not action_id:
            report.add(f"{pointer}/action_id", "must be a non-empty string")
        elif len(action_id) > MAX_ACTION_ID:
            report.add(f"{pointer}/action_id", f"must be less than {MAX_ACTION_ID + 1} characters")
    if "placeholder" in element:
        _check_text_object(
            report,
            element["placeholder"],
            f"{pointer}/placeholder",
            max_length=MAX_PLACEHOLDER,
            plain_only=True,
        )
    if kind == "button":
        _check_button(report, element, pointer)
    elif kind == "image":
        _check_image(report, element, pointer)
    elif kind in SELECT_TYPES:
        _check_select(report, element, pointer)
    elif kind in CHOICE_TYPES:
        _check_options(
            report, element.get("options"), f"{pointer}/options", MAX_CHOICE_OPTIONS, plain_only=False
        )
        _check_initial_options(report, element, pointer)
    elif kind == "overflow":
        _check_options(
            report, element.get("options"), f"{pointer}/options", MAX_OVERFLOW_OPTIONS, plain_only=True
        )


def _check_button(report: _Report, button: dict[str, Any], pointer: str) -> None:
    _check_text_object(
        report, button.get("text"), f"{pointer}/text", max_length=MAX_BUTTON_TEXT, plain_only=True
    )
    _check_optional_string(report, button, "value", pointer, MAX_BUTTON_VALUE)
    _check_optional_string(report, button, "url", pointer, MAX_BUTTON_URL)
    if "style" in button and button["style"] not in ("primary", "danger"):
        report.add(f"{pointer}/style", "must be primary or danger")


def _check_select(report: _Report, select: dict[str, Any], pointer: str) -> None:
    has_options, has_groups = "options" in select, "option_groups" in select
    if has_options == has_groups:
        report.add(pointer, "must provide exactly one of options and option_groups")
    if has_options:
        _check_options(report, select["options"], f"{pointer}/options", MAX_SELECT_OPTIONS, plain_only=True)
    if has_groups:
        groups = _item_list(report, select["option_groups"], f"{pointer}/option_groups", MAX_SELECT_OPTIONS)
        for index, group in enumerate(groups or []):
            group_pointer = f"{pointer}/option_groups/{index}"
            options = group.get("options") if isinstance(group, dict) else None
            _check_options(report, options, f"{group_pointer}/options", MAX_SELECT_OPTIONS, plain_only=True)
    _check_initial_options(report, select, pointer)


def _check_options(
    report: _Report, options: object, pointer: str, max_items: int, *, plain_only: bool
) -> None:
    for index, option in enumerate(_item_list(report, options, pointer, max_items) or []):
        option_pointer = f"{pointer}/{index}"
        if not isinstance(option, dict):
            report.add(option_pointer, "must be an option object")
            continue
        _check_text_object(
            report,
            option.get("text"),
            f"{option_pointer}/text",
            max_length=MAX_OPTION_TEXT,
            plain_only=plain_only,
        )
        value = option.get("value")
        if not _is_text(value):
            report.add(f"{option_pointer}/value", "must be a non-empty string")
        elif len(value) > MAX_OPTION_VALUE:
            report.add(f"{option_pointer}/value", f"must be less than {MAX_OPTION_VALUE + 1} characters")
        if "description" in option:
            _check_text_object(
                report,
                option["description"],
                f"{option_pointer}/description",
                max_length=MAX_OPTION_DESCRIPTION,
                plain_only=plain_only,
            )


def _check_initial_options(report: _Report, element: dict[str, Any], pointer: str) -> None:
    """Slack refuses an initial option that is not one of the element's options."""
    values = {option.get("value") for option in all_options(element) if isinstance(option, dict)}
    initial: list[object] = []
    if isinstance(element.get("initial_option"), dict):
        initial.append(element["initial_option"])
    if isinstance(element.get("initial_options"), list):
        initial.extend(element["initial_options"])
    for option in initial:
        if not isinstance(option, dict) or option.get("value") not in values:
            report.add(f"{pointer}/initial_option", "must match one of the provided options")


def all_options(element: dict[str, Any]) -> list[Any]:
    """The options of a select, radio or checkbox element, flattened out of option groups."""
    options = list(element.get("options") or [])
    for group in element.get("option_groups") or []:
        if isinstance(group, dict):
            options.extend(group.get("options") or [])
    return options


def _check_text_object(
    report: _Report, text: object, pointer: str, *, max_length: int | None, plain_only: bool = False
) -> None:
    if not isinstance(text, dict):
        report.add(pointer, "must be a text object")
        return
    allowed = ("plain_text",) if plain_only else ("plain_text", "mrkdwn")
    if text.get("type") not in allowed:
        report.add(f"{pointer}/type", f"must be one of {list(allowed)}")
    body = text.get("text")
    if not _is_text(body):
        report.add(f"{pointer}/text", "must be more than 0 characters")
    elif max_length is not None and len(body) > max_length:
        report.add(f"{pointer}/text", f"must be less than {max_length + 1} characters")


def _check_optional_string(
    report: _Report, owner: dict[str, Any], key: str, pointer: str, max_length: int
) -> None:
    if key not in owner:
        return
    value = owner[key]
    if not isinstance(value, str):
        report.add(f"{pointer}/{key}", "must be a string")
    elif len(value) > max_length:
        report.add(f"{pointer}/{key}", f"must be less than {max_length + 1} characters")


def _check_task_update(report: _Report, chunk: dict[str, Any], pointer: str) -> None:
    for key in ("id", "title"):
        if not _is_text(chunk.get(key)):
            report.add(f"{pointer}/{key}", "must be a non-empty string")
    if chunk.get("status") not in TASK_STATUSES:
        report.add(f"{pointer}/status", f"must be one of {sorted(TASK_STATUSES)}")
    for key in ("details", "output"):
        if key in chunk and not isinstance(chunk[key], str):
            report.add(f"{pointer}/{key}", "must be a string")
    if "sources" in chunk and not isinstance(chunk["sources"], list):
        report.add(f"{pointer}/sources", "must be an array")


def _is_text(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and value != ""
