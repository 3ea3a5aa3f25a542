"""Slack's call budgets and the replies' plans the in-process tests share through the test Redis,
forgotten between tests (reply keys repeat from test to test)."""

from kourier import shared_cache
from kourier.slack.budgets import BUDGET_KEY_PREFIX
from kourier.slack.reply_plans import PLAN_KEY_PREFIX


def forget_shared_budgets(*, plans: bool = True) -> None:
    """Deletes every budget (and reply plan, unless ``plans`` is false) this process's cache holds: a
    test starts with Slack's budgets untouched and no reply planned."""
    cache = shared_cache.backend()
    client = cache._cache.get_client(write=True)  # type: ignore[attr-defined]  # RedisCacheClient
    for prefix in (BUDGET_KEY_PREFIX, PLAN_KEY_PREFIX) if plans else (BUDGET_KEY_PREFIX,):
        keys = list(client.scan_iter(match=f"*{prefix}:*", count=1000))
        if keys:
            client.delete(*keys)
