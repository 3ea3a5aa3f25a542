"""kourier.redaction: secrets become [redacted] before anything is shown; display strings are shortened."""

from __future__ import annotations

import json

import pytest

from kourier.redaction import REDACTED, format_call, is_secret_key, redact, redact_text, shorten
from tests.support.secret_corpus import CORPUS, PLAIN_VALUES, leaked

R = REDACTED

# A JWT, a PEM block and a few provider keys (all made up).
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
DEEP: list = ["deep"]
for _ in range(200):
    DEEP = [DEEP]
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA1c7+9z\nabcdef==\n-----END RSA PRIVATE KEY-----"


@pytest.mark.parametrize(
    ("key", "secret"),
    [
        ("password", True),
        ("Password", True),
        ("PASSWD", True),
        ("db_password", True),
        ("passphrase", True),
        ("token", True),
        ("accessToken", True),
        ("refresh_token", True),
        ("secret", True),
        ("client_secret", True),
        ("aws_secret_access_key", True),
        ("Authorization", True),
        ("api_key", True),
        ("apiKey", True),
        ("x-api-key", True),
        ("X-Api-Key", True),
        ("private_key", True),
        ("credentials", True),
        ("Cookie", True),
        ("auth", True),
        ("pwd", True),
        # not secrets
        ("author", False),
        ("max_tokens", False),
        ("token_count", False),
        ("tokenizer", False),
        ("bypass", False),
        ("key", False),
        ("query", False),
        ("name", False),
        (42, False),
        (None, False),
    ],
)
def test_is_secret_key(key, secret):
    assert is_secret_key(key) is secret


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        # keys, case-insensitive and inside longer names; the whole value goes, whatever its type
        ({"password": "hunter2"}, {"password": R}),
        ({"DB_Password": "hunter2", "user": "ada"}, {"DB_Password": R, "user": "ada"}),
        ({"client_secret": "abc"}, {"client_secret": R}),
        ({"accessToken": "abc"}, {"accessToken": R}),
        ({"x-api-key": "abc"}, {"x-api-key": R}),
        ({"passwd": "abc"}, {"passwd": R}),
        ({"Authorization": "Bearer abc"}, {"Authorization": R}),
        ({"pin_password": 1234}, {"pin_password": R}),
        ({"token": {"value": "abc", "kind": "x"}}, {"token": R}),
        ({"secrets": ["a", "b"]}, {"secrets": R}),
        # None and booleans under a secret key hold nothing
        ({"token": None, "use_token": True}, {"token": None, "use_token": True}),
        # nested data, lists and tuples
        ({"a": [{"b": {"api_key": "k"}}]}, {"a": [{"b": {"api_key": R}}]}),
        ((1, "x", {"token": "t"}), (1, "x", {"token": R})),
        # numbers and plain strings stay
        (
            {"count": 3, "ratio": 0.5, "ok": False, "q": "pods"},
            {"count": 3, "ratio": 0.5, "ok": False, "q": "pods"},
        ),
        ({"max_tokens": 100}, {"max_tokens": 100}),
        # value patterns anywhere, also under harmless keys
        ({"text": "use xoxb-1234-5678-abcdefghij now"}, {"text": f"use {R} now"}),
        ("xoxp-1234-5678-abcdefghij", R),
        ("xoxa-2-abcdefghij", R),
        ("xoxr-abcdefghijkl", R),
        ("xapp-1-A0123-456-abcdef", R),
        ("https://hooks.slack.com/services/T000/B000/XXXXXXXX", f"https://hooks.slack.com/{R}"),
        ("ghp_" + "a" * 36, R),
        ("gho_" + "B" * 36, R),
        ("ghu_" + "c1" * 18, R),
        ("ghs_" + "d" * 36, R),
        ("ghr_" + "e" * 36, R),
        ("github_pat_11ABCDEFG0" + "x" * 40, R),
        ("AKIAIOSFODNN7EXAMPLE", R),
        ("key ASIAIOSFODNN7EXAMPLE used", f"key {R} used"),
        ("sk-" + "a1B2" * 12, R),
        ("sk-proj-" + "Ab3_" * 10, R),
        ("sk-ant-api03-" + "z9" * 20, R),
        (JWT, R),
        (f"Authorization: Bearer {JWT}", f"Authorization: {R}"),
        ("Bearer abcdefgh12345678", f"Bearer {R}"),
        ("Basic dXNlcjpwYXNz", f"Basic {R}"),  # base64 of user:pass
        (PEM, R),
        (f"before\n{PEM}\nafter", f"before\n{R}\nafter"),
        ("-----BEGIN PRIVATE KEY-----\nMIIE cut off", R),
        ("https://ada:s3cret@example.com/repo.git", f"https://ada:{R}@example.com/repo.git"),
        ("postgres://svc:pw@db:5432/app", f"postgres://svc:{R}@db:5432/app"),
        ("aws_secret_access_key=wJalrXUtnFEMI/K7MDENG", f"aws_secret_access_key={R}"),
        (
            "https://api.example.com/x?access_token=abc&page=2",
            f"https://api.example.com/x?access_token={R}&page=2",
        ),
        ('{"password": "hunter2", "user": "ada"}', f'{{"password": {R}, "user": "ada"}}'),
        ("curl -H 'X-Api-Key: abc123' https://x", f"curl -H 'X-Api-Key: {R}' https://x"),
        # prose and ordinary values stay as they are
        ("Basic authentication is enabled", "Basic authentication is enabled"),
        ("author: Ada, max_tokens=50", "author: Ada, max_tokens=50"),
        ("http://host:8080/path", "http://host:8080/path"),
        ("the sky-is-blue", "the sky-is-blue"),
        ("", ""),
        # redacting twice changes nothing
        (f"password={R}", f"password={R}"),
        (f"Bearer {R}", f"Bearer {R}"),
    ],
)
def test_redact(value, expected):
    assert redact(value) == expected


@pytest.mark.parametrize(
    "odd",
    [
        None,
        True,
        3,
        2.5,
        float("nan"),
        b"xoxb-1234-5678-abcdefghij",
        {1: "x", (2, 3): "y", None: "z"},
        {"a": {1, 2}},
        object(),
        DEEP,
    ],
)
def test_redact_never_raises_on_odd_input(odd):
    redact(odd)
    shown = format_call("tool", odd, 50)
    assert shown.startswith("tool(")
    assert len(shown) <= 50


def test_redact_does_not_change_its_input():
    args = {"password": "hunter2", "nested": {"token": "t"}}
    redact(args)
    assert args == {"password": "hunter2", "nested": {"token": "t"}}


def test_a_cycle_is_redacted_not_followed():
    looped: dict = {}
    looped["self"] = looped
    looped["token"] = "hunter2"
    redacted = redact(looped)  # stops at the depth limit; never RecursionError
    assert redacted["token"] == "[redacted]"
    assert redacted["self"]["token"] == "[redacted]"


def test_bytes_are_shown_as_redacted_text():
    assert redact(b"xoxb-1234-5678-abcdefghij") == R


def test_redact_text_never_shortens():
    long = "word " * 5000
    assert redact_text(long) == long


@pytest.mark.parametrize(
    ("name", "args", "limit", "expected"),
    [
        ("search", {"q": "pods", "limit": 10}, 200, 'search(q="pods", limit=10)'),
        ("list", {}, 200, "list()"),
        ("list", None, 200, "list()"),
        ("sum", [1, 2], 200, "sum([1, 2])"),
        ("login", {"user": "ada", "password": "x"}, 200, f'login(user="ada", password={R})'),
        (
            "call",
            {"headers": {"Authorization": "Bearer abc"}},
            200,
            f'call(headers={{"Authorization": {R}}})',
        ),
        ("post", {"url": "https://u:p@h/x"}, 200, f'post(url="https://u:{R}@h/x")'),
        ("echo", {"text": "two\nlines"}, 200, 'echo(text="two\\nlines")'),
        ("echo", {"text": "héllo ✓"}, 200, 'echo(text="héllo ✓")'),
        ("search", {"q": "a" * 50}, 20, 'search(q="aaaaaaaaa…'),
        ("x" * 30, {}, 10, "xxxxxxxxx…"),
    ],
)
def test_format_call(name, args, limit, expected):
    shown = format_call(name, args, limit)
    assert shown == expected
    assert len(shown) <= limit


def test_format_call_redacts_before_it_shortens():
    """A secret cut in half by the ellipsis would no longer match a pattern: redaction comes first."""
    token = "ghp_" + "a" * 36
    shown = format_call("clone", {"token_in_text": f"x {token}"}, 20)
    assert "ghp_" not in shown


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [("abc", 3, "abc"), ("abcd", 3, "ab…"), ("abc", 1, "…"), ("abc", 0, "")],
)
def test_shorten(text, limit, expected):
    assert shorten(text, limit) == expected


class TestTheRedactionCorpus:
    """Every key of tests/support/secret_corpus.py, wherever a tool's arguments hold it, goes; values
    that hold no secret stay exactly as they were (docs/redaction.md has the comparison and cost)."""

    @pytest.mark.parametrize("name", list(CORPUS))
    def test_a_key_alone_is_redacted(self, name):
        assert leaked(json.dumps(redact(CORPUS[name]))) == []

    @pytest.mark.parametrize("name", list(CORPUS))
    def test_a_key_in_running_text_is_redacted_and_the_text_kept(self, name):
        shown = redact_text(f"echo 'using {CORPUS[name]}' >> notes.txt")
        assert leaked(shown) == []
        assert shown.startswith("echo 'using ")
        assert shown.endswith("' >> notes.txt")

    @pytest.mark.parametrize("name", list(CORPUS))
    def test_a_key_deep_in_lists_and_objects_is_redacted(self, name):
        args = {"layers": [{"settings": [{"v": CORPUS[name]}]}], "keep": "me"}
        shown = redact(args)
        assert leaked(json.dumps(shown)) == []
        assert shown["keep"] == "me"

    def test_every_key_at_once_in_one_argument_is_redacted(self):
        assert leaked(json.dumps(redact({"values": list(CORPUS.values())}))) == []

    @pytest.mark.parametrize("value", PLAIN_VALUES)
    def test_a_value_that_holds_no_secret_is_left_as_it_is(self, value):
        assert redact({"value": value}) == {"value": value}
