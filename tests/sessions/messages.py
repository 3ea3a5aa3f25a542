"""People's messages in a bound channel, as the Slack adapter reads them, for the sessions app's tests."""

from kourier.slack.files import SharedFile
from kourier.slack.incoming import ChatMessage

CHANNEL = "C0000000001"


def said(
    text="hello",
    *,
    ts="1700000001.000100",
    thread_ts=None,
    mentions_bot=True,
    channel=CHANNEL,
    user="U0ADA",
    redelivered=False,
    files: tuple[SharedFile, ...] = (),
) -> ChatMessage:
    return ChatMessage(
        "T1", channel, ts, thread_ts, user, text, mentions_bot, redelivered=redelivered, files=files
    )
