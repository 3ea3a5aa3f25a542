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
import sysconfig
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

    def __init__(
        self, workdir: Path, name: str, pids: Sequence[int], processes: str = "web process(es)"
    ) -> None:
        self.py_spy = shutil.which("py-spy") or str(Path(support.PYTHON).parent / "py-spy")
        if not Path(self.py_spy).exists():
            raise SystemExit("--profile needs py-spy: .venv/bin/pip install py-spy")
        self.workdir = workdir
        self.name = name
        self.pids = list(pids)
        self.processes = processes
        self.outputs: list[Path] = []
        self._running: list[subprocess.Popen] = []

    def start(self) -> None:
        for pid in self.pids:
            output = self.workdir / f"py-spy-{self.name.replace(' ', '-')}-{pid}-{len(self.outputs)}.txt"
            self.outputs.append(output)
            # --full-filenames: the paths read_stacks shortens itself (py-spy's own shortening loses
            # a namespace package's name: opentelemetry/trace/ becomes trace/).
            # --gil: the samples of the thread holding the GIL, so Python's CPU (not runnable threads
            # waiting for a core on a busy host); --nonblocking: the process is never paused.
            command = [self.py_spy, "record", "--pid", str(pid), "--rate", str(SAMPLES_PER_SECOND),
                       "--format", "raw", "--output", str(output), "--nonblocking", "--gil", "--full-filenames"]  # fmt: skip
            self._running.append(
                subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            )

    def pause(self) -> None:
        for process in self._running:
            process.send_signal(signal.SIGINT)  # py-spy writes its file and exits
        for process in self._running:
            process.wait(timeout=60)
        self._running = []

    def stacks(self) -> collections.Counter[tuple[str, ...]]:
        return read_stacks(path for path in self.outputs if path.exists())

    def report(self) -> str:
        return summary(self.stacks(), self.name, self.processes)


def read_stacks(paths: Iterable[Path]) -> collections.Counter[tuple[str, ...]]:
    """Collapsed stacks (root first) and how many samples each took."""
    stacks: collections.Counter[tuple[str, ...]] = collections.Counter()
    for path in paths:
        for line in path.read_text(errors="replace").splitlines():
            stack, _, count = line.rpartition(" ")
            if stack and count.isdigit():
                stacks[tuple(shorten(frame) for frame in stack.split(";"))] += int(count)
    return stacks


STANDARD_LIBRARY = sysconfig.get_paths()["stdlib"] + "/"
HERE = str(Path(__file__).resolve().parents[1]) + "/"


def shorten(frame: str) -> str:
    """A frame with its file named from its package: "kourier/tracing.py", "opentelemetry/trace/…",
    and the standard library's under "python/" ("python/asyncio/events.py")."""
    match = FRAME.match(frame)
    if match is None or not match["path"].startswith("/"):
        return frame
    path = match["path"]
    if "/site-packages/" in path:
        path = path.split("/site-packages/", 1)[1]
    elif path.startswith(STANDARD_LIBRARY):
        path = "python/" + path.removeprefix(STANDARD_LIBRARY)
    elif path.startswith(HERE):
        path = path.removeprefix(HERE)
    return frame.replace(match["path"], path)


def package(frame: str) -> str:
    """The top-level package of a frame's file ("django", "psycopg", "kourier"), or "python" for the
    standard library's (asyncio, json, threading …; see shorten)."""
    match = FRAME.match(frame)
    if match is None:
        return "?"
    path = match["path"]
    return path.split("/", 1)[0] if "/" in path else "python"


def function(frame: str) -> str:
    match = FRAME.match(frame)
    return f"{match['function']} ({match['path']})" if match else frame


def summary(
    stacks: collections.Counter[tuple[str, ...]], name: str = "the target", processes: str = "web process(es)"
) -> str:
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
    lines = [f"Profile of {name}'s {processes}: {total} samples ({seconds:.1f} CPU s), py-spy.", ""]
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


# What a sample's work is done for: the innermost frame that is not the standard library's or a
# runtime's that libraries call (protobuf's encoding); the work a library asks of these is its own.
ON_BEHALF_OF_THE_CALLER = ("python", "google")
TRACING_CODE = ("opentelemetry/", "kourier/tracing.py")
TRACING_THREAD = "opentelemetry/sdk/_shared_internal"  # the batch processor's thread: all of it is tracing's


def owner(stack: Sequence[str]) -> str:
    """The path of the code a sample's work is done for (see ON_BEHALF_OF_THE_CALLER)."""
    for frame in reversed(stack):
        match = FRAME.match(frame)
        if match is not None and package(frame) not in ON_BEHALF_OF_THE_CALLER:
            return match["path"]
    return "python"


def tracing_share(stacks: collections.Counter[tuple[str, ...]]) -> float:
    """The share of the samples that are tracing's own work: OpenTelemetry's code (the SDK, the
    exporter, the instrumentations' wrappers, but not the call a wrapper wraps) and kourier/tracing.py,
    the standard library's work they ask for included, and all of the batch processor's thread."""
    total = sum(stacks.values())
    tracing = sum(
        count
        for stack, count in stacks.items()
        if any(TRACING_THREAD in frame for frame in stack) or owner(stack).startswith(TRACING_CODE)
    )
    return tracing / total if total else 0.0


def main() -> None:
    """Summarizes py-spy raw files given on the command line: python -m bench.profiling FILE..."""
    import sys

    print(summary(read_stacks(Path(path) for path in sys.argv[1:])))


if __name__ == "__main__":
    main()
