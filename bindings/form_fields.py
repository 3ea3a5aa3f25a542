"""The admin's text fields that read as manifest lists (headers, triggers, tool rules), one entry per
line, handed to the manifest's validator as written so that it refuses bad entries in its own words."""

from __future__ import annotations

import re
from typing import Any

from django import forms

from bindings import manifest
from bindings.manifest import secret_refs


def split_list(text: str) -> list[str]:
    """``"C1, C2"`` → ``["C1", "C2"]``. Entries are kept even when empty, so the validator can refuse them."""
    text = text.strip()
    return [entry.strip() for entry in re.split(r"[,\n]", text)] if text else []


class HeadersField(forms.CharField):
    """One header per line, ``Header-Name: ENV_VAR_NAME``, as a dict."""

    widget = forms.Textarea(attrs={"rows": 3})

    def to_python(self, value: Any) -> dict[str, str]:  # type: ignore[override]
        headers: dict[str, str] = {}
        for number, line in enumerate(str(value or "").splitlines(), start=1):
            if not line.strip():
                continue
            header, colon, variable = line.partition(":")
            if not colon:
                raise forms.ValidationError(f"line {number}: write each header as Header-Name: ENV_VAR_NAME")
            if header.strip() in headers:
                raise forms.ValidationError(f"line {number}: the header {header.strip()} is listed twice")
            headers[header.strip()] = variable.strip()
        return headers


class TriggersField(forms.CharField):
    """One trigger per line, ``NAME KIND TOKEN_ENV [CHANNEL] [threadPer=…] [maxThreadsPerHour=…]``, as
    the manifest's list."""

    widget = forms.Textarea(attrs={"rows": 3})
    OPTIONS = ("threadPer", "maxThreadsPerHour")

    def to_python(self, value: Any) -> list[dict[str, Any]]:  # type: ignore[override]
        triggers: list[dict[str, Any]] = []
        for number, line in enumerate(str(value or "").splitlines(), start=1):
            words = [word for word in line.split() if "=" not in word]
            options = [word.partition("=") for word in line.split() if "=" in word]
            if not words and not options:
                continue
            if len(words) not in (3, 4):
                raise forms.ValidationError(
                    f"line {number}: write each trigger as NAME KIND TOKEN_ENV_VAR, and a channel ID when "
                    "the Binding has more than one channel"
                )
            token = secret_refs.as_manifest(words[2])
            trigger: dict[str, Any] = {"name": words[0], "kind": words[1], "token": token}
            if len(words) == 4:
                trigger["channel"] = words[3]
            for option, _, option_value in options:
                if option not in self.OPTIONS:
                    raise forms.ValidationError(
                        f"line {number}: {option} is not a trigger's option ({', '.join(self.OPTIONS)})"
                    )
                trigger[option] = int(option_value) if option_value.isdigit() else option_value
            triggers.append(trigger)
        return triggers


class ToolRulesField(forms.CharField):
    """One rule per line, ``MATCH [approverGroups=S1,S2] [separateApprover=true] [unattended=deny]``, as
    the manifest's list. Anything else is handed on as written, for the manifest to refuse in its words
    (a line without a match, an unknown key)."""

    widget = forms.Textarea(attrs={"rows": 3})

    def to_python(self, value: Any) -> list[dict[str, Any]]:  # type: ignore[override]
        rules: list[dict[str, Any]] = []
        for number, line in enumerate(str(value or "").splitlines(), start=1):
            words = [word for word in line.split() if "=" not in word]
            options = [word.partition("=") for word in line.split() if "=" in word]
            if not words and not options:
                continue
            if len(words) > 1:
                raise forms.ValidationError(
                    f"line {number}: write each rule as MATCH [approverGroups=S1,S2] [separateApprover=true] "
                    "[unattended=deny], one tool name or glob per line"
                )
            rule: dict[str, Any] = {"match": words[0]} if words else {}
            for option, _, option_value in options:
                rule[option] = _rule_option(option, option_value)
            rules.append(rule)
        return rules


def _rule_option(option: str, value: str) -> Any:
    if option == "approverGroups":
        return split_list(value)
    if option == "separateApprover" and value in ("true", "false"):
        return value == "true"
    return value


def tool_rules_text(rules: tuple[manifest.ToolRule, ...]) -> str:
    """Tool rules as the admin's field shows them, one per line."""
    lines = []
    for rule in rules:
        words = [rule.match]
        if rule.approver_groups is not None:
            words.append(f"approverGroups={','.join(rule.approver_groups)}")
        if rule.separate_approver is not None:
            words.append(f"separateApprover={'true' if rule.separate_approver else 'false'}")
        if rule.unattended is not manifest.DEFAULT_UNATTENDED:
            words.append(f"unattended={rule.unattended.value}")
        lines.append(" ".join(words))
    return "\n".join(lines)
