"""Assembling the reply text of a turn from the ways agents stream and restate it.

Agents send text in pieces and then, often, again in full:

- A2A 1.0 artifacts: a first chunk, ``append: true`` chunks, and (kagent 1.0) a ``lastChunk`` without
  ``append`` that carries the whole model turn again: by A2A semantics it replaces the artifact.
- ADK partial events (kagent 0.10 ``kagent_adk_partial: true``, upstream ADK ``adk_partial``): each
  status message holds one delta; the non-partial message that follows holds the full text.
- kagent 0.10 ends a turn with an artifact that repeats the last message.
- Generic agents send status messages and artifacts, each a piece of the reply.

So the reply is kept as *segments* (one per artifact, message or run of partial deltas, in order of
arrival, joined by a blank line), each updated in place when the agent restates it, and every change is
turned into the smallest ``TextDelta`` that brings what was shown up to date: an append when the new
text extends the old, a replace otherwise, nothing when the restatement changed nothing. Nothing is
ever shown twice and no chunk is lost: the shown text is always exactly the joined segments.
"""

from __future__ import annotations

import itertools

from kourier.a2a.events import TextDelta

SEGMENT_SEPARATOR = "\n\n"

SegmentKey = tuple[str, str]


class ReplyText:
    def __init__(self) -> None:
        self._segments: dict[SegmentKey, str] = {}  # in order of arrival
        self._aliases: dict[SegmentKey, SegmentKey] = {}  # restatements, pointing at the segment they repeat
        self._open_partial_run: SegmentKey | None = None
        self._partial_message_ids: set[str] = set()
        self._anonymous = itertools.count()
        self._shown = ""

    @property
    def text(self) -> str:
        return SEGMENT_SEPARATOR.join(text for text in self._segments.values() if text)

    def add_partial(self, message_id: str, text: str) -> None:
        """An ADK partial delta: appended to the current run of partial deltas."""
        if message_id and message_id in self._partial_message_ids:
            return  # the same delta again (a task snapshot replaying history)
        self._partial_message_ids.add(message_id)
        if self._open_partial_run is None:
            self._open_partial_run = self._new_key("partial")
            self._segments[self._open_partial_run] = ""
        self._segments[self._open_partial_run] += text

    def set_message(self, message_id: str, text: str) -> None:
        """A complete (non-partial) agent message.

        It closes an open run of partial deltas and, when it has text, is that run's full version.
        """
        key = self._resolve(("message", message_id)) if message_id else None
        if key is not None and key in self._segments:
            if text:
                self._segments[key] = text  # the same message again: update in place
            return
        run, self._open_partial_run = self._open_partial_run, None
        if run is not None:
            if text:
                self._segments[run] = text
            if message_id:
                self._aliases[("message", message_id)] = run
            return
        if not text:
            return
        new_key = ("message", message_id) if message_id else self._new_key("message")
        self._add_or_alias(new_key, text)

    def artifact_chunk(self, artifact_id: str, text: str, *, append: bool, last_chunk: bool) -> None:
        """A chunk of an artifact: appended to it, or (``append`` false) replacing its text."""
        key = self._resolve(("artifact", artifact_id))
        if key in self._segments:
            self._segments[key] = self._segments[key] + text if append else text
            return
        if last_chunk and not append:
            # A complete artifact in one go: may be a restatement of the text just shown.
            self._add_or_alias(key, text)
        else:
            self._segments[key] = text

    def delta(self) -> TextDelta | None:
        """The change since the last call, or None when the shown text is still right."""
        current = self.text
        if current == self._shown:
            return None
        previous, self._shown = self._shown, current
        if current.startswith(previous):
            return TextDelta(current[len(previous) :])
        return TextDelta(current, replace=True)

    def _add_or_alias(self, key: SegmentKey, text: str) -> None:
        latest = self._latest_with_text()
        if text and latest is not None and self._segments[latest] == text:
            self._aliases[key] = latest  # the agent repeats its last text (kagent 0.10's final artifact)
        else:
            self._segments[key] = text

    def _latest_with_text(self) -> SegmentKey | None:
        return next((key for key, text in reversed(self._segments.items()) if text), None)

    def _resolve(self, key: SegmentKey) -> SegmentKey:
        return self._aliases.get(key, key)

    def _new_key(self, kind: str) -> SegmentKey:
        return (f"{kind} without id", str(next(self._anonymous)))
