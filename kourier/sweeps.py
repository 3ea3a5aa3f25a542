"""The registry of sweeps: periodic jobs that find work left behind and do it.

A sweep is a plain function that takes nothing and returns ``Swept``, what it did. Each app declares
its sweeps in its ``sweeps`` module with ``@sweep("name")``; beat runs them through one-line Celery
tasks, and ``manage.py sweep NAME`` runs one by hand and prints what it did.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field

from django.utils.module_loading import autodiscover_modules


@dataclass(frozen=True)
class Swept:
    """What one run of a sweep did: how many of each thing, e.g. ``{"sessions driven": 2}``."""

    counts: dict[str, int] = field(default_factory=dict)

    def __str__(self) -> str:
        done = [f"{count} {what}" for what, count in self.counts.items() if count]
        return ", ".join(done) or "nothing to do"


Sweep = Callable[[], Swept]
_sweeps: dict[str, Sweep] = {}


def sweep(name: str) -> Callable[[Sweep], Sweep]:
    def register(fn: Sweep) -> Sweep:
        if _sweeps.get(name, fn) is not fn:
            raise ValueError(f"two sweeps are named {name!r}")
        _sweeps[name] = fn
        return fn

    return register


def description(fn: Sweep) -> str:
    """What a sweep does, in one line: the first paragraph of its docstring, else of its module's
    (an app with a single sweep may say it there)."""
    module = sys.modules.get(fn.__module__)
    for doc in (fn.__doc__, module.__doc__ if module else None):
        if doc and doc.strip():
            return " ".join(doc.strip().split("\n\n")[0].split())
    return ""


def all_sweeps() -> dict[str, Sweep]:
    """Every installed app's sweeps, by name."""
    autodiscover_modules("sweeps")
    return dict(sorted(_sweeps.items()))
