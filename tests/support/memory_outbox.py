"""The writer's Outbox kept in a dict that outlives writers, as the database outlives a process."""

import time

from kourier.slack.outbox import Intent, IntentState, PostKind


class MemoryOutbox:
    def __init__(self) -> None:
        self.records: dict[str, dict] = {}

    async def intend(self, key: str, kind: PostKind, notice_text: str = "") -> Intent:
        record = self.records.get(key)
        if record is None:
            self.records[key] = {"kind": kind, "ts": None, "since": time.time(), "text": notice_text}
            return Intent(IntentState.NEW)
        if record["ts"] is not None:
            return Intent(IntentState.CONFIRMED, ts=record["ts"])
        return Intent(IntentState.PENDING, since=record["since"])

    async def confirm(self, key: str, ts: str) -> None:
        self.records[key]["ts"] = ts

    def confirmed(self) -> dict[str, str]:
        return {key: record["ts"] for key, record in self.records.items() if record["ts"]}
