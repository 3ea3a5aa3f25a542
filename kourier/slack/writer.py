"""Writes one agent reply into a Slack thread: the only module that knows Slack's wire for replies.

A live reply is driven by ``kourier.progress``: ``write()`` takes each ``Write`` as the turn goes and
``end()`` its last; ``show()`` / ``finish()`` / ``stop()`` do the same for plain text (output: final,
or a caller without progress). Whatever was asked, every Slack write shows the *latest* view: writes
are coalesced (intermediate views are dropped, never queued one by one) and no message is written
faster than ``min_interval``. A stream shows what changed since what it already holds, so a
coalesced append carries the union of the cards the dropped writes changed.

How a write becomes Slack calls:

=====================  ===============================================  =================================
write                  chat thread (a stream, to the person who wrote)  alert thread, or a refused stream
=====================  ===============================================  =================================
the first              ``chat.startStream``: a ``task_update`` chunk    ``chat.postMessage``: the line as a
                       per card, then a ``markdown_text`` chunk         context block, then the text
later                  ``chat.appendStream``: the cards that changed,   ``chat.update`` with the whole
                       then the text that was added                     view: the line, ``task_card``
                                                                        blocks, the text in a markdown
                                                                        block
the last (``end``)     ``chat.stopStream``: the cards that changed      the last ``chat.update`` (or the
                       and a closing chunk for every card still         only ``chat.postMessage``)
                       open; a text the stream could not show (it was
                       rewritten) is then written with ``chat.update``
=====================  ===============================================  =================================

A view with neither line nor cards is plain ``markdown_text``. With blocks, ``text`` is the view's
fallback (Slack's ``chat.update`` takes at most 4,000 characters of it; the text itself is in the
markdown block). A message shows at most ``MESSAGE_CARD_LIMIT`` cards, the latest, under a line that
counts the rest (progress already keeps an alert thread's to 20); a stream takes at most
``STREAM_CARD_LIMIT`` cards (about 50 fit in one streamed message, research/slack.md §1.2,
UNVERIFIED), leaves later new cards out, and is rewritten at its end to show the latest. Text past
12,000 characters goes on in messages of its own at the end.

Fallbacks, decided per reply and remembered:

- a stream Slack refuses at start (``STREAM_REFUSED_ERRORS``): post + ``chat.update``;
- cards refused (``invalid_chunks`` for a stream, ``invalid_blocks`` for a post or an update that had
  cards): the same write again without them (``Progress.cards_refused``: the reply shows the line
  from then on). A stream goes on as plain text: it can only append, so a line is not shown in it
  while it streams (one not started yet waits for text); a line the last view still has (no text:
  ``(no output)``) is shown below it (``chat.stopStream`` blocks, or the one post);
- a stream that is over (``STREAM_ENDED_ERRORS``: expired, stopped): the reply goes on in the same
  message with ``chat.update`` of the whole view, cards as ``task_card`` blocks where allowed.

Slack's assistant status (``AssistantStatus``) is set by the reply when it begins and after each
write but the last, and cleared when it ends.

The reply is in one mode (``ReplyMode``) at a time: how it takes a write depends on it (and on
whether cards were refused, a fallback of its own):

===============  ==================================================================================
mode             the reply
===============  ==================================================================================
``NOT_STARTED``  a chat thread's live reply that has shown nothing yet: its first write that shows
                 something starts a stream (where it begins)
``STREAMING``    a stream is open: appended to, stopped by the last write
``MESSAGE``      a message, posted the first time it is written, then updated: an alert thread's
                 reply, a final answer (where they begin), a stream refused, over or given up
``TAKEN_OVER``   a message an earlier runner began (``existing_ts``, where it begins, or found by
                 the outbox): it may still stream, so it is stopped before it is first rewritten
``ENDED``        the last write was made or failed: nothing is written any more
===============  ==================================================================================

Its moves (``REPLY_MOVES``; any other raises ``IllegalReplyMove``):

- ``NOT_STARTED`` → ``STREAMING``: ``chat.startStream`` took the first write;
- ``NOT_STARTED`` → ``MESSAGE``: Slack refused the stream, or the first write to show is the last
  (it is posted whole);
- ``NOT_STARTED`` or ``MESSAGE`` not posted yet → ``TAKEN_OVER``: the outbox knows the message an
  earlier attempt made;
- ``STREAMING`` → ``MESSAGE``: the stream was stopped (by the last write, or after the last write
  failed), is over, or was given up;
- ``TAKEN_OVER`` → ``MESSAGE``: stopped if it still streamed, before it is rewritten or left as is;
- any other → ``ENDED``: ``end()``, which first closes the queue (writes asked for later are
  dropped) and lets a write already talking to Slack finish.

Posts are written once (design invariant 3): every post carries its key in its metadata, and with an
``Outbox`` it is recorded as intended before it is sent and confirmed after (outbox.py). A reply an
earlier attempt made is taken over as ``existing_ts`` is.

A call whose answer is lost is checked by the client before it is repeated (clients.py). An append
whose answer is lost cannot be checked (a repeat would show its text twice): the reply gives the
stream up (``chat.stopStream``) and goes on in the same message with ``chat.update`` of the whole
view, which can be repeated. A first post or stream start whose check failed as well
(``SlackOutcomeUnknown``) fails that write; the next write starts the reply again, since an answer
shown twice is better than none: this needs Slack to fail the call and then the thread's read.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from kourier.progress import (
    NO_OUTPUT,
    Card,
    CardStatus,
    Ending,
    Progress,
    View,
    Write,
    WriteKind,
    ended_card,
    hidden_line,
)

from .blocks import line_block, markdown_chunk, task_card_block, task_update_chunk
from .clients import SlackOutcomeUnknown, error_name
from .mrkdwn import neutralize
from .outbox import Outbox, PostKind, intend_reply, part_key, part_metadata, post_once, reply_metadata
from .status import AssistantStatus

logger = logging.getLogger(__name__)

NO_OUTPUT_TEXT = NO_OUTPUT
# markdown_text holds up to 12,000 characters in a post, an update or a stream.
MESSAGE_TEXT_LIMIT = 12_000
# The most messages one answer takes (a Binding's replies.maxMessages, which defaults to the same):
# past it the rest is not posted and the reply ends with ANSWER_CUT_LINE (docs/security.md).
DEFAULT_MAX_MESSAGES = 10
ANSWER_CUT_LINE = (
    "_The answer was cut here: a reply takes at most {messages} messages, "
    "and {characters:,} more characters were not posted._"
)
# chat.update refuses a ``text`` longer than this (msg_too_long); with blocks it is only the fallback.
FALLBACK_TEXT_LIMIT = 4_000
# At most 50 blocks in a message: the line, the cards and the text's markdown block fit under it.
MESSAGE_CARD_LIMIT = 45
# About 50 task cards fit in one streamed message (3P, UNVERIFIED); new cards past this are left out.
STREAM_CARD_LIMIT = 45

# Errors that mean chat streaming cannot be used for this reply: fall back to post + update.
STREAM_REFUSED_ERRORS = frozenset(
    {
        "feature_not_enabled",
        "unknown_method",
        "method_deprecated",
        "channel_type_not_supported",
        "missing_recipient_user_id",
        "missing_recipient_team_id",
        "user_not_found",
        "invalid_thread_ts",
        "not_allowed_token_type",
        "missing_scope",
    }
)
# Errors that mean the stream is over (expired, or the person stopped it): go on with chat.update.
STREAM_ENDED_ERRORS = frozenset(
    {"message_not_in_streaming_state", "stopped_by_user", "streaming_mode_mismatch"}
)
# Errors that refuse the cards of a write: task_update chunks of a stream, task_card blocks of a message.
CARDS_REFUSED_ERRORS = frozenset({"invalid_chunks", "invalid_blocks"})


class ReplyMode(enum.Enum):
    """What the reply is now (module docstring)."""

    NOT_STARTED = "not_started"
    STREAMING = "streaming"
    MESSAGE = "message"
    TAKEN_OVER = "taken_over"
    ENDED = "ended"


# Every move a reply may make, from each mode (module docstring).
REPLY_MOVES: Mapping[ReplyMode, frozenset[ReplyMode]] = {
    ReplyMode.NOT_STARTED: frozenset(
        {ReplyMode.STREAMING, ReplyMode.MESSAGE, ReplyMode.TAKEN_OVER, ReplyMode.ENDED}
    ),
    ReplyMode.STREAMING: frozenset({ReplyMode.MESSAGE, ReplyMode.ENDED}),
    ReplyMode.MESSAGE: frozenset({ReplyMode.TAKEN_OVER, ReplyMode.ENDED}),
    ReplyMode.TAKEN_OVER: frozenset({ReplyMode.MESSAGE, ReplyMode.ENDED}),
    ReplyMode.ENDED: frozenset(),
}


class IllegalReplyMove(RuntimeError):
    """A move ``REPLY_MOVES`` does not allow: a bug in the writer, never a fault of Slack's."""


def check_move(current: ReplyMode, to: ReplyMode) -> None:
    if to not in REPLY_MOVES[current]:
        raise IllegalReplyMove(f"a reply cannot move from {current.name} to {to.name}")


@dataclass(frozen=True)
class ReplyTarget:
    channel_id: str
    thread_ts: str
    recipient_user_id: str | None  # the person who wrote: Slack shows a chat thread's stream to them
    recipient_team_id: str | None
    reply_key: str  # the product's key of this reply, kept in the message's metadata


def split_for_messages(text: str, limit: int = MESSAGE_TEXT_LIMIT) -> list[str]:
    """Splits a long answer into message-sized parts, at line breaks where it can."""
    parts: list[str] = []
    rest = text
    while len(rest) > limit:
        cut = rest.rfind("\n", 0, limit)
        if cut <= limit // 2:
            cut = limit
        parts.append(rest[:cut])
        rest = rest[cut:].lstrip("\n")
    parts.append(rest)
    return parts


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _view_key(view: View) -> tuple[Any, ...]:
    return (view.line, view.cards, view.text)


def _without_cards(view: View) -> View:
    fallback = view.text if view.text.strip() else (view.line or view.fallback)
    return View(view.line, (), view.text, fallback)


# --- the reply -----------------------------------------------------------------------------------


def _merged(earlier: Write, later: Write) -> Write:
    """Two writes as one: the later view wins; the cards either changed are changed."""
    changed = {card.id: card for card in earlier.changed}
    changed.update({card.id: card for card in later.changed})
    return Write(
        later.kind,
        later.view,
        tuple(changed.values()),
        earlier.text_changed or later.text_changed,
        earlier.first and later.first,
        earlier.timed and later.timed,
    )


class SlackReply:
    """One reply in a thread: ``write()`` each progress write, ``end()`` with the last.

    ``stream``: a chat thread's reply streams (to ``target.recipient_user_id``); an alert thread's is
    posted and updated. ``progress`` is told when Slack refuses cards; ``status`` is the thread's
    assistant status (alert threads in the activity modes). ``existing_ts``: a reply an earlier runner
    began, taken over (it is ended if it still streams, then rewritten with ``chat.update``).
    ``outbox``: where the reply's posts are recorded as intended and confirmed (outbox.py);
    ``on_posted`` is told the reply's ts once its message exists. ``on_stream_cards`` is told the
    cards the stream shows under way whenever they change, so that a runner taking the reply over
    (``adopted_cards``) can end them if it has to stop the stream without the turn's events.
    ``mode`` is what the reply is now (``ReplyMode``, module docstring).
    """

    def __init__(
        self,
        client: AsyncWebClient,
        target: ReplyTarget,
        *,
        live: bool,
        stream: bool,
        progress: Progress | None = None,
        status: AssistantStatus | None = None,
        min_interval: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        existing_ts: str | None = None,
        on_posted: Callable[[str], Awaitable[None]] | None = None,
        outbox: Outbox | None = None,
        adopted_cards: Sequence[Card] = (),
        on_stream_cards: Callable[[list[Card]], Awaitable[None]] | None = None,
        allow_user_mentions: bool = False,
        max_messages: int = DEFAULT_MAX_MESSAGES,
    ) -> None:
        self._client = client
        self._allow_user_mentions = allow_user_mentions
        self._max_messages = max_messages
        self._not_kept = 0  # characters of the answer the runner did not keep (bounded memory)
        self._adopted_cards = tuple(adopted_cards)
        self._on_stream_cards = on_stream_cards
        self._open_cards_told: list[Card] = []
        self._outbox = outbox
        self._intent_recorded = False
        self._target = target
        self._live = live
        self._streams = live and stream  # a chat thread's live reply: streamed unless Slack refuses
        self._progress = progress
        self._status = status
        self._min_interval = min_interval
        self._clock = clock
        self._on_posted = on_posted
        self.ts: str | None = None
        self._mode = ReplyMode.NOT_STARTED if self._streams else ReplyMode.MESSAGE
        self._stream_text = ""  # what the stream shows of the text
        self._stream_cards: dict[str, Card] = {}  # what the stream shows of each card
        # The view the message shows since its last post or update; None: rewrite it whole.
        self._message_view: tuple[Any, ...] | None = None
        # Slack refused cards in this reply (or in the turn's progress): it shows the line instead.
        self._cards_refused = progress is not None and not progress.cards_shown
        self._queue: list[Write] = []
        self._queue_closed = False  # end() was called: later writes are dropped
        self._drain: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self._calling_slack = False  # the drain is making a queued write (it is let finish)
        self._writes_made = 0  # Slack calls this reply made that Slack took
        self._last_write_at = float("-inf")
        self._blocks_made = 0
        self._closing_blocks: list[dict[str, Any]] = []  # shown under the last write (feedback buttons)
        self._latest_text = ""  # the text API's latest text
        if existing_ts is not None:
            self.ts, self._mode = existing_ts, ReplyMode.TAKEN_OVER

    @property
    def mode(self) -> ReplyMode:
        return self._mode

    def _move_to(self, mode: ReplyMode) -> None:
        check_move(self._mode, mode)
        self._mode = mode

    @property
    def metadata(self) -> dict[str, Any]:
        return reply_metadata(self._target.reply_key)

    @property
    def wrote(self) -> bool:
        """Whether this reply has written anything to Slack."""
        return self._writes_made > 0

    # -- progress writes ----------------------------------------------------------------------------

    async def begin(self) -> None:
        """The turn starts: the assistant status goes up before the thread has any reply."""
        if self._status is not None:
            await self._status.working()

    def write(self, writes: Sequence[Write]) -> None:
        """Takes progress writes (not the last: see ``end``); Slack is written when the throttle allows."""
        if not self._live or self._queue_closed:
            return
        for write in writes:
            if write.kind is WriteKind.STOP:
                raise ValueError("the last write goes to end()")
            # A first post keeps its own view (the post cannot carry cards); later writes coalesce.
            if self._queue and self._queue[-1].kind is not WriteKind.START:
                self._queue[-1] = _merged(self._queue[-1], write)
            else:
                self._queue.append(write)
        if self._queue and (self._drain is None or self._drain.done()):
            self._drain = asyncio.create_task(self._drain_queue())

    async def settled(self) -> None:
        """Waits until the writes asked for so far are made (tests, and callers that must know)."""
        while self._drain is not None and not self._drain.done():
            await asyncio.wait({self._drain})

    async def end(
        self,
        writes: Sequence[Write],
        *,
        notice_follows: bool = False,
        closing_blocks: Sequence[dict[str, Any]] = (),
    ) -> None:
        """Makes the last write (a progress STOP; none when there is nothing to show) and clears the
        assistant status. With ``notice_follows``, a reply that wrote nothing stays unwritten: the
        notice is the turn's only message (a reply taken over is only stopped, if it still streams).
        ``closing_blocks`` go under the last write's content (an answer's feedback buttons)."""
        if self._mode is ReplyMode.ENDED:
            return
        self._queue_closed = True
        try:
            await self._stop_draining()
            self._queue.clear()
            self._closing_blocks = list(closing_blocks)  # after the drain: only the last write shows them
            async with self._lock:
                if notice_follows and not self.wrote:
                    await self._stop_adopted_stream(ending=Ending.FAILED)
                elif writes:
                    await self._render(writes[-1], final=True)
        except Exception:
            await self._stop_stream_left_open()
            raise
        finally:
            if self._mode is not ReplyMode.ENDED:  # another end() may have ended it meanwhile
                self._move_to(ReplyMode.ENDED)
            if self._status is not None:
                await self._status.clear()

    # -- plain text ---------------------------------------------------------------------------------

    async def show(self, text: str) -> None:
        """Asks for the reply to show text; the write happens now or when the throttle allows."""
        self._latest_text = text
        if text:
            self.write([Write(WriteKind.UPDATE, View(None, (), text, text), text_changed=True)])

    async def finish(self, text: str, *, closing_blocks: Sequence[dict[str, Any]] = ()) -> None:
        """Writes the final text and ends the stream; an empty answer shows (no output)."""
        self._latest_text = text
        text = text or NO_OUTPUT_TEXT
        await self.end(
            [Write(WriteKind.STOP, View(None, (), text, text), text_changed=True)],
            closing_blocks=closing_blocks,
        )

    async def stop(self) -> None:
        """Ends the reply with the text it has so far (a failure notice follows as a message of its own)."""
        text = self._latest_text
        if not self._live or not (text or self._mode is ReplyMode.STREAMING):
            await self.end([])
            return
        await self.end([Write(WriteKind.STOP, View(None, (), text, text))])

    # -- the queue ----------------------------------------------------------------------------------

    async def _drain_queue(self) -> None:
        while self._queue and not self._queue_closed:
            delay = max(0.0, self._last_write_at + self._min_interval - self._clock())
            if delay > 0:
                await asyncio.sleep(delay)
            async with self._lock:
                if self._queue_closed or not self._queue:
                    return
                write = self._queue.pop(0)
                self._calling_slack = True
                try:
                    made = self._writes_made
                    await self._render(write, final=False)
                    if self._status is not None and self._writes_made > made:
                        await self._status.working()  # after each write but the last
                except Exception as exc:
                    # The next write shows the latest view, this one's included; the last one raises.
                    logger.warning(
                        "slack.reply_write_failed",
                        extra={"error": error_name(exc), "channel": self._target.channel_id},
                    )
                finally:
                    self._calling_slack = False

    async def _stop_draining(self) -> None:
        """Drops writes that wait for the throttle; one already talking to Slack is let finish, since
        cancelling it could leave a message Slack made that this reply would not know about."""
        task = self._drain
        if task is None or task.done():
            return
        if not self._calling_slack:
            task.cancel()
        await asyncio.wait({task})

    # -- rendering ----------------------------------------------------------------------------------

    def _neutralized(self, write: Write) -> Write:
        """The write with what the agent and its tools wrote made safe for Slack (mrkdwn.neutralize),
        whole each time, so that a stream only ever appends to neutralized text."""

        def safe(text: str) -> str:
            return neutralize(text, allow_user_mentions=self._allow_user_mentions)

        def safe_card(card: Card) -> Card:
            return replace(card, title=safe(card.title), output=card.output and safe(card.output))

        view = write.view
        return replace(
            write,
            view=View(
                view.line and safe(view.line),
                tuple(safe_card(card) for card in view.cards),
                safe(view.text),
                safe(view.fallback),
            ),
            changed=tuple(safe_card(card) for card in write.changed),
        )

    def note_not_kept(self, characters: int) -> None:
        """The runner kept only the answer's start (bounded memory): ``characters`` more were sent by
        the agent; they count in the cut line."""
        self._not_kept = characters

    def _parts(self, text: str) -> list[str]:
        """The answer's messages: at most ``max_messages``, the last ending with the cut line when
        the answer did not fit."""
        parts = split_for_messages(text)
        if len(parts) <= self._max_messages and not self._not_kept:
            return parts
        total = len(text) + self._not_kept
        parts = parts[: self._max_messages]
        # The cut line's own length, with the largest count it can show: the last part makes room for it.
        room = (
            MESSAGE_TEXT_LIMIT
            - len(ANSWER_CUT_LINE.format(messages=self._max_messages, characters=total))
            - 2
        )
        parts[-1] = parts[-1][:room]
        not_posted = max(total - sum(len(part) for part in parts), 0)
        parts[-1] += "\n\n" + ANSWER_CUT_LINE.format(messages=self._max_messages, characters=not_posted)
        return parts

    async def _render(self, write: Write, *, final: bool) -> None:
        if self._mode is ReplyMode.TAKEN_OVER and self._progress is not None and not final:
            # The message an earlier runner began is rewritten whole with what the turn shows now: the
            # task's events so far come at once, and an activity count they change inside the throttle
            # window writes nothing of its own (progress.py), so the write asked first is behind them.
            write = replace(write, view=self._progress.view())
        if self._cards_refused and write.view.cards:
            write = self._refuse_cards(write, None)
        write = self._neutralized(write)
        rest: list[str] = []
        if final:
            head, *rest = self._parts(write.view.text)
            write = replace(write, view=replace(write.view, text=head))
        if self.ts is None:
            await self._record_intent()
        if final and self._mode is ReplyMode.NOT_STARTED:
            self._move_to(ReplyMode.MESSAGE)  # its first write to show is its last: posted whole
        streams = self._mode in (ReplyMode.NOT_STARTED, ReplyMode.STREAMING)
        if not streams or not await self._render_stream(write, final):
            await self._render_message(write)
        for number, part in enumerate(rest, start=2):
            self._last_write_at = self._clock()
            await post_once(
                self._client,
                self._target.channel_id,
                self._target.thread_ts,
                key=part_key(self._target.reply_key, number),
                kind=PostKind.PART,
                metadata=part_metadata(self._target.reply_key, number),
                outbox=self._outbox,
                markdown_text=part,
            )
            self._writes_made += 1

    async def _record_intent(self) -> None:
        """Records the reply's message as intended before its first post or stream; a message an
        earlier attempt made (confirmed, or found in the thread) is taken over instead."""
        if self._outbox is None or self._intent_recorded:
            return
        self._intent_recorded = True
        earlier = await intend_reply(
            self._client,
            self._outbox,
            self._target.reply_key,
            self._target.channel_id,
            self._target.thread_ts,
            streams=self._streams,
        )
        if earlier is None:
            return
        logger.info(
            "slack.reply_taken_over", extra={"state": earlier.state.value, "channel": self._target.channel_id}
        )
        # Like a reply an earlier runner began: ended if it still streams, then rewritten.
        self.ts = earlier.ts
        self._move_to(ReplyMode.TAKEN_OVER)
        await self._posted()

    def _refuse_cards(self, write: Write, error: str | None) -> Write:
        """Cards are off for this reply from now on: the same write again, showing the line instead."""
        if error is not None:
            logger.info("slack.cards_refused", extra={"error": error, "channel": self._target.channel_id})
        self._cards_refused = True
        if self._progress is not None:
            [again] = self._progress.cards_refused(write)
            return self._neutralized(
                replace(write, view=replace(again.view, text=write.view.text), changed=())
            )
        return replace(write, view=_without_cards(write.view), changed=())

    async def _render_stream(self, write: Write, final: bool) -> bool:
        """Shows the write through the stream; False when the reply must go on with post + update."""
        view = write.view
        text = view.text[:MESSAGE_TEXT_LIMIT]
        cards = self._stream_card_changes(view, final)
        chunks = [task_update_chunk(card) for card in cards]
        try:
            if self._mode is ReplyMode.NOT_STARTED:
                if text:
                    chunks.append(markdown_chunk(text))
                if not chunks:
                    return True  # nothing a stream can show yet (a plain-text stream shows no line)
                await self._tell_open_cards(cards)
                response = await self._call(
                    "chat_startStream",
                    channel=self._target.channel_id,
                    thread_ts=self._target.thread_ts,
                    recipient_user_id=self._target.recipient_user_id,
                    recipient_team_id=self._target.recipient_team_id,
                    chunks=chunks,
                )
                self.ts, self._stream_text = response["ts"], text
                self._move_to(ReplyMode.STREAMING)
                self._remember(cards)
                await self._posted()
                return True
            delta = text[len(self._stream_text) :] if text.startswith(self._stream_text) else ""
            if delta:
                chunks.append(markdown_chunk(delta))
            if not final:
                if chunks:
                    await self._tell_open_cards(cards)
                    await self._call(
                        "chat_appendStream", channel=self._target.channel_id, ts=self.ts, chunks=chunks
                    )
                    self._stream_text += delta
                    self._remember(cards)
                return True
            extra: dict[str, Any] = {}
            if view.line and not view.cards:  # a plain-text stream shows its last line below the text
                extra["blocks"] = [line_block(view.line, self._block_prefix() + "-line")]
            if self._closing_blocks:  # chat.stopStream shows blocks at the bottom of the finished message
                extra["blocks"] = [*extra.get("blocks", []), *self._closing_blocks]
            await self._call(
                "chat_stopStream",
                channel=self._target.channel_id,
                ts=self.ts,
                chunks=chunks,
                metadata=self.metadata,
                **extra,
            )
            self._move_to(ReplyMode.MESSAGE)
            self._stream_text += delta
            self._remember(cards)
        except SlackOutcomeUnknown:
            if self._mode is not ReplyMode.STREAMING:
                raise
            await self._give_up_stream()
            return False
        except SlackApiError as exc:
            error = exc.response.get("error", "")
            if error in CARDS_REFUSED_ERRORS and cards:
                return await self._render_stream(self._refuse_cards(write, error), final)
            if error in STREAM_REFUSED_ERRORS and self._mode is ReplyMode.NOT_STARTED:
                logger.info(
                    "slack.stream_refused", extra={"error": error, "channel": self._target.channel_id}
                )
                self._move_to(ReplyMode.MESSAGE)
                return False
            if error in STREAM_ENDED_ERRORS and self._mode is ReplyMode.STREAMING:
                logger.info("slack.stream_ended", extra={"error": error, "channel": self._target.channel_id})
                self._move_to(ReplyMode.MESSAGE)
                self._message_view = None  # the message shows what the stream had: rewrite it whole
                return False
            raise
        # Stopped: the message is written with chat.update from now on.
        await self._tell_open_cards()
        if self._stream_text != text or not self._stream_shows(view):
            # The stream could not show it all (the text was rewritten): rewrite the message.
            await self._render_message(write)
        return True

    def _stream_card_changes(self, view: View, final: bool) -> list[Card]:
        """The cards to send: new or changed since the stream showed them, and at the end a closing
        one for every card the stream shows as under way (Slack shows an open card as an error)."""
        if self._cards_refused:
            return []  # refused: not even the closing chunks would be taken
        changes: list[Card] = []
        known = len(self._stream_cards)
        for card in view.cards:
            shown = self._stream_cards.get(card.id)
            if shown == card:
                continue
            if shown is None:
                if known >= STREAM_CARD_LIMIT:
                    continue
                known += 1
            changes.append(card)
        if final:
            in_view = {card.id for card in view.cards}
            for card in self._stream_cards.values():
                if card.status is CardStatus.IN_PROGRESS and card.id not in in_view:
                    changes.append(replace(card, status=CardStatus.COMPLETE))
        return changes

    def _stream_shows(self, view: View) -> bool:
        """Whether the stream holds every card of the view as the view has it."""
        return all(self._stream_cards.get(card.id) == card for card in view.cards)

    def _remember(self, cards: list[Card]) -> None:
        for card in cards:
            self._stream_cards[card.id] = card

    async def _tell_open_cards(self, sending: Sequence[Card] = ()) -> None:
        """Tells ``on_stream_cards`` the cards the stream shows under way once ``sending`` is shown,
        when they changed. Told before a write that opens cards (a runner killed during it leaves
        them known) and after the one that closes them."""
        if self._on_stream_cards is None:
            return
        shown = {**self._stream_cards, **{card.id: card for card in sending}}
        open_cards = [card for card in shown.values() if card.status is CardStatus.IN_PROGRESS]
        if open_cards != self._open_cards_told:
            self._open_cards_told = open_cards
            await self._on_stream_cards(open_cards)

    async def _render_message(self, write: Write) -> None:
        """Shows the write as a message: posted the first time, then updated."""
        view = write.view
        content = self._content(view)
        if content is None or (self.ts is not None and self._message_view == _view_key(view)):
            return
        try:
            if self.ts is None:
                response = await self._call(
                    "chat_postMessage",
                    channel=self._target.channel_id,
                    thread_ts=self._target.thread_ts,
                    metadata=self.metadata,
                    **content,
                )
                self.ts = response["ts"]
                self._message_view = _view_key(view)
                await self._posted()
            else:
                await self._stop_adopted_stream()
                # The key goes with every rewrite: a message taken over from a stream may not have it
                # yet, and a lost post or stream start is looked for among messages without one.
                await self._call(
                    "chat_update",
                    channel=self._target.channel_id,
                    ts=self.ts,
                    metadata=self.metadata,
                    **content,
                )
                self._message_view = _view_key(view)
        except SlackApiError as exc:
            error = exc.response.get("error", "")
            if error in CARDS_REFUSED_ERRORS and view.cards:
                await self._render_message(self._refuse_cards(write, error))
                return
            raise

    def _content(self, view: View) -> dict[str, Any] | None:
        """A message's arguments for a view: plain markdown_text, or blocks with the fallback text."""
        text = view.text[:MESSAGE_TEXT_LIMIT]
        if not view.line and not view.cards and not self._closing_blocks:
            return {"markdown_text": text} if text else None
        prefix = self._block_prefix()
        line, cards = view.line, view.cards
        if len(cards) > MESSAGE_CARD_LIMIT:
            line, cards = hidden_line(len(cards) - MESSAGE_CARD_LIMIT), cards[-MESSAGE_CARD_LIMIT:]
        blocks = [line_block(line, f"{prefix}-line")] if line else []
        blocks += [task_card_block(card, f"{prefix}-{index}") for index, card in enumerate(cards)]
        if text.strip():
            blocks.append({"type": "markdown", "block_id": f"{prefix}-text", "text": text})
        blocks += self._closing_blocks
        fallback = view.fallback or line or (cards[-1].title if cards else "") or text
        return {"blocks": blocks, "text": _shorten(fallback, FALLBACK_TEXT_LIMIT)}

    def _block_prefix(self) -> str:
        # Slack asks for new block_ids on each update, unique within the message.
        self._blocks_made += 1
        return f"k{self._blocks_made}"

    async def _stop_adopted_stream(self, *, ending: Ending | None = None) -> None:
        """A reply taken over may still stream: end it (keeping its text) before it is rewritten, or,
        ``ending`` the turn without rewriting it, with the cards it shows under way ended that way."""
        if self._mode is not ReplyMode.TAKEN_OVER:
            return
        self._move_to(ReplyMode.MESSAGE)
        if not self._streams:
            return  # an alert thread's reply never streams
        chunks = []
        if ending is not None and not self._cards_refused:
            chunks = [task_update_chunk(ended_card(card, ending)) for card in self._adopted_cards]
        try:
            await self._call("chat_stopStream", channel=self._target.channel_id, ts=self.ts, chunks=chunks)
        except SlackApiError as exc:
            if exc.response.get("error") not in STREAM_ENDED_ERRORS:
                raise

    async def _stop_stream_left_open(self) -> None:
        """The last write failed: a stream still open is stopped with the text it has, every card it
        shows under way ended as a failed turn's, so nothing is left streaming. Best effort: the
        failure that got here is what the caller hears of."""
        if self._mode is not ReplyMode.STREAMING:
            return
        open_cards = [card for card in self._stream_cards.values() if card.status is CardStatus.IN_PROGRESS]
        chunks = (
            [task_update_chunk(ended_card(card, Ending.FAILED)) for card in open_cards]
            if not self._cards_refused
            else []
        )
        try:
            await self._call(
                "chat_stopStream",
                channel=self._target.channel_id,
                ts=self.ts,
                chunks=chunks,
                metadata=self.metadata,
            )
        except Exception as exc:
            logger.warning(
                "slack.stream_left_open",
                extra={"error": error_name(exc), "channel": self._target.channel_id},
            )
        else:
            self._move_to(ReplyMode.MESSAGE)

    async def _give_up_stream(self) -> None:
        """An append whose answer was lost may show or not: stop the stream, so that the message can
        be rewritten whole with ``chat.update`` (which shows the same however often it is sent)."""
        logger.info("slack.stream_given_up", extra={"channel": self._target.channel_id})
        try:
            await self._call(
                "chat_stopStream",
                channel=self._target.channel_id,
                ts=self.ts,
                chunks=[],
                metadata=self.metadata,
            )
        except SlackApiError as exc:
            if exc.response.get("error") not in STREAM_ENDED_ERRORS:
                raise
        self._move_to(ReplyMode.MESSAGE)
        self._message_view = None

    async def _posted(self) -> None:
        if self.ts is None:
            return
        if self._outbox is not None:
            await self._outbox.confirm(self._target.reply_key, self.ts)
        if self._on_posted is not None:
            await self._on_posted(self.ts)

    async def _call(self, method: str, **kwargs: Any):
        self._last_write_at = self._clock()
        response = await getattr(self._client, method)(**kwargs)
        self._writes_made += 1
        return response
