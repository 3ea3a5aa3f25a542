"""A shared file's bytes downloaded from Slack (the fake, over real HTTP) and the rules that keep the
bot token on Slack's hosts (kourier/slack/files.py)."""

import asyncio

import httpx
import pytest

from kourier.slack import files
from kourier.slack.files import FileNotDownloaded, SharedFile
from kourier.slack.incoming import ChatMessage, read_message_event
from simulator import SlackFake
from simulator.defaults import ADA, CHANNEL_ID

LOG = b"line\n" * 100


@pytest.fixture
def on_the_fake(settings, slack_fake: SlackFake) -> SlackFake:
    settings.SLACK_API_URL = slack_fake.url
    return slack_fake


def shared(fake: SlackFake, content: bytes = LOG, mimetype: str = "text/plain", **options) -> SharedFile:
    ts = fake.user_shares_files(ADA, CHANNEL_ID, "here", [("app.log", content, mimetype)], **options)
    event = {
        "type": "message",
        "subtype": "file_share",
        "channel": CHANNEL_ID,
        "user": ADA,
        "ts": ts,
        "files": _file_json(fake, ts),
    }
    message = read_message_event(event, team_id=fake.team_id, bot_user_id=fake.bot_user_id)
    assert isinstance(message, ChatMessage)
    return message.files[0]


def _file_json(fake: SlackFake, ts: str) -> list[dict]:
    client = httpx.Client(base_url=fake.url, headers={"Authorization": f"Bearer {fake.bot_token}"})
    answer = client.get("conversations.replies", params={"channel": CHANNEL_ID, "ts": ts}).json()
    return answer["messages"][0]["files"]


def fetch(shared_file: SharedFile, *, token: str, max_bytes: int = 10_000) -> bytes:
    async def go() -> bytes:
        async with files.download_client() as client:
            return await files.download(client, shared_file, token=token, max_bytes=max_bytes)

    return asyncio.run(go())


def test_a_message_event_names_its_files_with_their_private_download_url(on_the_fake):
    found = shared(on_the_fake)
    assert (found.name, found.media_type, found.size) == ("app.log", "text/plain", len(LOG))
    assert found.url.endswith("/download/app.log")


def test_a_file_is_downloaded_with_the_bot_token(on_the_fake):
    assert fetch(shared(on_the_fake), token=on_the_fake.bot_token) == LOG


def test_a_file_past_the_cap_is_refused_while_it_streams(on_the_fake):
    found = shared(on_the_fake)
    lying = SharedFile(found.id, found.name, found.media_type, 10, found.url)  # Slack said it was small
    with pytest.raises(FileNotDownloaded) as refused:
        fetch(lying, token=on_the_fake.bot_token, max_bytes=100)
    assert refused.value.reason == FileNotDownloaded.TOO_BIG


def test_slacks_sign_in_page_means_the_app_lacks_files_read(on_the_fake):
    on_the_fake.configure_workspace(scopes={"files:write"})
    with pytest.raises(FileNotDownloaded) as refused:
        fetch(shared(on_the_fake), token=on_the_fake.bot_token)
    assert refused.value.reason == FileNotDownloaded.NO_SCOPE


def test_a_file_gone_from_slack_is_unreachable(on_the_fake):
    with pytest.raises(FileNotDownloaded) as refused:
        fetch(shared(on_the_fake, unreachable=("app.log",)), token=on_the_fake.bot_token)
    assert refused.value.reason == FileNotDownloaded.UNREACHABLE


def test_a_url_off_slacks_hosts_is_never_asked(on_the_fake):
    asked: list[str] = []

    async def go() -> None:
        def record(request: httpx.Request) -> httpx.Response:
            asked.append(str(request.url))
            return httpx.Response(200, content=b"x")

        async with httpx.AsyncClient(transport=httpx.MockTransport(record)) as client:
            named = SharedFile("F1", "x.txt", "text/plain", 1, "https://evil.example/files-pri/x.txt")
            await files.download(client, named, token="xoxb-secret", max_bytes=10)

    with pytest.raises(FileNotDownloaded):
        asyncio.run(go())
    assert asked == []


def test_a_redirect_off_slacks_hosts_is_not_followed(on_the_fake):
    asked: list[httpx.Request] = []

    async def go() -> None:
        def answer(request: httpx.Request) -> httpx.Response:
            asked.append(request)
            return httpx.Response(302, headers={"Location": "https://evil.example/steal"})

        async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as client:
            named = SharedFile("F1", "x.txt", "text/plain", 1, "https://files.slack.com/files-pri/T-F1/x.txt")
            await files.download(client, named, token="xoxb-secret", max_bytes=10)

    with pytest.raises(FileNotDownloaded):
        asyncio.run(go())
    assert [request.url.host for request in asked] == ["files.slack.com"]


@pytest.mark.parametrize(
    ("url", "slacks"),
    [
        ("https://files.slack.com/files-pri/T1-F1/a.png", True),
        ("http://files.slack.com/files-pri/T1-F1/a.png", False),
        ("https://files.slack.com.evil.example/a.png", False),
        ("https://example.com/files-pri/a.png", False),
    ],
)
def test_only_slacks_file_hosts_are_slacks(settings, url, slacks):
    settings.SLACK_API_URL = "https://slack.com/api/"
    assert files.is_slack_file_url(url) is slacks
