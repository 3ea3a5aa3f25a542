"""The scripted A2A agent (tests/fakes/a2a_agent) in a process of its own, answering at a realistic pace.

    .venv/bin/python bench/scripted_agent.py --stamps FILE [--pace 1.0]

bench/turns.py starts it: in its own process it does not share a GIL with the Slack fake. It
prints "listening on <url>" once it serves, runs until its stdin closes, then writes to FILE when
it emitted each text chunk and how many messages each thread sent it.

Every message (a person's mention, "... bench thread <n> ...") gets a few seconds of work: text in
small chunks, a tool call and its result, more text. With --word-by-word each chunk comes a word at a
time (about 45 text events a turn instead of 6), as a model's answer streams. Each chunk carries a marker "[#n.k]" and is
time-stamped at the moment the agent builds the event that carries it, so the benchmark can find
the first Slack write that shows it and measure the latency in between.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

from tests.fakes.a2a_agent import agent as agent_module
from tests.fakes.a2a_agent import steps
from tests.fakes.a2a_agent.agent import ScriptedAgent
from tests.fakes.a2a_agent.records import ReceivedMessage

THREAD_NUMBER = re.compile(r"bench thread (\d+)")
MARKER = re.compile(r"\[#(\d+)\.(\d+)\]")
LISTEN_BACKLOG = 2048  # uvicorn's default; the fake's 128 drops connections when 1000 turns start at once

# One turn: (seconds to wait, then what to emit). About 3.5 s of agent time, 6 text chunks, one tool.
TEXT, TOOL_CALL, TOOL_RESULT = "text", "tool_call", "tool_result"
# --word-by-word: each chunk streamed a word at a time, as a model streams its tokens (kagent sends each
# of its model's deltas as an event of its own), a word every WORD_GAP seconds (times --pace).
WORD = re.compile(r"\s*\S+\s*")
WORD_GAP = 0.04
TURN_SCRIPT: list[tuple[float, str, str]] = [
    (0.4, TEXT, "Let me look into that."),
    (0.3, TEXT, " Checking the recent deploys of the api service."),
    (0.1, TOOL_CALL, ""),
    (1.2, TOOL_RESULT, ""),
    (0.4, TEXT, "I found three deploys in the last day;"),
    (0.3, TEXT, " the one at 14:02 failed at its migration step."),
    (0.3, TEXT, " Rolling it back would restore the service."),
    (0.3, TEXT, " Shall I open an incident?"),
]


def chunk_texts(thread: int) -> list[str]:
    """The text chunks of a thread's answer, markers included, in order."""
    texts = [words for _, kind, words in TURN_SCRIPT if kind == TEXT]
    return [f"{words} [#{thread}.{index}]" for index, words in enumerate(texts, start=1)]


def is_the_answer(shown: str, thread: int) -> bool:
    """Whether a Slack message shows the thread's whole answer (the product may put a paragraph
    break between the agent's model turns, so whitespace is not compared)."""
    return shown.split() == " ".join(chunk_texts(thread)).split()


class StampedText(steps.Text):
    """A text step that notes when the agent emits it: the moment the renderer reads its text."""

    def __init__(self, chunk: str, stamps: dict[str, float]) -> None:
        object.__setattr__(self, "_text", chunk)
        object.__setattr__(self, "_stamps", stamps)

    @property
    def chunk(self) -> str:  # type: ignore[override]
        marker = MARKER.search(self._text)
        if marker:
            self._stamps.setdefault(marker.group(0), time.time())
        return self._text


class Turns:
    """Makes each message's script and keeps what the benchmark reads back."""

    def __init__(self, pace: float, word_by_word: bool = False) -> None:
        self.pace = pace
        self.word_by_word = word_by_word
        self.stamps: dict[str, float] = {}
        self.received: collections.Counter[int] = collections.Counter()
        self.file_bytes = 0  # of the file parts the messages carried (bench/turns.py --file-bytes)
        self._lock = threading.Lock()

    def script_for(self, received: ReceivedMessage) -> list[steps.Step]:
        found = THREAD_NUMBER.search(received.text)
        thread = int(found.group(1)) if found else -1
        shared = sum(len(part.get("raw") or "") * 3 // 4 for part in received.parts if "raw" in part)
        with self._lock:
            self.received[thread] += 1
            self.file_bytes += shared
        texts = iter(chunk_texts(thread))
        script: list[steps.Step] = []
        for wait, kind, _ in TURN_SCRIPT:
            script.append(steps.sleep(wait * self.pace))
            if kind == TEXT and self.word_by_word:
                for index, word in enumerate(WORD.findall(next(texts))):
                    if index:
                        script.append(steps.sleep(WORD_GAP * self.pace))
                    script.append(StampedText(word, self.stamps))
            elif kind == TEXT:
                script.append(StampedText(next(texts), self.stamps))
            elif kind == TOOL_CALL:
                script.append(
                    steps.tool_call(f"call-{thread}", "list_deploys", {"service": "api", "since": "24h"})
                )
            else:
                script.append(
                    steps.tool_result(f"call-{thread}", "list_deploys", {"deploys": 3, "failed": 1})
                )
        return script


def listening_socket_with_room(port: int = 0):
    sock = ORIGINAL_LISTENING_SOCKET(port)
    sock.listen(LISTEN_BACKLOG)  # listening again only changes the backlog
    return sock


ORIGINAL_LISTENING_SOCKET = agent_module.listening_socket


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--stamps", type=Path, required=True)
    parser.add_argument("--pace", type=float, default=1.0, help="scales every pause of the script")
    parser.add_argument(
        "--word-by-word", action="store_true", help="streams each text chunk a word at a time"
    )
    args = parser.parse_args()

    agent_module.listening_socket = listening_socket_with_room
    turns = Turns(args.pace, args.word_by_word)
    # Its card takes files, so that a mention's file (bench/turns.py --file-bytes) is sent to it.
    agent = ScriptedAgent(protocol="1.0", input_modes=("text/*", "image/*", "application/pdf")).start()
    agent.on_message(turns.script_for)
    print(f"listening on {agent.url}", flush=True)
    sys.stdin.read()  # until the benchmark closes our stdin
    agent.stop()
    args.stamps.write_text(
        json.dumps(
            {
                "stamps": turns.stamps,
                "received": turns.received,
                "file_bytes": turns.file_bytes,
                "errors": len(agent.script_errors),
            }
        )
    )


if __name__ == "__main__":
    main()
