"""A section of pytest's summary naming the seed of every seeded run, passed or failed, so that any run
can be replayed: a test records ``seed`` (and, when it has them, ``figures``) with ``record_property``,
and ``replay`` (the command that replays it). Recorded properties travel back from xdist workers."""

import json

import pytest

SEED = "seed"
FIGURES = "figures"
REPLAY = "replay"


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    runs = []
    for outcome, reports in terminalreporter.stats.items():
        for report in reports:
            properties = dict(getattr(report, "user_properties", None) or ())
            if SEED in properties and getattr(report, "when", None) == "call":
                runs.append((report.nodeid, outcome, properties))
    if not runs:
        return
    terminalreporter.section("seeds")
    for nodeid, outcome, properties in sorted(runs):
        terminalreporter.line(
            f"{nodeid} {outcome}: seed {properties[SEED]}; replay: {properties.get(REPLAY, '')}"
        )
        if FIGURES in properties:
            terminalreporter.line(f"    {json.dumps(properties[FIGURES])}")
