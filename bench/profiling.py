"""Where a benchmarked process spends its CPU: py-spy samples it while the load runs, and the samples
are summed per thread, per package and per function.

py-spy (`pip install py-spy`) samples from outside the process without stopping it (--nonblocking),
so the process runs as it would unobserved. Only threads that are running are sampled (not idle
waits), so a sample share is a share of the process's CPU.
"""

from __future__ import annotations

import collections
import re
import shutil
import signal
import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path

from bench import support

SAMPLES_PER_SECOND = 200
TOP_FUNCTIONS = 30
FRAME = re.compile(r"^(?P<function>.*) \((?P<path>[^:()]*):\d+\)$")

# A thread is named by what runs at the bottom of its stack.
THREAD_ROLES = (
    ("database thread (an executor's)", "concurrent/futures/thread.py"),
    ("event loop (Twisted, Daphne, Bolt)", "twisted/"),
)


class Sampler:
    """py-spy on each of the given processes, started and paused around the phases to profile."""

    def __init__(self, workdir: Path, name: str, pids: Sequence[int]) -> None:
        self.py_spy = shutil.which("py-spy") or str(Path(support.PYTHON).parent / "py-spy")
        if not Path(self.py_spy).exists():
            raise SystemExit("--profile needs py-spy: .venv/bin/pip install py-spy")
        self.workdir = workdir
        self.name = name
        self.pids = list(pids)
        self.outputs: list[Path] = []
        self._running: list[subprocess.Popen] = []

    def start(self) -> None:
        for pid in self.pids:
            output = self.workdir / f"py-spy-{self.name.replace(' ', '-')}-{pid}-{len(self.outputs)}.txt"
            self.outputs.append(output)
            # --gil: the samples of the thread holding the GIL, so Python's CPU (not runnable threads
            # waiting for a core on a busy host); --nonblocking: the process is never paused.
            command = [self.py_spy, "record", "--pid", str(pid), "--rate", str(SAMPLES_PER_SECOND),
                       "--format", "raw", "--output", str(output), "--nonblocking", "--gil"]  # fmt: skip
            self._running.append(
                subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            )

    def pause(self) -> None:
        for process in self._running:
            process.send_signal(signal.SIGINT)  # py-spy writes its file and exits
        for process in self._running:
            process.wait(timeout=60)
        self._running = []

    def report(self) -> str:
        return summary(read_stacks(path for path in self.outputs if path.exists()), self.name)


def read_stacks(paths: Iterable[Path]) -> collections.Counter[tuple[str, ...]]:
    """Collapsed stacks (root first) and how many samples each took."""
    stacks: collections.Counter[tuple[str, ...]] = collections.Counter()
    for path in paths:
        for line in path.read_text(errors="replace").splitlines():
            stack, _, count = line.rpartition(" ")
            if stack and count.isdigit():
                stacks[tuple(stack.split(";"))] += int(count)
    return stacks


def package(frame: str) -> str:
    """The top-level package of a frame's file ("django", "psycopg", "kourier"), or "python" for the
    standard library's modules that sit at the top of its tree (asyncio, json, threading …)."""
    match = FRAME.match(frame)
    if match is None:
        return "?"
    path = match["path"]
    return path.split("/", 1)[0] if "/" in path else "python"


def function(frame: str) -> str:
    match = FRAME.match(frame)
    return f"{match['function']} ({match['path']})" if match else frame


def summary(stacks: collections.Counter[tuple[str, ...]], name: str = "the target") -> str:
    total = sum(stacks.values())
    if not total:
        return f"Profile of {name}: no samples."
    by_thread: collections.Counter[str] = collections.Counter()
    self_by_package: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    for stack, count in stacks.items():
        role = next(
            (name for name, marker in THREAD_ROLES if any(marker in frame for frame in stack)), "other"
        )
        by_thread[role] += count
        self_by_package[package(stack[-1])] += count
        for called in {function(frame) for frame in stack}:
            inclusive[called] += count

    def share(count: int) -> str:
        return f"{100 * count / total:.1f} %"

    seconds = total / SAMPLES_PER_SECOND
    lines = [f"Profile of {name}'s web process(es): {total} samples ({seconds:.1f} CPU s), py-spy.", ""]
    lines.append(
        support.markdown_table(
            ["thread", "share of CPU"], [[k, share(v)] for k, v in by_thread.most_common()]
        )
    )
    lines += ["", "Where the time is spent (the running function's package):", ""]
    lines.append(
        support.markdown_table(
            ["package", "share of CPU"], [[k, share(v)] for k, v in self_by_package.most_common()]
        )
    )
    lines += ["", f"The {TOP_FUNCTIONS} functions with the most CPU, callees included:", ""]
    lines.append(
        support.markdown_table(
            ["function", "share of CPU"], [[k, share(v)] for k, v in inclusive.most_common(TOP_FUNCTIONS)]
        )
    )
    return "\n".join(lines)


def main() -> None:
    """Summarizes py-spy raw files given on the command line: python -m bench.profiling FILE..."""
    import sys

    print(summary(read_stacks(Path(path) for path in sys.argv[1:])))


if __name__ == "__main__":
    main()
