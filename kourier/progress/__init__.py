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
The parts: ``view`` (what the renderer is handed: ``View``, ``Write``, and the choices that shape
them), ``wording`` (the fixed strings, durations, counts and lines), ``tracker`` (``Progress``).
Import them from here (``from kourier.progress import Progress``).
"""

from .tracker import (
    ALERT_CARD_LIMIT,
    DEFAULT_THROTTLE,
    WORKING_DELAY,
    Progress,
)
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
    CALL_DISPLAY_LIMIT,
    FINISHED,
    NO_OUTPUT,
    NO_RESULT,
    STOPPED,
    TITLE_LIMIT,
    WAITING_FOR_YOUR_ANSWER,
    WORKED,
    WORKING,
    WROTE_AN_UPDATE,
    WROTE_THE_ANSWER,
    activity_line,
    activity_title,
    approval_title,
    calling_line,
    ended_card,
    failed_line,
    format_duration,
    format_minutes,
    hidden_line,
    ran_line,
    took,
)

__all__ = [
    "ALERT_CARD_LIMIT",
    "CALL_DISPLAY_LIMIT",
    "DEFAULT_PROGRESS_MODE",
    "DEFAULT_THROTTLE",
    "FINISHED",
    "NO_OUTPUT",
    "NO_RESULT",
    "STOPPED",
    "TITLE_LIMIT",
    "WAITING_FOR_YOUR_ANSWER",
    "WORKED",
    "WORKING",
    "WORKING_DELAY",
    "WROTE_AN_UPDATE",
    "WROTE_THE_ANSWER",
    "Card",
    "CardStatus",
    "Ending",
    "Progress",
    "ProgressMode",
    "ThreadKind",
    "View",
    "Write",
    "WriteKind",
    "activity_line",
    "activity_title",
    "approval_title",
    "calling_line",
    "ended_card",
    "failed_line",
    "format_duration",
    "format_minutes",
    "hidden_line",
    "ran_line",
    "took",
]
