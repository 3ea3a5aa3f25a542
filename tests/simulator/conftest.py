from __future__ import annotations

from collections.abc import Iterator

import pytest

from simulator import SlackFake

from .receiver import SIGNING_SECRET, Receiver


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    running = Receiver().start()
    yield running
    running.stop()


@pytest.fixture
def app_fake(slack_fake: SlackFake, receiver: Receiver) -> SlackFake:
    """The default fake, delivering its events to the receiver."""
    slack_fake.deliver_events_to(receiver.url, SIGNING_SECRET)
    return slack_fake
