"""Reading ``spec.directMessages``: who may talk to the agent in private, the prompts Slack offers,
and where a direct message's approvals are also put."""

from __future__ import annotations

from typing import Any

from .checker import MISSING, Checker, show, value_at
from .limits import (
    MAX_ALLOWED_GROUPS,
    MAX_ALLOWED_USERS,
    MAX_SUGGESTED_PROMPTS,
    PUBLIC_OR_PRIVATE_CHANNEL_ID_RE,
    SUGGESTED_PROMPT_MAX_LENGTH,
    USER_GROUP_ID_RE,
    USER_ID_RE,
)
from .specs import DirectMessagesSpec, SuggestedPrompt

DIRECT_MESSAGES_FIELDS = ("allowedUsers", "allowedGroups", "suggestedPrompts", "approvalsChannel")
SUGGESTED_PROMPT_FIELDS = ("title", "message")


def read_direct_messages(check: Checker, value: Any) -> DirectMessagesSpec | None:
    """``true``, or a mapping of the options (``false`` is the same as leaving the section out: refused,
    since a Binding without channels takes nothing)."""
    path = "spec.directMessages"
    if value is True:
        return DirectMessagesSpec()
    if not isinstance(value, dict):
        check.error(
            path, f"must be true or a mapping of {', '.join(DIRECT_MESSAGES_FIELDS)} (got {show(value)})"
        )
        return None
    section = check.mapping(value, path, DIRECT_MESSAGES_FIELDS)
    if section is None:
        return None
    ok = True
    users: list[tuple[int, str]] = []
    groups: list[tuple[int, str]] = []
    for key, pattern, what, example, most, into in (
        ("allowedUsers", USER_ID_RE, "user", "U0123456789", MAX_ALLOWED_USERS, users),
        ("allowedGroups", USER_GROUP_ID_RE, "user group", "S0123456789", MAX_ALLOWED_GROUPS, groups),
    ):
        listed = value_at(section, key)
        if listed is MISSING:
            continue
        if isinstance(listed, list) and len(listed) > most:
            check.error(f"{path}.{key}", f"at most {most} entries are allowed (got {len(listed)})")
            ok = False
        entries = check.id_list(listed, f"{path}.{key}", pattern, what, example)
        if entries is None:
            ok = False
        else:
            into.extend(entries)
    prompts = _read_suggested_prompts(check, value_at(section, "suggestedPrompts"))
    channel_value = value_at(section, "approvalsChannel")
    approvals_channel = None
    if channel_value is not MISSING:
        if isinstance(channel_value, str) and PUBLIC_OR_PRIVATE_CHANNEL_ID_RE.fullmatch(channel_value):
            approvals_channel = channel_value
        else:
            check.error(
                f"{path}.approvalsChannel",
                f"must be a Slack channel ID such as C0123456789 (got {show(channel_value)})",
            )
            ok = False
    if not ok or prompts is None:
        return None
    return DirectMessagesSpec(
        allowed_users=tuple(user for _, user in users),
        allowed_groups=tuple(group for _, group in groups),
        suggested_prompts=prompts,
        approvals_channel=approvals_channel,
    )


def _read_suggested_prompts(check: Checker, value: Any) -> tuple[SuggestedPrompt, ...] | None:
    path = "spec.directMessages.suggestedPrompts"
    if value is MISSING:
        return ()
    if not isinstance(value, list):
        check.error(path, f"must be a list (got {show(value)})")
        return None
    if len(value) > MAX_SUGGESTED_PROMPTS:
        check.error(path, f"at most {MAX_SUGGESTED_PROMPTS} prompts are allowed (got {len(value)})")
        return None
    prompts = []
    for i, entry in enumerate(value):
        entry_path = f"{path}[{i}]"
        section = check.mapping(entry, entry_path, SUGGESTED_PROMPT_FIELDS)
        if section is None:
            return None
        texts = {}
        for key in SUGGESTED_PROMPT_FIELDS:
            text = value_at(section, key)
            if not check.required(text, f"{entry_path}.{key}"):
                continue
            if not isinstance(text, str) or not text.strip():
                check.error(f"{entry_path}.{key}", f"must be a non-empty string (got {show(text)})")
            elif len(text) > SUGGESTED_PROMPT_MAX_LENGTH:
                check.error(
                    f"{entry_path}.{key}", f"must be at most {SUGGESTED_PROMPT_MAX_LENGTH} characters"
                )
            else:
                texts[key] = text.strip()
        if len(texts) != len(SUGGESTED_PROMPT_FIELDS):
            return None
        prompts.append(SuggestedPrompt(title=texts["title"], message=texts["message"]))
    return tuple(prompts)
