"""What a live reply shows while the agent works: step cards, the Working… card, lines, endings.

Pure: no I/O, no Slack, no Django. Normalized agent events (``kourier.a2a.events``) and a clock go
in; the reply's ``View`` and the writes to make (``Write``) come out. The Slack side renders each write's
view (``kourier.slack``): it owns how a view becomes chunks, blocks or text, and it may coalesce
writes (the latest view wins; a coalesced stream append must send the union of the writes'
``changed`` cards). This module owns *what* is shown and *when* a write is due: the spec's write
budgets hold as long as the renderer makes at most one Slack call per ``Write``.

Driving it (one ``Progress`` per reply, created when the turn is sent)::

    progress = Progress(ProgressMode.STEPS_AND_ACTIVITY, ThreadKind.CHAT, clock=time.monotonic)
    for event in agent_events:                # and progress.tick() whenever progress.deadline passes
        render(progress.feed(event))
    render(progress.finish(Ending.COMPLETED))   # or WAITING / FAILED

A ``Write`` is one Slack operation:

============  ============================================  ==========================================
kind          chat thread (a stream)                        alert thread (one message)
============  ============================================  ==========================================
``START``     ``chat.startStream`` with every card and      ``chat.postMessage`` of the view (a line,
              the text                                      never cards: the post cannot carry them)
``UPDATE``    ``chat.appendStream``: a ``task_update`` for  ``chat.update`` with the whole view
              each card in ``changed``, and the new text
``STOP``      ``chat.stopStream``: ``changed`` holds the    the final ``chat.update``; with ``first``
              closing chunk of every card still open; with  set, the reply's only post
              ``first`` set, the reply's only write
============  ============================================  ==========================================

``cards_refused(write)`` is how the renderer reports that Slack refused cards for a stream or an
update: it returns the same write again, without cards, and the reply shows the line from then on.

Fixed choices where the spec is silent (the report and tests pin them):

- Durations: ``Took`` has seconds (``under 1 s``, ``26 s``, ``3 min``, ``3 min 26 s``, ``1 h``,
  ``1 h 5 min``: from an hour on, seconds are dropped); the alert activity line has whole minutes
  (``2 min``, ``1 h 5 min``) and none under a minute: ``Working… (12 steps, 3 failed)``. Elapsed time is
  counted from the start of the turn (when the ``Progress`` was created).
- Counts: ``1 step``/``N steps``; ``, N failed`` and ``(N failed)`` only when some failed; no steps, no
  count (``Working…``, ``Took 5 s``).
- ``N earlier steps not shown`` (``1 earlier step not shown``) is the line above an alert thread's
  latest 20 cards.
- Display limits: a call is shown as ``name(key="value", …)`` at most ``CALL_DISPLAY_LIMIT`` (200)
  characters, so every title and line stays under the 256 characters third parties report for a Slack
  task card's title (UNVERIFIED, docs/slack-platform.md §1.2). A chat thread's stream shows every card.
- A tool card's title is the call (``name(arguments)``); ``No result was reported.`` and the activity
  card's ``Took …`` are the card's ``output``. The activity card keeps its ``Took …`` under ``Waiting
  for your answer`` and ``Stopped`` too.
- A result for a call this turn never saw (the turn resumed after an approval) gets a card titled with
  the tool's name alone (its arguments are unknown); the runner may feed the stored ``ToolCall`` first.
- In line mode (no cards), a call still without a result at the end shows as ``Ran name(arguments)``,
  and a call an approval is about as ``Approval requested: name``.
- Text counts as text when it has more than whitespace.
- The activity card's count changes that fall inside a throttle window are not written on their own:
  the next write that the spec allows carries them (no write follows the clock for them).
- An alert thread's turn that never posted and ends with nothing to show writes nothing in any mode
  (as the spec says of steps); a chat thread's gets one write, ``(no output)``.
- A chat thread's stream shows every card (the 20-card limit is the alert thread's); a stream holds
  about 50 task cards (UNVERIFIED, docs/slack-platform.md §1.2), which the Slack side must handle.

Restarts: ``view()`` is the whole view at any moment, for rewriting a message with ``chat.update``
(a chat thread's replacement keeps its cards before the text).
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from kourier.a2a.events import AgentEvent, ApprovalRequest, TextDelta, ToolCall, ToolResult
from kourier.a2a.wire import TaskState
from kourier.redaction import format_call, shorten

# The spec's fixed strings.
WORKING = "Working…"
WROTE_THE_ANSWER = "Wrote the answer"
WROTE_AN_UPDATE = "Wrote an update"
FINISHED = "Finished"
WAITING_FOR_YOUR_ANSWER = "Waiting for your answer"
STOPPED = "Stopped"
WORKED = "Worked"
NO_RESULT = "No result was reported."
NO_OUTPUT = "(no output)"

WORKING_DELAY = 3.0  # seconds; the spec: "The 3 second delay is not configurable."
ALERT_CARD_LIMIT = 20  # an alert thread shows the latest 20 cards
CALL_DISPLAY_LIMIT = 200  # characters of name(arguments) in a title or line
TITLE_LIMIT = 256  # Slack task card title (UNVERIFIED); every title here stays under it
DEFAULT_THROTTLE = 1.0  # seconds; about one chat.update a second per message (docs/slack-platform.md §1.5)


class ProgressMode(enum.StrEnum):
    """chat.progress; values as in the Binding manifest."""

    STEPS = "steps"
    STEPS_AND_ACTIVITY = "steps-and-activity"
    ACTIVITY = "activity"


DEFAULT_PROGRESS_MODE = ProgressMode.STEPS_AND_ACTIVITY  # what a Binding that sets no progress gets


class ThreadKind(enum.StrEnum):
    CHAT = "chat"  # started by a person's message: the reply streams to that person
    ALERT = "alert"  # started by a trigger: one message, posted and then updated


class CardStatus(enum.StrEnum):
    """Slack's task_update statuses (``pending`` is never used: a card begins under way)."""

    IN_PROGRESS = "in_progress"
    COMPLETE = "complete"
    ERROR = "error"


class Ending(enum.StrEnum):
    """How a reply ends, for the cards still open (a turn's own outcome is ``Turn.Outcome``)."""

    COMPLETED = "completed"  # the task completed
    WAITING = "waiting"  # the agent asks a question or for a tool approval
    FAILED = "failed"  # failed, canceled or rejected, or the request failed before the task ended

    @classmethod
    def for_state(cls, state: TaskState | str) -> Ending:
        """The outcome of a ``TaskEnded`` state (a pause is WAITING; anything not completed FAILED)."""
        state = TaskState(state)
        if state is TaskState.COMPLETED:
            return cls.COMPLETED
        if state in (TaskState.INPUT_REQUIRED, TaskState.AUTH_REQUIRED):
            return cls.WAITING
        return cls.FAILED


_WORKING_ENDS = {
    Ending.COMPLETED: FINISHED,
    Ending.WAITING: WAITING_FOR_YOUR_ANSWER,
    Ending.FAILED: STOPPED,
}
_ACTIVITY_ENDS = {
    Ending.COMPLETED: WORKED,
    Ending.WAITING: WAITING_FOR_YOUR_ANSWER,
    Ending.FAILED: STOPPED,
}


class WriteKind(enum.StrEnum):
    START = "start"
    UPDATE = "update"
    STOP = "stop"


@dataclass(frozen=True)
class Card:
    """One step card. ``id`` is stable: ``call-<call_id>``, ``working-<n>`` or ``activity``."""

    id: str
    title: str
    status: CardStatus
    output: str | None = None


@dataclass(frozen=True)
class View:
    """What the reply shows, top to bottom: ``line`` (small print), ``cards``, ``text``.

    ``line`` is either the line shown instead of cards (``Calling …``, ``Working…``, the activity line)
    or, above an alert thread's cards, how many earlier steps are not shown. ``fallback`` is the
    message's plain text for notifications: the text, else the last card's title, else the line.
    """

    line: str | None
    cards: tuple[Card, ...]
    text: str
    fallback: str


@dataclass(frozen=True)
class Write:
    """One write to make. ``changed``: the cards new or different since the previous write (every card
    on a first write); ``first``: no message exists yet; ``timed``: made by ``tick`` (the clock)."""

    kind: WriteKind
    view: View
    changed: tuple[Card, ...] = ()
    text_changed: bool = False
    first: bool = False
    timed: bool = False


_CALL, _WORKING, _ACTIVITY = "call", "working", "activity"


@dataclass
class _Step:
    id: str
    kind: str  # _CALL, _WORKING or _ACTIVITY
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


@dataclass
class _Counts:
    steps: int = 0
    failed: int = 0


def format_duration(seconds: float) -> str:
    """``Took``'s duration: ``under 1 s``, ``26 s``, ``3 min 26 s``, ``3 min``, ``1 h 5 min``."""
    total = int(max(0.0, seconds))
    if total < 1:
        return "under 1 s"
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    if minutes:
        return f"{minutes} min {secs} s" if secs else f"{minutes} min"
    return f"{secs} s"


def format_minutes(seconds: float) -> str | None:
    """The activity line's elapsed time in whole minutes (``2 min``, ``1 h 5 min``); None under a minute."""
    minutes = int(max(0.0, seconds)) // 60
    if minutes < 1:
        return None
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    return f"{minutes} min"


def _step_count(n: int) -> str:
    return "1 step" if n == 1 else f"{n} steps"


def activity_title(counts: _Counts) -> str:
    """``Working…``, ``Working… 12 steps``, ``Working… 12 steps, 3 failed``."""
    if not counts.steps:
        return WORKING
    failed = f", {counts.failed} failed" if counts.failed else ""
    return f"{WORKING} {_step_count(counts.steps)}{failed}"


def took(seconds: float, counts: _Counts) -> str:
    """``Took 3 min 26 s, 16 steps (7 failed)``, ``Took 3 min 26 s, 16 steps``, ``Took 5 s``."""
    text = f"Took {format_duration(seconds)}"
    if counts.steps:
        text += f", {_step_count(counts.steps)}"
        if counts.failed:
            text += f" ({counts.failed} failed)"
    return text


def activity_line(seconds: float, counts: _Counts) -> str:
    """``Working… (2 min, 12 steps, 3 failed)``; parts that are zero are left out."""
    parts = [p for p in (format_minutes(seconds),) if p]
    if counts.steps:
        parts.append(_step_count(counts.steps))
        if counts.failed:
            parts.append(f"{counts.failed} failed")
    return f"{WORKING} ({', '.join(parts)})" if parts else WORKING


def calling_line(display: str) -> str:
    return f"Calling {display}"


def ran_line(display: str) -> str:
    return f"Ran {display}"


def failed_line(display: str) -> str:
    return f"{display} failed"


def approval_title(name: str) -> str:
    return f"Approval requested: {shorten(name, CALL_DISPLAY_LIMIT)}"


def hidden_line(hidden: int) -> str:
    return "1 earlier step not shown" if hidden == 1 else f"{hidden} earlier steps not shown"


def ended_card(card: Card, outcome: Ending) -> Card:
    """A card a stream shows under way, closed as ``finish(outcome)`` closes it. For a stream a
    restarted process stops without the turn's events: all it knows is the card."""
    if card.status is not CardStatus.IN_PROGRESS:
        return card
    status = CardStatus.ERROR if outcome is Ending.FAILED else CardStatus.COMPLETE
    if card.id.startswith(_WORKING + "-"):
        return replace(card, title=_WORKING_ENDS[outcome], status=status)
    if card.id == _ACTIVITY:
        return replace(card, title=_ACTIVITY_ENDS[outcome], status=status)
    return replace(card, status=CardStatus.COMPLETE, output=NO_RESULT)  # a tool call with no result


def _has_text(text: str) -> bool:
    return bool(text.strip())


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
        self._counts = _Counts()
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
            self._working.title, self._working.status = _WORKING_ENDS[outcome], status
            self._working = None
        if self._activity is not None and not self._activity_frozen:
            self._end_activity(now, _ACTIVITY_ENDS[outcome], status)
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
        if not _has_text(text):
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
            step.kind, step.title, step.status = _CALL, display, CardStatus.IN_PROGRESS
        else:
            step = _Step(f"call-{event.call_id}", _CALL, display)
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
                call.step = _Step(f"call-{event.call_id}", _CALL, call.display)
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
                    call.step = _Step(f"call-{tool.call_id}", _CALL, call.display)
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
        self._working = _Step(f"working-{self._working_count}", _WORKING, WORKING)
        self._steps.append(self._working)
        self._gap_from = None  # written once for a gap

    def _begin_activity(self) -> bool:
        """One card for the whole wait, begun only before any text."""
        if self._activity is not None or self._text_seen:
            return False
        self._activity = _Step("activity", _ACTIVITY, WORKING)
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
        has_text = _has_text(self._text)
        text = self._text
        if self._shows_cards(first_post):
            steps: Iterable[_Step] = self._steps
            if final and not has_text:
                # A card that was never sent when a turn ends with no text is not sent at all.
                steps = [s for s in self._steps if s.kind == _CALL or s.shown]
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
        return View(line, (), text, text if _has_text(text) else (line or ""))

    def _card(self, step: _Step) -> Card:
        if step.kind == _ACTIVITY and not self._activity_frozen:
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
                if any(step.kind == _CALL for step in self._steps):
                    self._deferred_due = now + self._throttle
            else:
                self._deferred_due = None
        self._started = True
        self._last_view = view
        return [Write(kind, view, changed, text_changed, first, timed)]
