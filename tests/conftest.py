"""Shared fixtures. Each fake lives in tests/fakes/ and exposes its own fixtures as a plugin."""

pytest_plugins = [
    "tests.fakes.slack.fixtures",
    "tests.fakes.a2a_agent.fixtures",
]
