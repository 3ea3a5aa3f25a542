"""The simulator page's JSON API, served by the fake itself beside the Web API (``SlackFake.mount``).

The page (page.py, on the product's web port) forwards to it: what the channel looks like to the
person the visitor acts as, and what that person does (say something, react, use a control). Each
action goes through the fake's own people-acting methods, so the product receives exactly the
signed events and block_actions a test's person sends.

Bad input is refused as Slack's client would be, with Slack's error names and a sentence, before
anything is stored: ``{"ok": false, "error": ..., "message": ...}`` with HTTP 400 (404 for an
unknown path, 405 for a wrong verb). Nothing of what people write is logged.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

from . import demo
from .emoji import is_known_emoji
from .errors import FakeMisuse
from .fake import SlackFake
from .files import FileView
from .mentions import typed_mentions_to_ids
from .pipeline import HttpAnswer, HttpRequest
from .views import CardView, EphemeralView, MessageView

PREFIX = "/simulator/api/"
HOME_WAIT_SECONDS = 5.0  # for the app to publish a Home tab the person opened
MAX_TEXT_CHARACTERS = 40_000  # chat.postMessage's limit on text (msg_too_long past it)
# Files attached on the page travel base64 in its JSON (the web process forwards 256 KB at most).
MAX_PAGE_FILE_BYTES = 150_000
MAX_PAGE_FILES = 3
MAX_SHOWN_IMAGE_BYTES = 1_000_000  # an image shown inline as a data URL; larger ones by name only
MAX_BODY_BYTES = 256 * 1024
MAX_WAIT_SECONDS = 20.0  # a long poll's longest wait, well within the page's forwarding timeout


class Refusal(Exception):
    def __init__(self, error: str, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.error = error
        self.message = message
        self.status = status


@dataclass(frozen=True)
class Directory:
    """Who the visitor can be, and the names a typed mention is matched against."""

    people: tuple[demo.Person, ...]
    groups: Mapping[str, tuple[str, tuple[str, ...]]]  # handle → (group id, member ids)
    channels: Mapping[str, str]  # id → name
    bot_user_id: str
    bot_name: str
    alerts_app: tuple[str, str] | None = None  # another app's bot (user id, name) that posts alerts

    @classmethod
    def of_demo(cls) -> Directory:
        return cls(
            people=demo.PEOPLE,
            groups={demo.ONCALL_HANDLE: (demo.ONCALL_ID, demo.ONCALL_MEMBERS)},
            channels={demo.CHANNEL_ID: demo.CHANNEL_NAME},
            bot_user_id=demo.BOT_USER_ID,
            bot_name=demo.BOT_NAME,
            alerts_app=(demo.ALERTS_APP_USER_ID, demo.ALERTS_APP_NAME),
        )

    def person(self, user_id: object) -> demo.Person:
        for person in self.people:
            if person.id == user_id:
                return person
        raise Refusal("user_not_found", "Pick someone from the directory to act as.")

    def channel(self, channel_id: object) -> str:
        if not isinstance(channel_id, str) or channel_id not in self.channels:
            raise Refusal("channel_not_found", "There is no such channel in this workspace.")
        return channel_id

    def name_of(self, user_id: str | None) -> str:
        if user_id == self.bot_user_id:
            return self.bot_name
        if self.alerts_app is not None and user_id == self.alerts_app[0]:
            return self.alerts_app[1]
        for person in self.people:
            if person.id == user_id:
                return person.real_name
        return user_id or "someone"

    def mentionable(self) -> dict[str, str]:
        names = {self.bot_name: self.bot_user_id}
        for person in self.people:
            names[person.real_name] = person.id
            names[person.display_name] = person.id
        return names


TOKEN_HEADER = "x-simulator-token"


class SimulatorApi:
    """``token``: when set, the API answers only requests that carry it (``X-Simulator-Token``): the
    page of the `manage.py serve` run that made it, for as long as that run lasts."""

    def __init__(self, fake: SlackFake, directory: Directory, *, token: str = "") -> None:
        self.fake = fake
        self.directory = directory
        self.token = token
        self._routes: dict[tuple[str, str], Callable[[HttpRequest], dict[str, Any]]] = {
            ("GET", "world"): self.world,
            ("GET", "channel"): self.channel,
            ("POST", "messages"): self.post_message,
            ("POST", "alerts"): self.post_alert,
            ("POST", "reactions"): self.add_reaction,
            ("POST", "actions"): self.use_control,
            ("POST", "commands"): self.type_command,
            ("POST", "shortcuts"): self.use_shortcut,
            ("POST", "home"): self.open_home,
            ("POST", "home-actions"): self.use_home_control,
            ("POST", "stream-stops"): self.stop_stream,
            ("POST", "session-stops"): self.stop_session,
        }

    def handle(self, request: HttpRequest) -> HttpAnswer:
        name = request.path[len(PREFIX) :]
        route = self._routes.get((request.method, name))
        try:
            if self.token and not hmac.compare_digest(
                request.headers.get(TOKEN_HEADER, "").encode(), self.token.encode()
            ):
                raise Refusal("not_authed", "The simulator answers the page of the run that started it.", 403)
            if route is None:
                if any(known == name for _, known in self._routes):
                    raise Refusal("method_not_allowed", f"{name} does not take {request.method}.", 405)
                raise Refusal("unknown_method", f"The simulator has no {name!r}.", 404)
            return _answer(200, {"ok": True, **route(request)})
        except Refusal as refusal:
            return _answer(refusal.status, {"ok": False, "error": refusal.error, "message": refusal.message})
        except Exception:  # a bug of the simulator's own: said as such, never as the product's fault
            return _answer(
                500, {"ok": False, "error": "fake_internal_error", "message": "The simulator failed."}
            )

    # Reading.

    def world(self, request: HttpRequest) -> dict[str, Any]:
        d = self.directory
        return {
            "team": demo.TEAM_NAME,
            "bot": {"id": d.bot_user_id, "name": d.bot_name},
            "channels": [{"id": cid, "name": name} for cid, name in d.channels.items()],
            "people": [
                {
                    "id": p.id,
                    "name": p.real_name,
                    "handle": p.display_name,
                    "groups": [h for h, (_, members) in d.groups.items() if p.id in members],
                }
                for p in d.people
            ],
            "groups": [{"id": gid, "handle": h, "members": list(m)} for h, (gid, m) in d.groups.items()],
            "alerts_app": {"id": d.alerts_app[0], "name": d.alerts_app[1]} if d.alerts_app else None,
        }

    def channel(self, request: HttpRequest) -> dict[str, Any]:
        """The channel as the person sees it, and its ``version``. With ``since`` (a version) and
        ``wait`` (seconds, at most MAX_WAIT_SECONDS), the answer waits until what the person sees
        differs from that version: the page long-polls, so an idle page costs one request a while."""
        query = {key: values[-1] for key, values in parse_qs(request.query).items()}
        person = self.directory.person(query.get("as"))
        channel = self.directory.channel(query.get("channel"))
        since = query.get("since")
        try:
            wait = min(max(float(query.get("wait") or 0), 0.0), MAX_WAIT_SECONDS)
        except ValueError:
            raise Refusal("invalid_arguments", "wait is a number of seconds.") from None
        shown = self._channel_as(person.id, channel)
        if since and wait:
            latest = [shown]

            def changed() -> bool:
                latest[0] = self._channel_as(person.id, channel)
                return latest[0]["version"] != since

            with contextlib.suppress(TimeoutError):  # unchanged: the page asks again
                self.fake.wait_until(changed, timeout=wait)
            shown = latest[0]
        return shown

    def _channel_as(self, person: str, channel: str) -> dict[str, Any]:
        ephemerals = self.fake.ephemerals(person, channel)
        messages = []
        for root in self.fake.messages(channel):
            replies = [self._message(view) for view in self.fake.thread(channel, root.ts)[1:]]
            replies += [self._ephemeral(e) for e in ephemerals if e.thread_ts == root.ts]
            shown = self._message(root)
            shown["replies"] = sorted(replies, key=lambda m: float(m["ts"]))
            shown["status"] = self.fake.assistant_status(channel, root.ts)
            shown["session"] = self.fake.agent_session_status(channel, root.ts)
            messages.append(shown)
        messages += [
            self._ephemeral(e) | {"replies": [], "status": None, "session": None}
            for e in ephemerals
            if not e.thread_ts
        ]
        messages.sort(key=lambda m: float(m["ts"]))
        version = hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()[:16]
        return {"messages": messages, "version": version}

    # Acting.

    def post_message(self, request: HttpRequest) -> dict[str, Any]:
        body = _json_body(request)
        person = self.directory.person(body.get("as"))
        channel = self.directory.channel(body.get("channel"))
        text = body.get("text")
        shared = _attached_files(body.get("files"))
        if not isinstance(text, str) or (not text.strip() and not shared):
            raise Refusal("no_text", "Write something to send.")
        if len(text) > MAX_TEXT_CHARACTERS:
            raise Refusal("msg_too_long", f"A message holds at most {MAX_TEXT_CHARACTERS} characters.")
        thread_ts = self._optional_ts(body, "thread_ts")
        if thread_ts is not None:
            self._existing_message(channel, thread_ts, "thread_not_found")
        groups = {handle: group_id for handle, (group_id, _) in self.directory.groups.items()}
        said = typed_mentions_to_ids(text, self.directory.mentionable(), groups)
        if shared:
            ts = self._as_person(
                lambda: self.fake.user_shares_files(person.id, channel, said, shared, thread_ts)
            )
        else:
            ts = self._as_person(lambda: self.fake.user_says(person.id, channel, said, thread_ts))
        return {"ts": ts, "text": said}

    def post_alert(self, request: HttpRequest) -> dict[str, Any]:
        """The workspace's alerting app posts the demo alert, as its own Slack receiver would: a thread
        under another app's message, to mention the agent in."""
        body = _json_body(request)
        channel = self.directory.channel(body.get("channel"))
        if self.directory.alerts_app is None:
            raise Refusal("app_not_found", "This workspace has no alerting app.")
        app_user_id, _ = self.directory.alerts_app
        ts = self.fake.bot_says(app_user_id, channel, "", attachments=[demo.DEMO_ALERT])
        return {"ts": ts}

    def add_reaction(self, request: HttpRequest) -> dict[str, Any]:
        body = _json_body(request)
        person = self.directory.person(body.get("as"))
        channel = self.directory.channel(body.get("channel"))
        ts = self._required_ts(body, "ts")
        name = body.get("name")
        if not isinstance(name, str) or not is_known_emoji(name.strip(":")):
            raise Refusal("invalid_name", "That is not an emoji this workspace knows.")
        message = self._existing_message(channel, ts, "message_not_found")
        if person.id in message.reactions.get(name.strip(":"), []):
            raise Refusal("already_reacted", "You have already added that reaction.")
        self._as_person(lambda: self.fake.user_reacts(person.id, channel, ts, name.strip(":")))
        return {}

    def use_control(self, request: HttpRequest) -> dict[str, Any]:
        """A button pressed, or an option chosen in a control that sends at once; ``values`` are the
        other controls of the message as the person left them (action_id → value, values or text)."""
        body = _json_body(request)
        person = self.directory.person(body.get("as"))
        channel = self.directory.channel(body.get("channel"))
        ts = self._required_ts(body, "ts")
        action_id = body.get("action_id")
        if not isinstance(action_id, str) or not action_id:
            raise Refusal("invalid_arguments", "Say which control was used (action_id).")
        block_id = body.get("block_id")
        if block_id is not None and not isinstance(block_id, str):
            raise Refusal("invalid_arguments", "block_id is text.")
        values = body.get("values") or {}
        if not isinstance(values, dict) or not all(_is_choice(v) for v in values.values()):
            raise Refusal("invalid_arguments", "values maps each control's action_id to its text or options.")
        choice = body.get("value")
        if choice is not None and not _is_choice(choice):
            raise Refusal("invalid_arguments", "value is an option's value or a list of them.")

        def act() -> Any:
            if choice is None:
                return self.fake.press_button(
                    person.id, channel, ts, action_id, block_id=block_id, choices=values
                )
            return self.fake.choose(
                person.id, channel, ts, action_id, choice, block_id=block_id, choices=values
            )

        delivery = self._as_person(act)
        return {"status": getattr(delivery, "status", None)}

    def type_command(self, request: HttpRequest) -> dict[str, Any]:
        """A slash command typed in the message box: ``text`` is the whole line ("/kourier status")."""
        body = _json_body(request)
        person = self.directory.person(body.get("as"))
        channel = self.directory.channel(body.get("channel"))
        line = body.get("text")
        if not isinstance(line, str) or not line.startswith("/") or len(line.split(maxsplit=1)[0]) < 2:
            raise Refusal("invalid_command", "A slash command starts with / and its name, such as /kourier.")
        if len(line) > MAX_TEXT_CHARACTERS:
            raise Refusal("msg_too_long", f"A message holds at most {MAX_TEXT_CHARACTERS} characters.")
        command, _, text = line.partition(" ")
        delivery = self._as_person(
            lambda: self.fake.user_types_command(person.id, channel, text, command=command)
        )
        return {"status": getattr(delivery, "status", None)}

    def use_shortcut(self, request: HttpRequest) -> dict[str, Any]:
        """The app's message shortcut chosen in a message's menu."""
        body = _json_body(request)
        person = self.directory.person(body.get("as"))
        channel = self.directory.channel(body.get("channel"))
        ts = self._required_ts(body, "ts")
        self._existing_message(channel, ts, "message_not_found")
        delivery = self._as_person(lambda: self.fake.user_uses_shortcut(person.id, channel, ts))
        return {"status": getattr(delivery, "status", None)}

    def open_home(self, request: HttpRequest) -> dict[str, Any]:
        """The person opens the app's Home tab; the answer is the view the app publishes for them
        (waited for a few seconds), else the one it published before, else none."""
        person = self.directory.person(_json_body(request).get("as"))
        publishes = self.fake.count("views.publish")
        self._as_person(lambda: self.fake.user_opens_home(person.id))
        with contextlib.suppress(TimeoutError):
            self.fake.wait_until(
                lambda: self.fake.count("views.publish") > publishes, timeout=HOME_WAIT_SECONDS
            )
        return {"view": self.fake.home_view(person.id)}

    def use_home_control(self, request: HttpRequest) -> dict[str, Any]:
        body = _json_body(request)
        person = self.directory.person(body.get("as"))
        action_id, block_id = body.get("action_id"), body.get("block_id")
        if not isinstance(action_id, str) or not action_id:
            raise Refusal("invalid_arguments", "Say which control was used (action_id).")
        if block_id is not None and not isinstance(block_id, str):
            raise Refusal("invalid_arguments", "block_id is text.")
        delivery = self._as_person(
            lambda: self.fake.press_home_button(person.id, action_id, block_id=block_id)
        )
        return {"status": getattr(delivery, "status", None)}

    def stop_stream(self, request: HttpRequest) -> dict[str, Any]:
        """Slack's own stop on a streaming reply, pressed by the person it streams to: the app's next
        append is answered ``stopped_by_user``."""
        body = _json_body(request)
        person = self.directory.person(body.get("as"))
        channel = self.directory.channel(body.get("channel"))
        ts = self._required_ts(body, "ts")
        self._existing_message(channel, ts, "message_not_found")
        self._as_person(lambda: self.fake.user_stops_stream(channel, ts, user=person.id))
        return {}

    def stop_session(self, request: HttpRequest) -> dict[str, Any]:
        """Slack's stop control of a thread's agent session, shown while it is processing: the app is
        sent agent_session_stopped."""
        body = _json_body(request)
        person = self.directory.person(body.get("as"))
        channel = self.directory.channel(body.get("channel"))
        ts = self._required_ts(body, "thread_ts")
        self._existing_message(channel, ts, "thread_not_found")
        deliveries = self._as_person(lambda: self.fake.user_stops_agent_session(person.id, channel, ts))
        return {"status": deliveries[0].status if deliveries else None}

    # Helpers.

    def _as_person(self, act: Callable[[], Any]) -> Any:
        """What a person cannot do in Slack is refused, and the fake refuses it before storing anything."""
        try:
            return act()
        except FakeMisuse as misuse:
            raise Refusal("cannot_do_that", str(misuse)) from misuse

    def _existing_message(self, channel: str, ts: str, error: str) -> MessageView:
        try:
            found = self.fake.message(channel, ts)
        except KeyError:
            raise Refusal(error, "There is no such message in this channel.") from None
        if found.subtype == "tombstone":
            raise Refusal(error, "That message was deleted.")
        return found

    def _required_ts(self, body: Mapping[str, Any], key: str) -> str:
        ts = self._optional_ts(body, key)
        if ts is None:
            raise Refusal("invalid_arguments", f"{key} is required.")
        return ts

    def _optional_ts(self, body: Mapping[str, Any], key: str) -> str | None:
        value = body.get(key)
        if value in (None, ""):
            return None
        if not isinstance(value, str) or not _looks_like_ts(value):
            raise Refusal("invalid_ts", f"{key} is a message timestamp such as 1700000000.000100.")
        return value

    def _message(self, view: MessageView) -> dict[str, Any]:
        return {
            "ts": view.ts,
            "thread_ts": view.thread_ts,
            "author": {
                "id": view.user,
                "name": self.directory.name_of(view.user),
                "is_bot": view.is_bot,
            },
            "text": view.text,
            "blocks": view.blocks,
            "attachments": [_attachment(attachment) for attachment in view.attachments],
            "files": [_file(self.fake.file(file_id)) for file_id in view.file_ids],
            "cards": [_card(card) for card in view.cards],
            "plan_title": view.plan_title,
            "streaming": view.streaming,
            "stream_phase": view.stream_phase,
            "reactions": [
                {"name": name, "count": len(users), "people": [self.directory.name_of(u) for u in users]}
                for name, users in view.reactions.items()
            ],
            "edited": view.edited,
            "deleted": view.subtype == "tombstone",
            "only_visible_to_you": False,
        }

    def _ephemeral(self, view: EphemeralView) -> dict[str, Any]:
        return {
            "ts": view.ts,
            "thread_ts": view.thread_ts,
            "author": {"id": self.directory.bot_user_id, "name": self.directory.bot_name, "is_bot": True},
            "text": view.text,
            "blocks": view.blocks,
            "cards": [],
            "plan_title": None,
            "streaming": False,
            "stream_phase": None,
            "reactions": [],
            "edited": False,
            "deleted": False,
            "only_visible_to_you": True,
        }


def mount_on(fake: SlackFake, directory: Directory | None = None, *, token: str = "") -> SimulatorApi:
    api = SimulatorApi(fake, directory or Directory.of_demo(), token=token)
    fake.mount(PREFIX, api.handle)
    return api


def _attachment(attachment: Mapping[str, Any]) -> dict[str, Any]:
    """What the page draws of a legacy attachment: its colour bar, title, text and fields."""
    fields = [f for f in attachment.get("fields") or [] if isinstance(f, Mapping)]
    return {
        "color": str(attachment.get("color") or ""),
        "title": str(attachment.get("title") or ""),
        "text": str(attachment.get("text") or attachment.get("fallback") or ""),
        "fields": [{"title": str(f.get("title") or ""), "value": str(f.get("value") or "")} for f in fields],
    }


def _attached_files(value: object) -> list[tuple[str, bytes, str]]:
    """The files the page attached: [{name, type, content (base64)}], each checked."""
    if value is None:
        return []
    if not isinstance(value, list) or len(value) > MAX_PAGE_FILES:
        raise Refusal("invalid_files", f"Attach at most {MAX_PAGE_FILES} files.")
    found = []
    for entry in value:
        name, kind, content = (
            entry.get(k) if isinstance(entry, dict) else None for k in ("name", "type", "content")
        )
        if not isinstance(name, str) or not name.strip() or not isinstance(content, str):
            raise Refusal("invalid_files", "A file needs a name and its content.")
        try:
            raw = base64.b64decode(content, validate=True)
        except ValueError:
            raise Refusal("invalid_files", f"{name}: its content is not base64.") from None
        if len(raw) > MAX_PAGE_FILE_BYTES:
            raise Refusal(
                "file_too_large", f"{name}: the page takes files up to {MAX_PAGE_FILE_BYTES // 1000} KB."
            )
        found.append(
            (name.strip(), raw, kind if isinstance(kind, str) and "/" in kind else "application/octet-stream")
        )
    return found


def _file(file: FileView) -> dict[str, Any]:
    shown = file.mimetype.startswith("image/") and len(file.content) <= MAX_SHOWN_IMAGE_BYTES
    return {
        "name": file.name,
        "title": file.title,
        "mimetype": file.mimetype,
        "size": len(file.content),
        "image": f"data:{file.mimetype};base64,{base64.b64encode(file.content).decode()}" if shown else None,
    }


def _card(card: CardView) -> dict[str, Any]:
    return {
        "id": card.id,
        "title": card.title,
        "status": card.status,
        "details": card.details,
        "output": card.output,
    }


def _json_body(request: HttpRequest) -> dict[str, Any]:
    if len(request.body) > MAX_BODY_BYTES:
        raise Refusal("request_too_large", "The request is too large.", 413)
    try:
        body = json.loads(request.body or b"null")
    except (ValueError, UnicodeDecodeError):
        raise Refusal("invalid_json", "The request body is not JSON.") from None
    if not isinstance(body, dict):
        raise Refusal("invalid_json", "The request body is a JSON object.")
    return body


def _is_choice(value: object) -> bool:
    return isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))


def _looks_like_ts(value: str) -> bool:
    seconds, dot, micros = value.partition(".")
    return bool(dot) and seconds.isdigit() and micros.isdigit()


def _answer(status: int, body: dict[str, Any]) -> HttpAnswer:
    return HttpAnswer(status, json.dumps(body).encode(), {"Content-Type": "application/json; charset=utf-8"})
