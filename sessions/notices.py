"""The fixed sentences a thread is told when a turn cannot be answered. Each says what happened and
what the person can do."""

EXPIRED = "This conversation has expired. Mention me in the channel to start a new one."
TASK_FAILED = "The agent ran into an error and stopped before finishing. Reply here to try again."
TASK_REJECTED = "The agent declined this request. Reply here to rephrase it or ask something else."
TASK_CANCELED = "The agent's task was cancelled before it finished. Reply here to start it again."
AGENT_UNREACHABLE = (
    "The agent could not be reached, so this message was not answered. Reply here to try again in a moment."
)
AGENT_GARBLED = (
    "The agent sent a response I could not read, so this message was not answered. "
    "Reply here to try again; if it keeps happening, tell whoever runs the agent."
)
CONVERSATION_GONE = (
    "The agent no longer has this conversation. Your next message here starts a new one with the agent."
)
REQUEST_LOST = (
    "I restarted while sending this message and cannot tell whether the agent received it. "
    "Reply here to ask again."
)
QUESTION_NOT_ENABLED = (
    "The agent stopped to ask a question, but questions are turned off here, so its task was cancelled. "
    "Reply with more detail to try again."
)
QUESTION_UNUSABLE = (
    "The agent paused for input that cannot be given in a thread, so its task was cancelled. "
    "Reply here to try again."
)
QUESTION_NOT_POSTED = "The agent asked a question that I could not post here, so its task was cancelled. Reply here to try again."
QUESTION_TIMED_OUT = (
    "Nobody answered the agent's question in time, so its task was cancelled. Reply here to start again."
)
APPROVAL_NOT_ENABLED = (
    "The agent asked for approval to run a tool, but tool approvals are turned off here, so its task was "
    "cancelled. Reply with more detail to try again."
)
APPROVAL_TIMED_OUT = (
    "Nobody decided on the agent's tool request in time, so every tool was denied and the agent was told "
    "that no one decided. Reply here to ask again."
)
# A person answered or decided, but the agent could not be reached before the deadline (beyond the
# spec: docs/manifests.md, "A decision outlives an agent outage").
ANSWER_UNDELIVERED = (
    "The agent could not be reached before the deadline, so the answer given here never reached it and "
    "its task was cancelled. Reply here to start again."
)
DECISION_UNDELIVERED = (
    "The agent could not be reached before the deadline, so the decision made here never reached it and "
    "its task was cancelled. Reply here to ask again."
)
APPROVAL_UNUSABLE = (
    "The agent asked for approval to run a tool, but its request cannot be shown here in full, so its task "
    "was cancelled. Reply here to try again."
)
BUDGET_SPENT = (
    "This channel has used its daily token budget for the agent, so this message was not sent to it. "
    "The budget resets at 00:00 UTC; send it again after that."
)

# Direct messages (spec.directMessages): a person the Binding does not let talk to the agent in private.
# A direct message has no channel to mention the app in: the expiry notice says what starts a new one.
EXPIRED_DIRECT_MESSAGE = "This conversation has expired. Send me a new message to start a new one."
DIRECT_MESSAGE_REFUSED = (
    "Sorry, I can only talk in private with the people this app is set up for, so your message was not "
    "passed on. Ask whoever runs this app if you need access."
)
DIRECT_MESSAGE_ACCESS_UNKNOWN = (
    "I could not check just now whether you may talk to me here, so your message was not passed on. "
    "Please send it again in a minute."
)
# The same two, told privately to a person who pressed a button or submitted a form in the conversation.
DIRECT_MESSAGE_PRESS_REFUSED = (
    "Sorry, I can only talk in private with the people this app is set up for, so your press was not "
    "taken. Ask whoever runs this app if you need access."
)
DIRECT_MESSAGE_PRESS_ACCESS_UNKNOWN = (
    "I could not check just now whether you may talk to me here, so your press was not taken. "
    "Please try again in a minute."
)

# Other ways to reach the agent (issue 33): the slash command and the message shortcut. What the app
# posts for the person's request (everybody sees it), and the private lines of a refusal.
COMMAND_ROOT = "<@{user_id}> asked: {question}"
SHORTCUT_ASKED = "<@{user_id}> asked me about this message."
NOT_BOUND_HERE = "I am not set up in this channel, so nothing was passed on. You can ask me in {channels}."
NOT_BOUND_ANYWHERE = "I am not set up in any channel yet, so nothing was passed on."
SURFACE_IN_DIRECT_MESSAGES = "Here, send me your question as a message: I answer it in its thread."
SURFACE_NOT_POSTED = (
    "I could not post in this channel, so nothing was passed on. Invite me to the channel and try again."
)
SHORTCUT_NO_TEXT = "That message has no text I can read, so nothing was passed on."
SURFACE_UNREADABLE = "I could not read that request, so nothing was passed on. Please try again."
