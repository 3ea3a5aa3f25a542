"""The Python calls a benchmarked worker makes, counted one by one: exactly what tracing's code adds to a
turn, where sampling (bench/profiling.py) only estimates it and CPU seconds move with the host.

A worker started through this module (``python bench/call_counting.py -A kourier worker ...``, which
bench/turns.py --count-calls does) has a profile hook on every thread before Celery starts. The hook
counts nothing until the benchmark sends START_SIGNAL (after the warm-up turn), counts every call
(Python functions and built-ins alike) until STOP_SIGNAL (after the burst), then writes the counts to
``$CALL_COUNTS_FILE.<pid>``. Counting slows the worker about tenfold: the CPU figures of such a run
are not the product's, but the calls are the same work. So that the batch processor sends batches as
full as at full speed (a batch's post costs thousands of calls, however few spans it holds),
bench/turns.py holds spans until a batch is full (BATCH_SCHEDULE_MS), and the stop sends what is
left before the counts are written.

A call is tracing's own when OpenTelemetry's code or kourier/tracing.py makes it or is called (an
instrumentation's wrapper, but not the client call it wraps), or when it is part of an export (the
batch processor's thread, or the stop's flush: encoding and sending the spans, all of it tracing's). Each such call
is counted under the outermost tracing function on its stack: where tracing's work started (a span's
helper, an instrumentation's wrapper, the batch processor). Calls that the library functions tracing
calls make in turn (httpx's header handling for the httpx wrapper, contextlib's for a span) are
counted with the rest: the difference between a traced and an untraced run's totals is tracing's
whole cost in calls (docs/performance.md, section g).
"""

from __future__ import annotations

import collections
import marshal
import os
import signal
import sys
import threading
from pathlib import Path
from types import FrameType

START_SIGNAL = signal.SIGRTMIN + 2
STOP_SIGNAL = signal.SIGRTMIN + 3
COUNTS_FILE_VARIABLE = "CALL_COUNTS_FILE"
OTHER = ""  # the key of every call that is not tracing's own
TRACING_CODE = ("/opentelemetry/", "kourier/tracing.py")
# Where every call is tracing's, however deep: the batch processor's thread, and the stop's flush (the
# same export, made in the worker's main thread).
EXPORTING = (("opentelemetry/sdk/_shared_internal/", ""), ("kourier/tracing.py", "flush"))
# A slowed worker would send a batch every 5 s (the SDK's default), each far smaller than at full speed.
BATCH_SCHEDULE_MS = "600000"
DEEPEST_WALK = 80  # frames looked at for the outermost tracing function (the export's are ~40 deep)


def is_tracing_code(filename: str) -> bool:
    return any(part in filename for part in TRACING_CODE)


def is_exporting(frame: FrameType) -> bool:
    code = frame.f_code
    return any(path in code.co_filename and function in ("", code.co_name) for path, function in EXPORTING)


def short_name(filename: str, function: str) -> str:
    return f"{filename.rsplit('site-packages/', 1)[-1].removeprefix(str(Path.cwd()) + '/')}:{function}"


class CallCounter:
    def __init__(self) -> None:
        self.counts: collections.Counter[str] = collections.Counter()
        self.counting = False

    def hook(self, frame: FrameType, event: str, arg: object) -> None:
        if not self.counting or event not in ("call", "c_call"):
            return
        # A Python call's frame is the callee's (its caller one up); a built-in's is its caller's.
        caller = frame.f_back if event == "call" else None
        own = is_tracing_code(frame.f_code.co_filename) or (
            caller is not None and is_tracing_code(caller.f_code.co_filename)
        )
        outermost = None
        walked: FrameType | None = frame
        for _ in range(DEEPEST_WALK):
            if walked is None:
                break
            if is_tracing_code(walked.f_code.co_filename):
                outermost = walked
            walked = walked.f_back
        if outermost is not None and (own or is_exporting(outermost)):
            self.counts[short_name(outermost.f_code.co_filename, outermost.f_code.co_name)] += 1
        else:
            self.counts[OTHER] += 1

    def install(self, counts_file: str) -> None:
        def start(signum: int, frame: FrameType | None) -> None:
            self.counting = True

        def stop(signum: int, frame: FrameType | None) -> None:
            from kourier import tracing

            tracing.flush()  # the burst's spans encoded and sent, counted with it
            self.counting = False
            Path(f"{counts_file}.{os.getpid()}").write_bytes(marshal.dumps(dict(self.counts)))

        signal.signal(START_SIGNAL, start)
        signal.signal(STOP_SIGNAL, stop)
        threading.setprofile(self.hook)
        sys.setprofile(self.hook)


def read_counts(counts_file: Path) -> collections.Counter[str]:
    """The counts every counted process wrote (``counts_file.<pid>``), added up."""
    total: collections.Counter[str] = collections.Counter()
    for written in counts_file.parent.glob(counts_file.name + ".*"):
        total.update(marshal.loads(written.read_bytes()))
    return total


def report(counts: collections.Counter[str], turns: int, top: int = 12) -> str:
    turns = max(turns, 1)
    tracing = {name: count for name, count in counts.items() if name != OTHER}
    total = sum(counts.values())
    own = sum(tracing.values())
    lines = [
        f"Python calls per turn in the worker (--count-calls): {total / turns:,.0f}; tracing's own "
        f"(OpenTelemetry's code and kourier/tracing.py, what they call themselves, the batch processor's "
        f"thread): {own / turns:,.0f} ({100 * own / max(total, 1):.1f} %).",
    ]
    if tracing:
        lines += ["", "| where tracing's work starts | calls per turn |", "| --- | --- |"]
        ranked = sorted(tracing.items(), key=lambda item: -item[1])
        lines += [f"| {name} | {count / turns:,.1f} |" for name, count in ranked[:top]]
    return "\n".join(lines)


def main() -> None:
    """Runs Celery (the arguments as ``celery`` takes them) with the counter installed."""
    # The repository first, as ``python -m celery`` has it: bench/'s modules must not shadow the product's.
    sys.path[0] = str(Path(__file__).resolve().parents[1])
    CallCounter().install(os.environ[COUNTS_FILE_VARIABLE])
    from celery.__main__ import main as celery

    sys.argv = ["celery", *sys.argv[1:]]
    celery()


if __name__ == "__main__":
    main()
