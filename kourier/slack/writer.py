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
``STREAM_CARD_LIMIT`` cards (about 50 fit in one streamed message, docs/slack-platform.md §1.2,
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

Under Slack's budgets a reply has a plan, chosen when it first shows something and kept
(reply_plans.py): a stream while the workspace's stream starts are free, else a post then updates,
else one post when final (its earlier writes dropped). Writes before the last wait at most a moment
for their budget's slot and are otherwise kept and merged into the next (``SlackBudgetDeferred``);
the last write, a stream's stop and the search for an earlier attempt's post wait their turn.

Slack's assistant status (``AssistantStatus``) is set by the reply when it begins and after each
write but the last, and cleared when it ends.

The reply is in one mode at a time (``ReplyMode``), and the moves it may make are one table
(``REPLY_MOVES``): reply_modes.py. What its messages hold (a view's blocks, an answer's parts, the
agent's text made safe) is reply_content.py, pure.

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
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from kourier.progress import Card, CardStatus, Ending, Progress, View, Write, WriteKind, ended_card

from .blocks import line_block, markdown_chunk, task_update_chunk
from .clients import patience
from .faults import SlackBudgetDeferred, SlackOutcomeUnknown, error_name, retry_after_of
from .outbox import Outbox, PostKind, intend_reply, part_key, part_metadata, post_once, reply_metadata
from .reply_content import (
    DEFAULT_MAX_MESSAGES,
    MESSAGE_TEXT_LIMIT,
    NO_OUTPUT_TEXT,
    answer_parts,
    merged,
    message_content,
    neutralized,
    view_key,
    without_cards,
)
from .reply_modes import ReplyMode, check_move
from .reply_plans import (
    FINAL_WRITE_WAIT_SECONDS,
    INTERMEDIATE_WRITE_WAIT_SECONDS,
    ReplyPlan,
    message_plan,
    plans_enabled,
    record_plan,
    recorded_plan,
    stream_wait,
    updates_before_the_last,
)
from .status import AssistantStatus

logger = logging.getLogger(__name__)

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


@dataclass(frozen=True)
class ReplyTarget:
    channel_id: str
    thread_ts: str
    recipient_user_id: str | None  # the person who wrote: Slack shows a chat thread's stream to them
    recipient_team_id: str | None
    reply_key: str  # the product's key of this reply, kept in the message's metadata


# --- the reply -----------------------------------------------------------------------------------


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
        working_blocks: Sequence[dict[str, Any]] = (),
        on_stopped_by_user: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._client = client
        # Shown under every write but the last of a posted and updated reply (the Working… card's
        # Stop button, sessions/stops.py); a stream cannot carry blocks until it is stopped.
        self._working_blocks = list(working_blocks)
        # Told when Slack says the person pressed the stream's own stop (``stopped_by_user``).
        self._on_stopped_by_user = on_stopped_by_user
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
        self._plan: ReplyPlan | None = None  # how it is shown under Slack's budgets (reply_plans.py)
        self._plans = plans_enabled(client)
        self._not_before = float("-inf")  # a write kept for want of a slot is tried again then
        self._updates_made: list[float] = []  # an updated reply's updates before its last (when)
        if existing_ts is not None:
            self.ts, self._mode = existing_ts, ReplyMode.TAKEN_OVER

    @property
    def mode(self) -> ReplyMode:
        return self._mode

    @property
    def plan(self) -> ReplyPlan | None:
        return self._plan

    def _patience(self, seconds: float) -> contextlib.AbstractContextManager[None]:
        """How long the calls inside wait for their budget's slot: ``seconds`` when replies plan by
        the budgets, else the client's own bound."""
        return patience(seconds) if self._plans else contextlib.nullcontext()

    def _must_go(self) -> contextlib.AbstractContextManager[None]:
        """For a call that must not be put off (the last write, a stream's stop): it waits its turn."""
        return self._patience(FINAL_WRITE_WAIT_SECONDS)

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

    def drop_working_blocks(self) -> None:
        """The reply shows no blocks under its Working… card (Slack's own stop control shows instead)."""
        self._working_blocks = []

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
                self._queue[-1] = merged(self._queue[-1], write)
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
                    with self._must_go():
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
            now = self._clock()
            delay = max(0.0, self._last_write_at + self._min_interval - now, self._not_before - now)
            if delay > 0:
                await asyncio.sleep(delay)
            async with self._lock:
                if self._queue_closed or not self._queue:
                    return
                if room := self._room_for_an_update():
                    self._not_before = self._clock() + room  # the write stays queued, merging later ones
                    continue
                write = self._queue.pop(0)
                self._calling_slack = True
                try:
                    made, updating = (
                        self._writes_made,
                        self._plan is ReplyPlan.UPDATES and self.ts is not None,
                    )
                    with self._patience(INTERMEDIATE_WRITE_WAIT_SECONDS):
                        await self._render(write, final=False)
                    if updating and self._writes_made > made:
                        self._updates_made.append(self._clock())
                    if self._status is not None and self._writes_made > made:
                        await self._status.working()  # after each write but the last
                except SlackBudgetDeferred as exc:
                    # No slot soon: the write is kept, merged with any later one, and tried again once
                    # a slot may be free; the more replies share the budget, the longer each coalesces.
                    self._queue[:1] = [merged(write, self._queue[0])] if self._queue else [write]
                    self._not_before = self._clock() + (retry_after_of(exc) or self._min_interval)
                except Exception as exc:
                    # The next write shows the latest view, this one's included; the last one raises.
                    logger.warning(
                        "slack.reply_write_failed",
                        extra={"error": error_name(exc), "channel": self._target.channel_id},
                    )
                finally:
                    self._calling_slack = False

    def _room_for_an_update(self) -> float:
        """Seconds until an updated reply may make another update before its last (0: now): a few
        in any span of the update budget's window, so that its last finds a slot at once."""
        if self._plan is not ReplyPlan.UPDATES or self.ts is None or not self._plans:
            return 0.0
        most, span = updates_before_the_last()
        now = self._clock()
        self._updates_made = [at for at in self._updates_made if at > now - span]
        return 0.0 if len(self._updates_made) < most else self._updates_made[0] + span - now

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
        return neutralized(write, allow_user_mentions=self._allow_user_mentions)

    def note_not_kept(self, characters: int) -> None:
        """The runner kept only the answer's start (bounded memory): ``characters`` more were sent by
        the agent; they count in the cut line."""
        self._not_kept = characters

    def _parts(self, text: str) -> list[str]:
        return answer_parts(text, max_messages=self._max_messages, not_kept=self._not_kept)

    async def _render(self, write: Write, *, final: bool) -> None:
        if self._mode is ReplyMode.TAKEN_OVER and self._progress is not None and not final:
            # The message an earlier runner began is rewritten whole with what the turn shows now: the
            # task's events so far come at once, and an activity count they change inside the throttle
            # window writes nothing of its own (progress.py), so the write asked first is behind them.
            write = replace(write, view=self._progress.view())
        if self.ts is None and self._plan is None and self._mode is not ReplyMode.TAKEN_OVER:
            await self._choose_plan(final)
        if self._plan is ReplyPlan.FINAL and not final:
            return  # posted once, when final
        if self._cards_refused and write.view.cards:
            write = self._refuse_cards(write, None)
        write = self._neutralized(write)
        rest: list[str] = []
        if final:
            head, *rest = self._parts(write.view.text)
            write = replace(write, view=replace(write.view, text=head))
        if self.ts is None:
            with self._must_go():  # a search for an earlier attempt's post is not to be put off
                await self._record_intent()
        if final and self._mode is ReplyMode.NOT_STARTED:
            self._move_to(ReplyMode.MESSAGE)  # its first write to show is its last: posted whole
        streams = self._mode in (ReplyMode.NOT_STARTED, ReplyMode.STREAMING)
        if not streams or not await self._render_stream(write, final):
            if self._plan is ReplyPlan.FINAL and not final:
                return  # its stream start was not free: it is posted once, when final
            await self._render_message(write, final=final)
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

    async def _choose_plan(self, final: bool) -> None:
        """Chooses how the reply is shown, the first time it would show something (reply_plans.py):
        a plan recorded by an earlier runner is kept; a stream is tried when its start is made."""
        if final:  # its first write to show is its last: posted whole, nothing to keep for a restart
            self._plan = ReplyPlan.FINAL
            if self._mode is ReplyMode.NOT_STARTED:
                self._move_to(ReplyMode.MESSAGE)
            return
        recorded = await recorded_plan(self._target.reply_key) if self._plans else None
        if recorded in (ReplyPlan.UPDATES, ReplyPlan.FINAL):
            plan = recorded
        elif self._mode is ReplyMode.NOT_STARTED:
            self._plan = ReplyPlan.STREAM  # the stream start decides (_render_stream)
            return
        else:
            plan = await message_plan(self._client) if self._plans else ReplyPlan.UPDATES
        await self._take_plan(plan, recorded=recorded)

    async def _take_plan(self, plan: ReplyPlan, *, recorded: ReplyPlan | None = None) -> None:
        self._plan = plan
        if self._mode is ReplyMode.NOT_STARTED:
            self._move_to(ReplyMode.MESSAGE)
        if self._plans and plan is not recorded:
            await record_plan(self._target.reply_key, plan)
        logger.info("slack.reply_plan", extra={"plan": plan.value, "channel": self._target.channel_id})

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
        return replace(write, view=without_cards(write.view), changed=())

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
                try:
                    with self._patience(stream_wait()):
                        response = await self._call(
                            "chat_startStream",
                            channel=self._target.channel_id,
                            thread_ts=self._target.thread_ts,
                            recipient_user_id=self._target.recipient_user_id,
                            recipient_team_id=self._target.recipient_team_id,
                            chunks=chunks,
                        )
                except SlackBudgetDeferred:
                    # The workspace's stream starts are spent for now: posted and updated, or final.
                    await self._take_plan(await message_plan(self._client))
                    return False
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
                if error == "stopped_by_user" and self._on_stopped_by_user is not None:
                    await self._on_stopped_by_user()
                return False
            raise
        # Stopped: the message is written with chat.update from now on.
        await self._tell_open_cards()
        if self._stream_text != text or not self._stream_shows(view):
            # The stream could not show it all (the text was rewritten): rewrite the message.
            await self._render_message(write, final=final)
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

    async def _render_message(self, write: Write, *, final: bool = True) -> None:
        """Shows the write as a message: posted the first time, then updated."""
        view = write.view
        working = not final and bool(self._working_blocks)
        content = self._content(view, working=working)
        shown = (*view_key(view), working)  # the last write takes the Stop button away, same view or not
        if content is None or (self.ts is not None and self._message_view == shown):
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
                self._message_view = shown
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
                self._message_view = shown
        except SlackApiError as exc:
            error = exc.response.get("error", "")
            if error in CARDS_REFUSED_ERRORS and view.cards:
                await self._render_message(self._refuse_cards(write, error), final=final)
                return
            raise

    def _content(self, view: View, *, working: bool = False) -> dict[str, Any] | None:
        under = self._working_blocks if working else self._closing_blocks
        return message_content(view, closing_blocks=under, block_prefix=self._block_prefix)

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
            with self._must_go():
                await self._call(
                    "chat_stopStream", channel=self._target.channel_id, ts=self.ts, chunks=chunks
                )
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
            with self._must_go():
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
            with self._must_go():
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
