"""The redaction corpus (tests/support/secret_corpus.py) against kourier/redaction.py: the hand-kept
patterns alone, and with detect-secrets' plugins after them (what ``redact`` does). Reported in
docs/redaction.md.

A format is caught when a tool argument holding its key, alone, in running text, in a list and deep in
an object, is redacted with no run of the secret left (``leaked``); plain values must pass unchanged.
The cost is that of ``redact`` on a 10-argument prompt.

Run: PYTHONPATH=. DEBUG=true DJANGO_SETTINGS_MODULE=kourier.settings .venv/bin/python bench/redaction_corpus.py
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any
from unittest import mock

from kourier import redaction
from tests.support.secret_corpus import CORPUS, PLAIN_VALUES, leaked


def shapes(value: str) -> list[Any]:
    return [value, f"echo 'using {value}' >> notes.txt", [value], {"a": [{"b": {"c": value}}]}]


def caught(redact: Callable[[Any], Any]) -> dict[str, bool]:
    return {
        name: all(not leaked(json.dumps(redact(shape), ensure_ascii=False)) for shape in shapes(value))
        for name, value in CORPUS.items()
    }


def changed_plain_values(redact: Callable[[Any], Any]) -> list[str]:
    return [value for value in PLAIN_VALUES if redact(value) != value]


def ms_per_prompt(redact: Callable[[Any], Any], runs: int = 50) -> float:
    values = list(CORPUS.values())
    prompts = [
        {f"arg{n}": values[(start + n) % len(values)] for n in range(10)} for start in range(len(values))
    ]
    started = time.perf_counter()
    for _ in range(runs):
        for prompt in prompts:
            redact(prompt)
    return (time.perf_counter() - started) / (runs * len(prompts)) * 1000


def main() -> None:
    with mock.patch.object(redaction, "_redact_plugin_findings", lambda text: text):
        hand = caught(redaction.redact)
        hand_changed = changed_plain_values(redaction.redact)
        hand_ms = ms_per_prompt(redaction.redact)
    both = caught(redaction.redact)
    both_changed = changed_plain_values(redaction.redact)
    both_ms = ms_per_prompt(redaction.redact)
    for name in CORPUS:
        print(
            f"{name:24} hand-kept={'yes' if hand[name] else 'no ':3} with detect-secrets={'yes' if both[name] else 'no'}"
        )
    print(
        f"caught: hand-kept {sum(hand.values())}/{len(CORPUS)}, with detect-secrets {sum(both.values())}/{len(CORPUS)}"
    )
    print(f"plain values changed: hand-kept {hand_changed}, with detect-secrets {both_changed}")
    print(
        f"redact() of a 10-argument prompt: hand-kept {hand_ms:.2f} ms, with detect-secrets {both_ms:.2f} ms"
    )


if __name__ == "__main__":
    main()
