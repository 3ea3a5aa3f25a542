"""Shared fixtures. Each fake and support piece lives in its own module and is loaded as a plugin."""

pytest_plugins = [
    "tests.support.private_redis",
    "tests.support.stack",
    "tests.fakes.slack.fixtures",
    "tests.fakes.a2a_agent.fixtures",
]
