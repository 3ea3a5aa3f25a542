"""What one turn shows in its thread while it runs: its reply (kourier/slack/writer.py), fed the agent's
events through the turn's ``Progress`` (kourier/progress/) on a clock of the worker's event loop."""

import asyncio

from kourier import metrics
from kourier.a2a.events import AgentEvent, TextDelta
from kourier.db import in_database_thread
from kourier.progress import Card, CardStatus, Ending, Progress, ThreadKind
from kourier.slack.agent_sessions import AgentSession
from kourier.slack.blocks import feedback_block, stop_block
from kourier.slack.status import AssistantStatus
from kourier.slack.writer import MESSAGE_TEXT_LIMIT, ReplyTarget, SlackReply

from . import stops, turns
from .outbox import TurnOutbox


class TurnDisplay:
    """What one turn shows in its thread while it runs.

    With output: live, every normalized event goes to the turn's ``Progress`` and its writes to the
    Slack reply; an asyncio timer at ``progress.deadline`` calls ``tick()`` (the Working… card or line,
    an alert thread's deferred update), re-armed after every event and tick. With output: final,
    nothing is shown until ``end`` posts the answer.
    """

    def __init__(
        self,
        reply: SlackReply,
        progress: Progress | None,
        *,
        max_messages: int,
        agent_session: AgentSession | None = None,
    ) -> None:
        self.reply = reply
        self.progress = progress
        self.agent_session = agent_session
        self.text = ""
        # The answer's text is kept up to a message past what the reply may post, never more: a
        # runaway answer costs the worker no more memory than that (the writer cuts and says so).
        self.text_limit = (max_messages + 1) * MESSAGE_TEXT_LIMIT
        self.received = 0  # characters of the answer the agent sent
        self.closing_blocks: list[dict] = []  # under a completed answer: its feedback buttons (spec.feedback)
        self._timer: asyncio.TimerHandle | None = None
        self._ended = False

    async def begin(self) -> None:
        if self.agent_session is not None and await self.agent_session.processing():
            self.reply.drop_working_blocks()  # Slack shows its own stop: one control, not two
        await self.reply.begin()
        self._arm()

    def feed(self, event: AgentEvent) -> None:
        if isinstance(event, TextDelta):
            self.received = len(event.text) if event.replace else self.received + len(event.text)
            room = self.text_limit - (0 if event.replace else len(self.text))
            event = TextDelta(event.text[: max(room, 0)], replace=event.replace)
            self.text = event.text if event.replace else self.text + event.text
            self.reply.note_not_kept(self.received - len(self.text))
        if self.progress is not None and not self._ended:
            self.reply.write(self.progress.feed(event))
            self._arm()

    async def end(self, outcome: Ending, *, notice_follows: bool = False) -> None:
        """Ends the reply: the last write, with every card closed as ``outcome`` says."""
        if self._ended:
            return
        self._ended = True
        self.close()
        try:
            await self._end_reply(outcome, notice_follows)
        finally:
            if self.agent_session is not None:
                await self.agent_session.active()

    async def _end_reply(self, outcome: Ending, notice_follows: bool) -> None:
        if self.progress is None:
            if outcome is Ending.COMPLETED:
                await self.reply.finish(self.text, closing_blocks=self.closing_blocks)
            else:
                await self.reply.stop()
            return
        closing = self.closing_blocks if outcome is Ending.COMPLETED else ()
        await self.reply.end(
            self.progress.finish(outcome), notice_follows=notice_follows, closing_blocks=closing
        )

    async def before_a_post(self) -> None:
        """Lets a message of the turn's own (a prompt) be posted before the reply ends, so that the
        reply ends as the post turned out: the clock stopped, and a reply that has no message yet
        makes the writes asked for so far, so that it comes first in the thread."""
        self.close()
        if self.reply.ts is None:
            await self.reply.settled()

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _arm(self) -> None:
        self.close()
        if self.progress is None or self._ended:
            return
        deadline = self.progress.deadline
        if deadline is not None:
            # The progress clock is the loop's (see display_for), so its deadline is a loop time.
            self._timer = asyncio.get_running_loop().call_at(deadline, self._on_deadline)

    def _on_deadline(self) -> None:
        self._timer = None
        if self.progress is None or self._ended:
            return
        self.reply.write(self.progress.tick())
        self._arm()


def display_for(work: turns.TurnWork, slack, turn_id: int) -> TurnDisplay:
    """The display of the turn ``work`` describes: its reply in the thread, live or final, streamed or
    posted, with the status and the cards a chat or an alert thread shows."""
    thread = work.thread_kind
    progress = Progress(work.progress, thread, clock=asyncio.get_running_loop().time) if work.live else None
    status = None
    # The chat-thread rule against a status does not hold in a direct message: the agent surface is
    # built for it (docs/slack-direct-messages.md).
    if work.direct or (progress is not None and progress.uses_assistant_status):
        status = AssistantStatus(
            slack, work.channel_id, work.thread_ts, connection_key=str(work.connection_id)
        )
    chat = thread is ThreadKind.CHAT
    session = None
    if work.agent_sessions:
        session = AgentSession(slack, work.channel_id, work.thread_ts, connection_key=str(work.connection_id))
    reply = SlackReply(
        slack,
        ReplyTarget(
            channel_id=work.channel_id,
            thread_ts=work.thread_ts,
            # A chat thread's stream is shown to the person who wrote; an alert thread has no one to
            # show a stream to, so its reply is posted and updated.
            recipient_user_id=(work.user_id or None) if chat else None,
            recipient_team_id=(work.team_id or None) if chat else None,
            reply_key=work.message_id,
        ),
        live=work.live,
        stream=chat,
        progress=progress,
        status=status,
        existing_ts=work.reply_ts or None,
        on_posted=_ReplyPosted(work),
        outbox=TurnOutbox(turn_id, reply_key=work.message_id),
        adopted_cards=[Card(card_id, title, CardStatus.IN_PROGRESS) for card_id, title in work.stream_cards],
        on_stream_cards=lambda cards: in_database_thread(turns.record_stream_cards)(
            turn_id, [{"id": card.id, "title": card.title} for card in cards]
        ),
        allow_user_mentions=work.allow_user_mentions,
        max_messages=work.max_messages,
        # A posted and updated reply carries the Stop button while the turn runs; a stream cannot.
        working_blocks=[stop_block(turn_id, stops.STOP_ACTION)],
        on_stopped_by_user=_StoppedInSlack(work, session) if chat else None,
    )
    display = TurnDisplay(reply, progress, max_messages=work.max_messages, agent_session=session)
    if work.feedback:
        display.closing_blocks = [feedback_block(work.turn_id)]
    return display


class _StoppedInSlack:
    """Slack's own stop on a chat thread's stream (``stopped_by_user``): only the person the stream
    is shown to has it, so the turn is stopped as theirs (sessions/stops.py). Where the thread's agent
    session shows Slack's stop control, the press comes as agent_session_stopped too, naming whoever
    pressed: that stops the turn, not the stream's word."""

    def __init__(self, work: turns.TurnWork, session: AgentSession | None) -> None:
        self.work = work
        self.session = session

    async def __call__(self) -> None:
        if self.session is not None and self.session.shows_stop:
            return
        await in_database_thread(stops.request_stop)(
            self.work.turn_id,
            connection_id=self.work.connection_id,
            channel_id=self.work.channel_id,
            user_id=self.work.user_id,
            control=stops.SLACK_STREAM_STOP,
        )


class _ReplyPosted:
    """Measures how long the thread waited to see the reply (not for a resumed turn: its reply may
    have been shown by the runner before). The reply's ts is kept with its confirmation in the outbox."""

    def __init__(self, work: turns.TurnWork) -> None:
        self.work = work
        self.measured = work.resumed

    async def __call__(self, ts: str) -> None:
        if not self.measured:
            self.measured = True
            metrics.turn_output_shown(self.work.binding_name, self.work.accepted_at)
