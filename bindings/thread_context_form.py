"""The admin's fields for ``spec.chat.threadContext`` (sessions/thread_context.py), kept beside the
Binding form (bindings/forms.py) so that it stays one readable module."""

from __future__ import annotations

from typing import Any

from django import forms

from bindings import manifest

THREAD_CONTEXT_FIELD_PATHS = {
    "spec.chat.threadContext.enabled": "thread_context_enabled",
    "spec.chat.threadContext.maxMessages": "thread_context_max_messages",
    "spec.chat.threadContext.maxCharacters": "thread_context_max_characters",
    "spec.chat.threadContext": "thread_context_enabled",
}
THREAD_CONTEXT_FIELDS = list(dict.fromkeys(THREAD_CONTEXT_FIELD_PATHS.values()))


class ThreadContextFields(forms.Form):
    """Mixed into the Binding form: the fields, declared once."""

    thread_context_enabled = forms.BooleanField(
        label="Thread so far",
        required=False,
        initial=manifest.DEFAULT_THREAD_CONTEXT_ENABLED,
        help_text="spec.chat.threadContext.enabled: a mention that starts a session in a thread Kourier "
        "did not start (under another app's alert, say) sends the agent the thread's earlier messages.",
    )
    thread_context_max_messages = forms.IntegerField(
        label="Thread so far: most messages",
        required=False,
        initial=manifest.DEFAULT_THREAD_CONTEXT_MAX_MESSAGES,
        help_text="spec.chat.threadContext.maxMessages: the thread's first message and the latest ones; "
        "the oldest replies are left out first.",
    )
    thread_context_max_characters = forms.IntegerField(
        label="Thread so far: most characters",
        required=False,
        initial=manifest.DEFAULT_THREAD_CONTEXT_MAX_CHARACTERS,
        help_text="spec.chat.threadContext.maxCharacters",
    )


def thread_context_section(cleaned_data: dict[str, Any]) -> dict[str, Any]:
    """The manifest's ``threadContext`` as the form gives it (an empty number: the default)."""
    return {
        "enabled": cleaned_data.get("thread_context_enabled", False),
        "maxMessages": cleaned_data.get("thread_context_max_messages"),
        "maxCharacters": cleaned_data.get("thread_context_max_characters"),
    }


def thread_context_values(spec: manifest.BindingSpec) -> dict[str, Any]:
    thread_context = spec.chat.thread_context
    return {
        "thread_context_enabled": thread_context.enabled,
        "thread_context_max_messages": thread_context.max_messages,
        "thread_context_max_characters": thread_context.max_characters,
    }
