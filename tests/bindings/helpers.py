"""What the bindings app's tests share: the admin form's posted data."""

from typing import Any


def binding_form(**fields: Any) -> dict[str, Any]:
    """What the add form posts for the minimal Binding, with some fields changed."""
    data = {
        "name": "ops",
        "connection": "acme",
        "channels": "C0123456789",
        "agent_url": "http://127.0.0.1:8083/",
        "dialect": "a2a",
        "protocol_version": "auto",
        "agent_headers": "",
        "output": "live",
        "thread_replies": "all",
        "acknowledgment_enabled": "on",
        "acknowledgment_emoji": "hourglass_flowing_sand",
        "progress": "steps-and-activity",
        "thread_context_enabled": "on",  # checked, as the add form shows it
        "approver_groups": "",
        "interaction_timeout": "30m",
        "thread_ttl": "90d",
    }
    data.update(fields)
    return {key: value for key, value in data.items() if value is not None}
