"""Slack's call budgets and the replies' plans the in-process tests share through the test Redis,
forgotten between tests (reply keys repeat from test to test). Each pytest-xdist worker has its own
cache prefix on the one Redis, and forgets only its own keys: another worker's test may be midway."""

from kourier import shared_cache
from kourier.slack.budgets import BUDGET_KEY_PREFIX
from kourier.slack.reply_plans import PLAN_KEY_PREFIX


def forget_shared_budgets(*, plans: bool = True) -> None:
    """Deletes every budget (and reply plan, unless ``plans`` is false) this process's cache holds: a
    test starts with Slack's budgets untouched and no reply planned."""
    cache = shared_cache.backend()
    client = cache._cache.get_client(write=True)  # type: ignore[attr-defined]  # RedisCacheClient
    for prefix in (BUDGET_KEY_PREFIX, PLAN_KEY_PREFIX) if plans else (BUDGET_KEY_PREFIX,):
        own = cache.make_key(f"{prefix}:*")
        keys = list(client.scan_iter(match=own, count=1000))
        if keys:
            client.delete(*keys)
