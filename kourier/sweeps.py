"""The registry of sweeps: periodic jobs that find work left behind and do it.

A sweep is a plain function that takes nothing and returns ``Swept``, what it did. Each app declares
its sweeps in its ``sweeps`` module with ``@sweep("name")``, run every ``RECOVERY_INTERVAL_SECONDS``
unless it says ``every=`` seconds of its own. That registration is the only place a sweep is named:

- it makes the sweep's Celery task (``sweeps.<name>``, returning the counts), so no app writes a
  wrapper of its own;
- beat's schedule is made from the registrations (``beat_schedule``; kourier/celery.py sets it once
  the apps' modules are imported, before beat reads it);
- ``manage.py sweep`` lists them, and ``manage.py sweep NAME`` runs one by hand and prints what it did.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from celery import shared_task
from django.conf import settings
from django.utils.module_loading import autodiscover_modules

# Every sweep's Celery task is named this and the sweep's name: the logs' filter of idle sweeps
# (kourier/logging.py) knows a sweep's lines by it.
TASK_PREFIX = "sweeps."


@dataclass(frozen=True)
class Swept:
    """What one run of a sweep did: how many of each thing, e.g. ``{"sessions driven": 2}``."""

    counts: dict[str, int] = field(default_factory=dict)

    def __str__(self) -> str:
        done = [f"{count} {what}" for what, count in self.counts.items() if count]
        return ", ".join(done) or "nothing to do"


SweepFunction = Callable[[], Swept]


@dataclass(frozen=True)
class Sweep:
    """One registered sweep: its name, what it runs, and how often beat runs it."""

    name: str
    run: SweepFunction
    every: float | None = None  # seconds between runs; None: RECOVERY_INTERVAL_SECONDS

    @property
    def task_name(self) -> str:
        return TASK_PREFIX + self.name

    def interval(self) -> float:
        return self.every if self.every is not None else float(settings.RECOVERY_INTERVAL_SECONDS)

    def description(self) -> str:
        """What the sweep does, in one line: the first paragraph of its docstring, else of its
        module's (an app with a single sweep may say it there)."""
        module = sys.modules.get(self.run.__module__)
        for doc in (self.run.__doc__, module.__doc__ if module else None):
            if doc and doc.strip():
                return " ".join(doc.strip().split("\n\n")[0].split())
        return ""


_sweeps: dict[str, Sweep] = {}


def sweep(name: str, *, every: float | None = None) -> Callable[[SweepFunction], SweepFunction]:
    """Registers the decorated function as the sweep ``name`` and makes its Celery task."""

    def register(fn: SweepFunction) -> SweepFunction:
        known = _sweeps.get(name)
        if known is not None and known.run is not fn:
            raise ValueError(f"two sweeps are named {name!r}")
        registered = Sweep(name, fn, every)
        _sweeps[name] = registered
        _make_task(registered)
        return fn

    return register


def _make_task(registered: Sweep) -> None:
    def run_sweep() -> dict[str, int]:
        return registered.run().counts

    run_sweep.__doc__ = f"Runs the sweep {registered.name} (kourier/sweeps.py); returns its counts."
    shared_task(name=registered.task_name)(run_sweep)


def all_sweeps() -> dict[str, Sweep]:
    """Every installed app's sweeps, by name."""
    autodiscover_modules("sweeps")
    return dict(sorted(_sweeps.items()))


def is_sweep_task(task_name: object) -> bool:
    return isinstance(task_name, str) and task_name.startswith(TASK_PREFIX)


def beat_schedule() -> dict[str, dict[str, Any]]:
    """Beat's schedule: each sweep's task, at its interval, under the sweep's name."""
    return {
        name: {"task": registered.task_name, "schedule": registered.interval()}
        for name, registered in all_sweeps().items()
    }
