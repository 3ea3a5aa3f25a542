"""Where an operator opens a thread from the admin: Slack's web client, or the workspace simulator's
page while `manage.py serve` runs it (its threads are in no real workspace). Built from what the
database holds; no call to Slack."""

from django.conf import settings

SIMULATOR_PAGE = "/simulator/"


def thread_url(team_id: str, channel_id: str, ts: str) -> str:
    """The thread of ``ts`` in ``channel_id``; "" when what the link needs is not known yet."""
    if not (channel_id and ts):
        return ""
    if settings.SIMULATOR_URL:  # the page opens the thread its address names
        return f"{SIMULATOR_PAGE}#thread={ts}"  # its one channel, #demo
    if not team_id:  # learned from auth.test on the Connection's first call
        return ""
    return f"https://app.slack.com/client/{team_id}/{channel_id}/thread/{channel_id}-{ts}"
