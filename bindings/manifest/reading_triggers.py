"""Reading ``spec.triggers``: the doors that start alert threads, each named once, of a known kind,
with its token's variable, in one of the Binding's channels."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .checker import MISSING, Checker, show, value_at
from .limits import MAX_THREADS_PER_HOUR_LIMIT, MAX_TRIGGERS, NAME_MAX_LENGTH, NAME_RE
from .specs import DEFAULT_MAX_THREADS_PER_HOUR, DEFAULT_THREAD_PER, ThreadPer, TriggerKind, TriggerSpec

TRIGGER_FIELDS = ("name", "kind", "token", "channel", "threadPer", "maxThreadsPerHour")


def read_triggers(
    check: Checker, value: Any, channels: Sequence[tuple[int, str]]
) -> tuple[TriggerSpec, ...] | None:
    """The Binding's triggers: each named once, of a known kind, with its token's variable, and in one
    of the Binding's channels (required when it has more than one)."""
    if value is MISSING:
        return ()
    path = "spec.triggers"
    if not isinstance(value, list):
        check.error(path, f"must be a list (got {show(value)})")
        return None
    if len(value) > MAX_TRIGGERS:
        check.error(path, f"at most {MAX_TRIGGERS} entries are allowed (got {len(value)})")
        return None
    bound = [channel for _, channel in channels]
    triggers: list[TriggerSpec] = []
    seen: set[str] = set()
    ok = True
    for i, entry in enumerate(value):
        entry_path = f"{path}[{i}]"
        section = check.mapping(entry, entry_path, TRIGGER_FIELDS)
        if section is None:
            ok = False
            continue
        before = len(check.errors)
        name_value = value_at(section, "name")
        name = None
        if check.required(name_value, f"{entry_path}.name"):
            if (
                isinstance(name_value, str)
                and NAME_RE.fullmatch(name_value)
                and len(name_value) <= NAME_MAX_LENGTH
            ):
                name = name_value
                if name in seen:
                    check.error(f"{entry_path}.name", f"duplicate trigger {show(name)}")
                seen.add(name)
            else:
                check.error(
                    f"{entry_path}.name",
                    "must be a name of letters, digits, hyphens and underscores, "
                    f"at most {NAME_MAX_LENGTH} characters (got {show(name_value)})",
                )
        kind_value = value_at(section, "kind")
        kind = None
        if check.required(kind_value, f"{entry_path}.kind"):
            allowed = ", ".join(k.value for k in TriggerKind)
            if isinstance(kind_value, str) and kind_value in set(TriggerKind):
                kind = TriggerKind(kind_value)
            else:
                check.error(f"{entry_path}.kind", f"must be one of {allowed} (got {show(kind_value)})")
        token_value = value_at(section, "token")
        token_env = (
            check.env_reference(token_value, f"{entry_path}.token")
            if check.required(token_value, f"{entry_path}.token")
            else None
        )
        channel_value = value_at(section, "channel")
        channel = None
        if channel_value is not MISSING:
            channel = check.string(channel_value, f"{entry_path}.channel")
            if channel is not None and bound and channel not in bound:
                check.error(
                    f"{entry_path}.channel",
                    f"must be one of the Binding's channels ({', '.join(bound)}) (got {show(channel)})",
                )
        elif len(bound) > 1:
            check.error(f"{entry_path}.channel", "is required when the Binding has more than one channel")
        thread_per = _read_thread_per(check, value_at(section, "threadPer"), f"{entry_path}.threadPer", kind)
        cap_value = value_at(section, "maxThreadsPerHour")
        cap = DEFAULT_MAX_THREADS_PER_HOUR
        if cap_value is not MISSING:
            if (
                isinstance(cap_value, int)
                and not isinstance(cap_value, bool)
                and 1 <= cap_value <= MAX_THREADS_PER_HOUR_LIMIT
            ):
                cap = cap_value
            else:
                check.error(
                    f"{entry_path}.maxThreadsPerHour",
                    f"must be a whole number from 1 to {MAX_THREADS_PER_HOUR_LIMIT} (got {show(cap_value)})",
                )
        if len(check.errors) > before or name is None or kind is None or token_env is None:
            ok = False
            continue
        triggers.append(
            TriggerSpec(
                name=name,
                kind=kind,
                token_env=token_env,
                channel=channel,
                thread_per=thread_per,
                max_threads_per_hour=cap,
            )
        )
    return tuple(triggers) if ok else None


def _read_thread_per(check: Checker, value: Any, path: str, kind: TriggerKind | None) -> ThreadPer:
    """An alertmanager trigger's threads: per group (default) or per alert; a generic trigger sends
    one alert at a time and has no group, so its threads are per alert and it takes no threadPer."""
    if kind is TriggerKind.GENERIC:
        if value is not MISSING:
            check.error(
                path, "only an alertmanager trigger groups alerts; a generic one has a thread per alert"
            )
        return DEFAULT_THREAD_PER  # not read: a generic delivery is one alert, with no group
    if value is MISSING:
        return DEFAULT_THREAD_PER
    if isinstance(value, str) and value in set(ThreadPer):
        return ThreadPer(value)
    check.error(path, f"must be one of {', '.join(t.value for t in ThreadPer)} (got {show(value)})")
    return DEFAULT_THREAD_PER
