"""Model tokens an agent reports, read from event metadata (pure).

Where kagent puts them (docs/kagent-dialect.md §1; kagent's source):

- kagent 0.10, Python runtime: ``kagent_usage_metadata`` on each model call's (non-partial) message,
  ``{promptTokenCount, candidatesTokenCount, totalTokenCount}`` (google-genai's usage, camelCase);
- kagent 0.10, Go runtime: the same under ``adk_usage_metadata`` (go/adk/pkg/a2a/converter.go,
  ``buildEventMeta``);
- kagent 1.0: the usage extension ``https://kagent.dev/extensions/usage/v1`` on the terminal status
  update, ``{inputTokens, outputTokens, ...}``, the task's lifetime total so far (kagent-adk 1.0.0a17,
  ``_turn_usage.TurnUsage.stamp``); the last call's ``kagent.dev/a2a/usage`` is ignored, the total
  says it all.

A count that is not a whole number of tokens (a string, a negative, a bool, NaN, an infinity, more
than ``MAX_TOKEN_COUNT``) is not usage: it is skipped, and the turn goes on as for an agent that
reports none.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

PER_CALL_KEYS = ("kagent_usage_metadata", "adk_usage_metadata")
TASK_TOTAL_KEY = "https://kagent.dev/extensions/usage/v1"
# More tokens than any model call or task spends by far: a larger count is not one (1e300 would pass
# every other check and overflow the turn's column, or spend a channel's budget at once).
MAX_TOKEN_COUNT = 10**12


@dataclass(frozen=True)
class TokenCount:
    input_tokens: int
    output_tokens: int

    def __add__(self, other: TokenCount) -> TokenCount:
        return TokenCount(self.input_tokens + other.input_tokens, self.output_tokens + other.output_tokens)


def per_call_usage(metadata: Mapping[str, Any]) -> TokenCount | None:
    """One model call's usage in a message's metadata (kagent 0.10, either runtime), else None."""
    for key in PER_CALL_KEYS:
        usage = metadata.get(key)
        if isinstance(usage, Mapping):
            return _count(usage, "promptTokenCount", "candidatesTokenCount")
    return None


def task_total_usage(metadata: Mapping[str, Any]) -> TokenCount | None:
    """The task's usage so far in a status update's metadata (kagent 1.0's usage extension), else None."""
    usage = metadata.get(TASK_TOTAL_KEY)
    return _count(usage, "inputTokens", "outputTokens") if isinstance(usage, Mapping) else None


def _count(usage: Mapping[str, Any], input_key: str, output_key: str) -> TokenCount | None:
    counts = [_tokens(usage.get(input_key)), _tokens(usage.get(output_key))]
    if any(count is None for count in counts) or counts == [0, 0]:
        return None
    return TokenCount(counts[0] or 0, counts[1] or 0)


def _tokens(value: Any) -> int | None:
    """A token count: a whole, non-negative number (JSON may carry it as 10.0); 0 when absent."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    # NaN and the infinities first: int() of them raises, and NaN is neither below 0 nor above the cap.
    if not math.isfinite(value) or not 0 <= value <= MAX_TOKEN_COUNT or value != int(value):
        return None
    return int(value)
