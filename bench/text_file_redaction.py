"""What redacting a shared text file costs (issue 30, point 6): CPU seconds per MB of log lines.

    .venv/bin/python bench/text_file_redaction.py              # 2 MB of service log lines
    .venv/bin/python bench/text_file_redaction.py --megabytes 5

A text file a person shares is redacted as message text is before it goes to the agent
(``sessions/file_rules.redacted``, which calls ``kourier.redaction.redact_text``). The log is made
here, the same every run (a fixed seed): access-log lines with request ids, trace ids and timings,
and every 500th line an error line holding a password and a GitHub token, which must come out
redacted. Reported: the process CPU time per MB, best of three, and how many secrets were replaced.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kourier.settings")
os.environ.setdefault("DEBUG", "true")

from sessions.file_rules import redacted

LINE_BYTES = 165  # about: an access-log line as made below


def service_log(megabytes: float) -> bytes:
    made = random.Random(7)
    lines = []
    for number in range(int(megabytes * 1_000_000 / LINE_BYTES)):
        lines.append(
            f"2026-12-05T07:{number % 60:02d}:{number % 60:02d}.{number:06d}Z INFO payments-7 "
            f"worker[{number % 13}] request_id=req-{made.getrandbits(40):x} GET /api/v1/orders/{number} "
            f"200 {made.random() * 100:.1f}ms user=u{number % 100} trace={made.getrandbits(128):032x}\n"
        )
        if number % 500 == 0:
            token = "ghp_" + "".join(
                made.choice("abcdefghijklmnopqrstuvwxyzABCDEF0123456789") for _ in range(36)
            )
            lines.append(f"2026-12-05 ERROR db password=hunter2hunter2 token {token}\n")
    return "".join(lines).encode()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--megabytes", type=float, default=2.0)
    args = parser.parse_args()
    log = service_log(args.megabytes)
    timings = []
    for _ in range(3):
        began = time.process_time()
        out = redacted(log, "text/plain")
        timings.append(time.process_time() - began)
    megabytes = len(log) / 1_000_000
    print(f"{megabytes:.2f} MB of log lines, {log.count(b'ERROR')} error lines with a password and a token")
    print(f"CPU per MB (best of 3): {min(timings) / megabytes:.2f} s")
    print(f"replaced: {out.count(b'[redacted]')}; left: {out.count(b'hunter2') + out.count(b'ghp_')}")


if __name__ == "__main__":
    main()
