"""Files with a real kagent, on both lines (lines.py; a scripted model, tests/support/kagent_runtime),
through the product's real processes (issue 30, point 5): a text file shared with a mention reaches
the model as inline data; an image, a type kagent's card does not take ("text"), is named in the
thread instead; an image the model answers with is uploaded into the thread once."""

import pytest

from sessions.models import Turn
from simulator import defaults
from tests.e2e.helpers import wait_for, wait_for_turns_to_end
from tests.support.kagent_runtime.script import Script
from tests.support.kagent_runtime.script import Turn as ModelTurn

pytestmark = pytest.mark.slow

WAIT = 60.0  # the runtime's first model turn imports much of ADK
LOG = b"10:00 INFO up\n10:01 ERROR disk full\n"
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(48))


def bot_texts(world, thread_ts):
    return [m.text for m in world.slack.thread(world.channel, thread_ts)[1:] if m.is_bot]


def test_a_shared_text_file_reaches_kagents_model_and_an_image_it_does_not_take_is_named(
    make_world, start_kagent_runtime
):
    runtime = start_kagent_runtime(Script([ModelTurn("Read it.")]))
    world = make_world(agent_url=runtime.url, dialect="kagent-v1")
    root = world.slack.user_shares_files(
        defaults.ADA,
        world.channel,
        f"{world.slack.bot_mention} what failed?",
        [("app.log", LOG, "text/plain"), ("chart.png", PNG, "image/png")],
    )
    wait_for_turns_to_end(world, 1, timeout=WAIT)

    [request] = runtime.model_requests()
    assert request.files == [("text/plain", LOG)]
    assert "what failed?" in request.text
    assert "Not sent to the agent: chart.png (type the agent does not take)" in bot_texts(world, root)
    assert Turn.objects.get().outcome == Turn.Outcome.COMPLETED


def test_an_image_kagents_model_answers_with_is_uploaded_into_the_thread_once(
    make_world, start_kagent_runtime
):
    runtime = start_kagent_runtime(Script([ModelTurn("Here is the chart.", files=[("image/png", PNG)])]))
    world = make_world(agent_url=runtime.url, dialect="kagent-v1")
    root = world.mention("draw it")

    wait_for(
        lambda: world.slack.files_in_thread(world.channel, root),
        "the model's image in the thread",
        timeout=WAIT,
    )
    wait_for_turns_to_end(world, 1, timeout=WAIT)

    [shared] = world.slack.files_in_thread(world.channel, root)
    assert (shared.mimetype, shared.content) == ("image/png", PNG)
    assert world.slack.count("files.completeUploadExternal") == 1
    assert any("Here is the chart." in text for text in bot_texts(world, root))
