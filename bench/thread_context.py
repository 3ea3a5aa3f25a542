"""What rendering the thread so far costs a turn (sessions/thread_context.py): the redaction of each
kept message, then the bounds and the quoting. Reported in docs/performance.md, section f.

Two threads: 50 replies of about 40 words under an alert (the default bounds fill), and 50 replies of
about 2,000 words each (each is redacted whole, then cut to half the characters).

Run: PYTHONPATH=. DEBUG=true DJANGO_SETTINGS_MODULE=kourier.settings .venv/bin/python bench/thread_context.py [--rounds N]
"""

from __future__ import annotations

import argparse
import random
import time

import django

WORDS = [
    "the",
    "api",
    "latency",
    "is",
    "above",
    "2s",
    "since",
    "deploy",
    "a1b2c3d4",
    "pod-7f9c",
    "error",
    "db-1",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=20)
    rounds = parser.parse_args().rounds
    django.setup()
    from kourier.slack.thread_history import EarlierMessage, ThreadSoFar
    from sessions.thread_context import Bounds, thread_block

    chooser = random.Random(30)

    def text(words: int) -> str:
        return " ".join(chooser.choice(WORDS) for _ in range(words))

    root = EarlierMessage(
        ts="1764800000.000000", text=text(400), user_id=None, app_id="B1", app_name="Alertmanager"
    )
    for name, words in (("50 replies of 40 words", 40), ("50 replies of 2,000 words", 2000)):
        replies = tuple(
            EarlierMessage(ts=f"{1764800001 + n}.000100", text=text(words), user_id="U0GRACE")
            for n in range(50)
        )
        thread = ThreadSoFar(root=root, replies=replies, replies_not_kept=0)
        started = time.perf_counter()
        for _ in range(rounds):
            block = thread_block(thread, {"U0GRACE": "Grace Hopper"}, Bounds(50, 12_000))
        took = (time.perf_counter() - started) / rounds * 1000
        print(f"{name}: {took:.1f} ms per turn, {len(block)} characters sent")


if __name__ == "__main__":
    main()
