"""Slack's call budgets the in-process tests share through the test Redis, forgotten between tests."""

from kourier import shared_cache
from kourier.slack.budgets import BUDGET_KEY_PREFIX


def forget_shared_budgets() -> None:
    """Deletes every budget this process's cache holds: a test starts with Slack's budgets untouched."""
    cache = shared_cache.backend()
    client = cache._cache.get_client(write=True)  # type: ignore[attr-defined]  # RedisCacheClient
    keys = list(client.scan_iter(match=f"*{BUDGET_KEY_PREFIX}:*", count=1000))
    if keys:
        client.delete(*keys)
