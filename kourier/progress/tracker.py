"""``Progress``: one reply's progress, fed the turn's events and a clock; it says what to write and
when (the package docstring has the rules it keeps)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from kourier.a2a.events import AgentEvent, ApprovalRequest, TextDelta, ToolCall, ToolResult
from kourier.redaction import format_call, shorten

from .view import (
    DEFAULT_PROGRESS_MODE,
    Card,
    CardStatus,
    Ending,
    ProgressMode,
    ThreadKind,
    View,
    Write,
    WriteKind,
)
from .wording import (
    ACTIVITY_CARD,
    ACTIVITY_ENDS,
    CALL_CARD,
    CALL_DISPLAY_LIMIT,
    NO_OUTPUT,
    NO_RESULT,
    WORKED,
    WORKING,
    WORKING_CARD,
    WORKING_ENDS,
    WROTE_AN_UPDATE,
    WROTE_THE_ANSWER,
    StepCounts,
    activity_line,
    activity_title,
    approval_title,
    calling_line,
    counts_as_text,
    failed_line,
    hidden_line,
    ran_line,
    took,
)

WORKING_DELAY = 3.0  # seconds; the spec: "The 3 second delay is not configurable."
ALERT_CARD_LIMIT = 20  # an alert thread shows the latest 20 cards
DEFAULT_THROTTLE = 1.0  # seconds; about one chat.update a second per message (docs/slack-platform.md §1.5)


@dataclass
class _Step:
    id: str
    kind: str  # CALL_CARD, WORKING_CARD or ACTIVITY_CARD
    title: str
    status: CardStatus = CardStatus.IN_PROGRESS
    output: str | None = None
    shown: bool = False  # a write has shown it as a card

    def card(self) -> Card:
        return Card(self.id, self.title, self.status, self.output)


@dataclass
class _Call:
    call_id: str
    name: str
    display: str  # name(arguments), redacted and shortened
    step: _Step | None = None  # None in the activity mode
    ok: bool | None = None  # None: no result yet
    approval: bool = False  # ended by an approval pause
    ended: bool = False  # has a result, or the approval ended it


class Progress:
    """The progress of one reply: feed it the turn's events; it says what to write and when.

    ``mode`` is chat.progress (None: the default, steps-and-activity); ``cards_supported`` is False on
    a platform without step cards (every write then shows the line instead). ``throttle`` is the least
    time between two writes of the activity card, and how long after an alert thread's first post the
    update that shows its cards waits. ``clock`` gives monotonic seconds.
    """

    def __init__(
        self,
        mode: ProgressMode | str | None,
        thread: ThreadKind | str,
        *,
        cards_supported: bool = True,
        throttle: float = DEFAULT_THROTTLE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.mode = ProgressMode(mode) if mode is not None else DEFAULT_PROGRESS_MODE
        self.thread = ThreadKind(thread)
        self._cards_ok = cards_supported
        self._throttle = throttle
        self._clock = clock
        self._started_at = clock()
        self._text = ""
        self._text_seen = False  # the first text has arrived
        self._steps: list[_Step] = []
        self._calls: dict[str, _Call] = {}
        self._last_call: _Call | None = None
        self._working: _Step | None = None  # the open Working… card of the current gap
        self._working_count = 0
        self._answer_steps: list[_Step] = []  # Working… cards that text ended as Wrote the answer
        self._gap_from: float | None = self._started_at  # when the current gap began; None: a call runs
        self._activity: _Step | None = None
        self._counts = StepCounts()
        self._activity_frozen = False  # Worked (or ended): its title no longer counts
        self._activity_written_at: float | None = None
        self._started = False  # the first write was made
        self._last_view: View | None = None
        self._deferred_due: float | None = None  # alert: the update that shows the cards after the post
        self._outcome: Ending | None = None

    # -- the public surface -------------------------------------------------------------------------

    @property
    def ended(self) -> bool:
        return self._outcome is not None

    @property
    def cards_shown(self) -> bool:
        """False once the reply shows lines instead of cards (no platform support, or refused)."""
        return self._cards_ok

    @property
    def uses_assistant_status(self) -> bool:
        """Slack's ``is working…`` status: an alert thread in steps-and-activity or activity only."""
        return self.thread is ThreadKind.ALERT and self.mode is not ProgressMode.STEPS

    @property
    def deadline(self) -> float | None:
        """When ``tick`` next has something to do (clock seconds), or None: nothing waits on the clock."""
        if self.ended:
            return None
        due = [t for t in (self._gap_due(), self._deferred_due) if t is not None]
        return min(due) if due else None

    def view(self) -> View:
        """The view a write made now would show (e.g. to rewrite the whole message)."""
        return self._view(self._clock(), first_post=self._alert_first_post())

    def feed(self, event: AgentEvent) -> list[Write]:
        """Takes one normalized agent event; returns the writes it causes (often none)."""
        if self.ended:
            return []
        now = self._clock()
        if isinstance(event, TextDelta):
            wants = self._on_text(event, now)
        elif isinstance(event, ToolCall):
            wants = self._on_call(event, now)
        elif isinstance(event, ToolResult):
            wants = self._on_result(event, now)
        elif isinstance(event, ApprovalRequest):
            wants = self._on_approval(event)
        else:  # TaskStarted, Question, UnusablePause, TaskEnded: nothing to show; finish() ends the turn
            wants = False
        return self._emit(now) if wants else []

    def tick(self, now: float | None = None) -> list[Write]:
        """The only timer-driven entry: the Working… card or line 3 seconds into a gap, and an alert
        thread's update that shows its cards once the throttle allows after its first post."""
        if self.ended:
            return []
        now = self._clock() if now is None else now
        wants = False
        due = self._gap_due()
        if due is not None and now >= due:
            self._begin_sign_of_life(now)
            wants = True
        if self._deferred_due is not None and now >= self._deferred_due:
            self._deferred_due = None
            wants = True
        return self._emit(now, timed=True) if wants else []

    def finish(self, outcome: Ending | str) -> list[Write]:
        """Ends the turn: closes every open card and returns the last write (a stream is stopped)."""
        if self.ended:
            return []
        outcome = Ending(outcome)
        now = self._clock()
        self._outcome = outcome
        self._deferred_due = None
        for call in self._calls.values():
            if not call.ended and call.step is not None:
                call.step.status = CardStatus.COMPLETE
                call.step.output = NO_RESULT
        status = CardStatus.ERROR if outcome is Ending.FAILED else CardStatus.COMPLETE
        if self._working is not None:  # never a tick on Working…: a title that says how it ended
            self._working.title, self._working.status = WORKING_ENDS[outcome], status
            self._working = None
        if self._activity is not None and not self._activity_frozen:
            self._end_activity(now, ACTIVITY_ENDS[outcome], status)
        view = self._view(now, first_post=self._alert_first_post())
        if self._alert_first_post() and view.text == NO_OUTPUT and not view.cards:
            return []  # an alert thread's turn with nothing to show posts nothing
        return self._emit(now, final=True)

    def cards_refused(self, refused: Write | None = None) -> list[Write]:
        """Slack refused cards for a stream or an update: from now on every write shows the line.

        With the refused write, returns it again without cards (same kind: a refused start is
        started again, a refused stop stopped again).
        """
        self._cards_ok = False
        self._deferred_due = None
        if refused is None:
            return []
        now = self._clock()
        view = self._view(now, first_post=False)
        self._last_view = view
        return [Write(refused.kind, view, (), True, refused.first, refused.timed)]

    # -- events -------------------------------------------------------------------------------------

    def _on_text(self, event: TextDelta, now: float) -> bool:
        text = event.text if event.replace else self._text + event.text
        if text == self._text:
            return False
        self._text = text
        if not self._running_calls():
            self._gap_from = now
        if not counts_as_text(text):
            return True
        if not self._text_seen:
            self._text_seen = True
            if self._activity is not None and not self._activity_frozen:
                self._end_activity(now, WORKED, CardStatus.COMPLETE)
        if self._working is not None:
            self._working.title = WROTE_THE_ANSWER
            self._working.status = CardStatus.COMPLETE
            self._answer_steps.append(self._working)
            self._working = None
        return True

    def _on_call(self, event: ToolCall, now: float) -> bool:
        if event.call_id in self._calls:
            return False  # the same call again (a stream followed again)
        self._gap_from = None
        display = format_call(event.name, event.args, CALL_DISPLAY_LIMIT)
        call = _Call(event.call_id, event.name, display)
        self._calls[event.call_id] = call
        self._last_call = call
        if self.mode is ProgressMode.ACTIVITY:
            return self._begin_activity()
        for step in self._answer_steps:  # the text before this call was not the answer
            step.title = WROTE_AN_UPDATE
        self._answer_steps.clear()
        if self._working is not None:  # the call takes the Working… card over
            step, self._working = self._working, None
            step.kind, step.title, step.status = CALL_CARD, display, CardStatus.IN_PROGRESS
        else:
            step = _Step(f"call-{event.call_id}", CALL_CARD, display)
            self._steps.append(step)
        call.step = step
        return True

    def _on_result(self, event: ToolResult, now: float) -> bool:
        call = self._calls.get(event.call_id)
        if call is None:
            if not event.name:
                return False  # nothing to name it by
            # A call made before this turn (resumed after an approval): show it again with how it ended.
            call = _Call(event.call_id, event.name, shorten(event.name, CALL_DISPLAY_LIMIT))
            self._calls[event.call_id] = call
            self._last_call = call
            if self.mode is not ProgressMode.ACTIVITY:
                call.step = _Step(f"call-{event.call_id}", CALL_CARD, call.display)
                self._steps.append(call.step)
        elif call.ended:
            return False
        call.ok, call.ended = event.ok, True
        if call.step is not None:
            call.step.status = CardStatus.COMPLETE if event.ok else CardStatus.ERROR
        if not self._running_calls():
            self._gap_from = now
        if self.mode is not ProgressMode.ACTIVITY:
            return True
        if self._activity_frozen:
            return False
        self._counts.steps += 1
        self._counts.failed += 0 if event.ok else 1
        if self._activity is None:
            return self._begin_activity()
        # The activity card is written when a result changes a count, at most once in a throttle window.
        written = self._activity_written_at
        return written is None or now - written >= self._throttle

    def _on_approval(self, event: ApprovalRequest) -> bool:
        """The cards of the calls the approval is about end as Approval requested: name, complete.

        No write of its own: the pause ends the turn, and finish() shows it.
        """
        for tool in event.tools:
            call = self._calls.get(tool.call_id)
            if call is None:
                call = _Call(tool.call_id, tool.name, format_call(tool.name, tool.args, CALL_DISPLAY_LIMIT))
                self._calls[tool.call_id] = call
                self._last_call = call
                if self.mode is not ProgressMode.ACTIVITY:
                    call.step = _Step(f"call-{tool.call_id}", CALL_CARD, call.display)
                    self._steps.append(call.step)
            call.approval, call.ended = True, True
            if call.step is not None:
                call.step.title = approval_title(tool.name)
                call.step.status = CardStatus.COMPLETE
                call.step.output = None
        return False

    # -- the Working… and activity cards ---------------------------------------------------------------

    def _running_calls(self) -> bool:
        return any(not call.ended for call in self._calls.values())

    def _gap_due(self) -> float | None:
        """When the current gap's sign of life is due, or None if none is due in this gap."""
        if self.mode is ProgressMode.STEPS_AND_ACTIVITY:
            if self._working is None and self._gap_from is not None and not self._running_calls():
                return self._gap_from + WORKING_DELAY
        elif self.mode is ProgressMode.ACTIVITY and self._activity is None and not self._text_seen:
            return self._started_at + WORKING_DELAY
        return None

    def _begin_sign_of_life(self, now: float) -> None:
        if self.mode is ProgressMode.ACTIVITY:
            self._begin_activity()
            return
        self._working_count += 1
        self._working = _Step(f"working-{self._working_count}", WORKING_CARD, WORKING)
        self._steps.append(self._working)
        self._gap_from = None  # written once for a gap

    def _begin_activity(self) -> bool:
        """One card for the whole wait, begun only before any text."""
        if self._activity is not None or self._text_seen:
            return False
        self._activity = _Step("activity", ACTIVITY_CARD, WORKING)
        self._steps.append(self._activity)
        return True

    def _end_activity(self, now: float, title: str, status: CardStatus) -> None:
        assert self._activity is not None
        self._activity_frozen = True
        self._activity.title, self._activity.status = title, status
        self._activity.output = took(now - self._started_at, self._counts)

    # -- views and writes ---------------------------------------------------------------------------

    def _alert_first_post(self) -> bool:
        return self.thread is ThreadKind.ALERT and not self._started

    def _shows_cards(self, first_post: bool) -> bool:
        if not self._cards_ok or first_post:
            return False
        # An alert thread's activity mode is one line.
        return not (self.mode is ProgressMode.ACTIVITY and self.thread is ThreadKind.ALERT)

    def _view(self, now: float, *, first_post: bool) -> View:
        final = self.ended
        has_text = counts_as_text(self._text)
        text = self._text
        if self._shows_cards(first_post):
            steps: Iterable[_Step] = self._steps
            if final and not has_text:
                # A card that was never sent when a turn ends with no text is not sent at all.
                steps = [s for s in self._steps if s.kind == CALL_CARD or s.shown]
            cards = [self._card(s) for s in steps]
            line = None
            if self.thread is ThreadKind.ALERT and len(cards) > ALERT_CARD_LIMIT:
                line = hidden_line(len(cards) - ALERT_CARD_LIMIT)
                cards = cards[-ALERT_CARD_LIMIT:]
            if final and not has_text and not cards:
                text = NO_OUTPUT
            fallback = text if has_text or not cards else cards[-1].title
            return View(line, tuple(cards), text, fallback)
        line = self._line(now, final, has_text)
        if final and not has_text:
            text = NO_OUTPUT
        return View(line, (), text, text if counts_as_text(text) else (line or ""))

    def _card(self, step: _Step) -> Card:
        if step.kind == ACTIVITY_CARD and not self._activity_frozen:
            return Card(step.id, activity_title(self._counts), step.status, step.output)
        return step.card()

    def _line(self, now: float, final: bool, has_text: bool) -> str | None:
        if self.mode is ProgressMode.ACTIVITY:
            if self._activity is not None and not self._activity_frozen and not final:
                return activity_line(now - self._started_at, self._counts)
            return None
        if self._working is not None and not final:
            return WORKING
        call = self._last_call
        if call is None:
            return None
        if not call.ended and not final:
            return calling_line(call.display)
        if has_text:  # the text replaces the line of a call that has ended
            return None
        if call.approval:
            return approval_title(call.name)
        return failed_line(call.display) if call.ok is False else ran_line(call.display)

    def _emit(self, now: float, *, timed: bool = False, final: bool = False) -> list[Write]:
        first = not self._started
        view = self._view(now, first_post=self._alert_first_post())
        kind = WriteKind.STOP if final else WriteKind.START if first else WriteKind.UPDATE
        previous = self._last_view
        if kind is WriteKind.UPDATE and view == previous:
            return []
        before = {} if previous is None else {card.id: card for card in previous.cards}
        changed = tuple(card for card in view.cards if before.get(card.id) != card)
        text_changed = view.text != (previous.text if previous is not None else "")
        shown = {card.id for card in view.cards}
        for step in self._steps:
            if step.id in shown:
                step.shown = True
        if self._activity is not None and not self._activity_frozen:
            self._activity_written_at = now
        if self.thread is ThreadKind.ALERT and self._shows_cards(first_post=False):
            if kind is WriteKind.START:
                # The post cannot carry the cards: one more update shows them, once the throttle allows.
                if any(step.kind == CALL_CARD for step in self._steps):
                    self._deferred_due = now + self._throttle
            else:
                self._deferred_due = None
        self._started = True
        self._last_view = view
        return [Write(kind, view, changed, text_changed, first, timed)]
