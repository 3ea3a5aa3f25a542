"""Which Slack messages become turns: the routing rules of "A thread is a session", as pure logic."""

import enum
from dataclasses import dataclass

from bindings.manifest import ThreadReplies
from kourier.slack.incoming import ChatMessage


class Route(enum.Enum):
    IGNORE = "ignore"
    TURN = "turn"  # a turn of the thread's session, which is started if there is none
    NOTE = "note"  # context for the next mentioned turn (threadReplies: mention)
    EXPIRED = "expired"  # the thread's session is past its TTL: tell the person


@dataclass(frozen=True)
class ThreadState:
    has_session: bool
    expired: bool = False


def route(message: ChatMessage, thread: ThreadState, *, thread_replies: ThreadReplies) -> Route:
    """Decides what one message in a bound channel is.

    A mention at the top level, or inside a thread no session owns, starts a session. In an owned
    thread every reply is a turn, or with threadReplies: mention only those that mention the bot
    (the rest become context notes).
    """
    taken = message.mentions_bot or thread_replies is ThreadReplies.ALL
    if not thread.has_session:
        return Route.TURN if message.mentions_bot else Route.IGNORE
    if thread.expired:
        return Route.EXPIRED if taken else Route.IGNORE
    if taken:
        return Route.TURN
    return Route.NOTE if message.thread_ts else Route.IGNORE
