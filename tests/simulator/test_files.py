"""Files in the fake: a person's file_share message, its private URLs, and the app's external upload,
called through the real slack_sdk WebClient and plain HTTP."""

from __future__ import annotations

import httpx
from slack_sdk import WebClient

from simulator import SlackFake
from simulator.defaults import ADA, CHANNEL_ID
from tests.simulator.helpers import slack_error

from .receiver import Receiver

LOG = b"line one\nline two\n"


def test_a_shared_file_comes_with_its_message_and_the_mention(
    app_fake: SlackFake, receiver: Receiver
) -> None:
    ts = app_fake.user_shares_files(
        ADA, CHANNEL_ID, f"{app_fake.bot_mention} look", [("app.log", LOG, "text/plain")]
    )

    mention, message = (event for event in receiver.events())
    assert mention["type"] == "app_mention"
    assert message["subtype"] == "file_share"
    for event in (mention, message):
        (shared,) = event["files"]
        assert (shared["name"], shared["mimetype"], shared["size"]) == ("app.log", "text/plain", len(LOG))
        assert shared["url_private"].endswith(f"/files-pri/{app_fake.team_id}-{shared['id']}/app.log")
    assert message["ts"] == ts


def test_a_private_url_answers_the_bytes_to_the_bot_token_only(
    app_fake: SlackFake, receiver: Receiver
) -> None:
    app_fake.user_shares_files(ADA, CHANNEL_ID, "", [("app.log", LOG, "text/plain")])
    url = receiver.events()[-1]["files"][0]["url_private_download"]

    answer = httpx.get(url, headers={"Authorization": f"Bearer {app_fake.bot_token}"})
    assert (answer.status_code, answer.content) == (200, LOG)
    assert answer.headers["content-type"] == "text/plain"

    without_token = httpx.get(url)
    assert without_token.status_code == 200
    assert without_token.headers["content-type"].startswith("text/html")


def test_without_files_read_a_private_url_answers_the_sign_in_page(
    app_fake: SlackFake, receiver: Receiver
) -> None:
    app_fake.configure_workspace(scopes={"files:write"})
    app_fake.user_shares_files(ADA, CHANNEL_ID, "", [("app.log", LOG, "text/plain")])
    url = receiver.events()[-1]["files"][0]["url_private"]

    answer = httpx.get(url, headers={"Authorization": f"Bearer {app_fake.bot_token}"})

    assert answer.headers["content-type"].startswith("text/html")
    assert LOG not in answer.content


def test_an_unreachable_file_answers_404(app_fake: SlackFake, receiver: Receiver) -> None:
    app_fake.user_shares_files(ADA, CHANNEL_ID, "", [("app.log", LOG, "text/plain")])
    shared = receiver.events()[-1]["files"][0]
    app_fake.make_file_unreachable(shared["id"])

    answer = httpx.get(shared["url_private"], headers={"Authorization": f"Bearer {app_fake.bot_token}"})

    assert answer.status_code == 404


def test_an_external_upload_shares_the_file_in_the_thread_once_completed(
    slack_client: WebClient, slack_fake: SlackFake
) -> None:
    root = slack_fake.user_says(ADA, CHANNEL_ID, "root")
    png = b"\x89PNG\r\n\x1a\n" + b"0" * 32
    ticket = slack_client.files_getUploadURLExternal(filename="chart.png", length=len(png))
    assert httpx.post(ticket["upload_url"], content=png).status_code == 200
    assert slack_fake.files_in_thread(CHANNEL_ID, root) == []  # uploaded, not yet shared

    done = slack_client.files_completeUploadExternal(
        files=[{"id": ticket["file_id"], "title": "The chart"}], channel_id=CHANNEL_ID, thread_ts=root
    )

    assert done["files"] == [{"id": ticket["file_id"], "title": "The chart"}]
    (shared,) = slack_fake.files_in_thread(CHANNEL_ID, root)
    assert (shared.name, shared.title, shared.content) == ("chart.png", "The chart", png)
    reply = slack_fake.thread(CHANNEL_ID, root)[-1]
    assert reply.is_bot
    assert reply.files == ["chart.png"]
    assert reply.subtype == "file_share"


def test_an_upload_of_a_multipart_form_keeps_the_file_field(
    slack_client: WebClient, slack_fake: SlackFake
) -> None:
    ticket = slack_client.files_getUploadURLExternal(filename="a.txt", length=3)
    httpx.post(ticket["upload_url"], files={"filename": ("a.txt", b"abc", "text/plain")})

    slack_client.files_completeUploadExternal(files=[{"id": ticket["file_id"]}])

    assert slack_fake.file(ticket["file_id"]).content == b"abc"


def test_completing_a_file_never_uploaded_or_of_another_length_is_refused(
    slack_client: WebClient, slack_fake: SlackFake
) -> None:
    ticket = slack_client.files_getUploadURLExternal(filename="a.txt", length=5)
    complete = slack_client.files_completeUploadExternal
    assert slack_error(complete, files=[{"id": ticket["file_id"]}]) == "file_not_found"
    httpx.post(ticket["upload_url"], content=b"abc")
    assert slack_error(complete, files=[{"id": ticket["file_id"]}]) == "file_upload_size_mismatch"
    assert slack_error(complete, files=[{"id": "F0NOTAFILE"}]) == "file_not_found"


def test_the_upload_methods_need_files_write(slack_client: WebClient, slack_fake: SlackFake) -> None:
    slack_fake.configure_workspace(scopes={"files:read"})

    assert slack_error(slack_client.files_getUploadURLExternal, filename="a.txt", length=3) == "missing_scope"
    refusal = slack_fake.last_call("files.getUploadURLExternal").response
    assert refusal is not None
    assert refusal["needed"] == "files:write"


def test_a_bad_length_is_refused(slack_client: WebClient, slack_fake: SlackFake) -> None:
    assert (
        slack_error(slack_client.files_getUploadURLExternal, filename="a.txt", length=0)
        == "invalid_arguments"
    )
