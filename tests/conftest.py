"""Shared fixtures. Each fake and support piece lives in its own module and is loaded as a plugin."""

import pytest

pytest_plugins = [
    "tests.support.private_redis",
    "tests.support.requires_postgres",
    "tests.support.stack",
    "tests.support.seeds_report",
    "tests.fakes.slack_fixtures",
    "tests.fakes.a2a_agent.fixtures",
    "tests.fakes.kagent_controller",
    "tests.support.kagent_runtime.fixtures",
    "tests.support.oidc_provider.fixtures",
    "tests.support.egress_proxy",
    "tests.support.xdist_groups",
]


@pytest.fixture(autouse=True)
def _forget_per_process_caches():
    """Each test starts with nothing remembered from rows an earlier test wrote and rolled back."""
    from bindings import directory
    from bindings.services import forget_noted_identities
    from kourier.a2a.factory import AGENT_CARDS
    from kourier.doors.slack_listeners import forget_apps
    from kourier.slack.budgets import forget_local_budgets
    from kourier.slack.clients import forget_identities
    from tests.support.budgets import forget_shared_budgets

    directory.forget()
    forget_noted_identities()
    forget_apps()
    AGENT_CARDS.clear()
    forget_local_budgets()
    forget_identities()
    forget_shared_budgets()
