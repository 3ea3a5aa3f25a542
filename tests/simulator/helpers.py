"""What the simulator's tests share: reading a refused call, and the shapes several of them send."""

from typing import Any

import pytest
from slack_sdk.errors import SlackApiError


def slack_error(call: Any, *args: Any, **kwargs: Any) -> str:
    """The Slack error name a client call fails with."""
    with pytest.raises(SlackApiError) as failure:
        call(*args, **kwargs)
    assert failure.value.response.status_code == 200
    return failure.value.response["error"]


FORM_BLOCKS: list[dict[str, Any]] = [
    {
        "type": "input",
        "block_id": "question",
        "label": {"type": "plain_text", "text": "Which one?"},
        "element": {
            "type": "radio_buttons",
            "action_id": "choice",
            "options": [
                {"text": {"type": "plain_text", "text": "A"}, "value": "a"},
                {"text": {"type": "plain_text", "text": "B"}, "value": "b"},
            ],
        },
    },
    {
        "type": "actions",
        "block_id": "buttons",
        "elements": [
            {
                "type": "button",
                "action_id": "submit",
                "text": {"type": "plain_text", "text": "Submit"},
                "value": "prompt-1",
                "style": "primary",
            },
            {
                "type": "static_select",
                "action_id": "pick",
                "options": [{"text": {"type": "plain_text", "text": "X"}, "value": "x"}],
            },
        ],
    },
]
