"""Secrets out of anything a person will see: tool arguments in cards, lines and approval prompts.

Pure and total: ``redact`` takes JSON-like data (dicts, lists, tuples, strings, numbers, booleans,
None) and returns a copy with every secret replaced by ``[redacted]``; it never raises, whatever it is
given. Two kinds of rule apply:

- by key: the value under a key that names a secret (``password``, ``token``, ``client_secret``,
  ``x-api-key``, ``Authorization``, ...; case and separators do not matter) is replaced whole, whatever
  it is (a string, a number, a nested object). None and booleans stay: they hold no secret.
- by value: wherever a string holds something shaped like a credential, that part is replaced. First
  the patterns kept here: Slack
  tokens (``xoxb-``, ``xoxp-``, ``xapp-``, ...) and webhook URLs, GitHub tokens (``ghp_``, ``gho_``,
  ``ghu_``, ``ghs_``, ``ghr_``, ``github_pat_``), AWS access key ids (``AKIA``/``ASIA``), OpenAI
  (``sk-``, ``sk-proj-``) and Anthropic (``sk-ant-``) keys, JWTs, PEM private key blocks, the password
  of a URL (``https://user:[redacted]@host``), ``Bearer``/``Basic`` credentials, and ``key=value`` or
  ``key: value`` pairs inside text whose key names a secret (``aws_secret_access_key=...``,
  ``?access_token=...``). Then detect-secrets' plugins (docs/redaction.md: they catch every key of the
  redaction corpus, the patterns here half of them): Stripe, SendGrid, GitLab, PyPI, Twilio,
  Mailchimp, Discord, Telegram, Azure storage, ... and random-looking base64 strings; the whole word
  around what a plugin reports is replaced, so a key longer than its plugin's pattern goes whole.

Only the plugins' own matching is used: no scanner, settings, filters by file or verification (a
plugin's ``analyze_line`` consults detect-secrets' global settings and may verify a key over the
network). The plugins are loaded once, at import; ``redact`` does no I/O.

Redaction never shortens: an approval prompt shows the redacted arguments exactly. ``format_call``
is the display form for step cards and lines, shortened with an ellipsis.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator, Mapping
from typing import Any, cast

import detect_secrets.plugins
from detect_secrets.core.plugins.util import get_plugins_from_module
from detect_secrets.filters import heuristic
from detect_secrets.plugins import high_entropy_strings, ip_public, keyword
from detect_secrets.plugins.base import BasePlugin
from detect_secrets.util.importlib import import_modules_from_package

REDACTED = "[redacted]"
ELLIPSIS = "…"

# Words that make a key (or a ``key=value`` inside text) name a secret. Keys are compared lowercased
# with everything but letters and digits removed, so ``X-Api-Key``, ``api_key`` and ``apiKey`` match.
_SECRET_KEY_WORDS = (
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "authorization",
    "apikey",
    "privatekey",
    "credential",
    "cookie",
    "sessionid",
    "signingkey",
    "accesskey",  # aws_access_key_id, aws_secret_access_key
)
# Short names that are secrets only when they are the whole key (``auth`` would match ``author``).
_SECRET_KEY_EXACT = frozenset({"auth", "pwd", "pass", "pw", "bearer", "jwt"})
# Keys that contain a secret word but count tokens rather than hold one (max_tokens, token_count).
_NOT_SECRET_KEY = re.compile(r"tokens$|tokencount|tokenlimit|tokenusage|tokenizer|maxtoken|numtoken")

_MAX_DEPTH = 64  # deeper than any real tool argument; beyond it everything is redacted

# Order matters: whole blocks first, then the patterns that keep part of what they match.
_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # PEM private key blocks, terminated or cut off.
    (
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----.*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----|\Z)",
            re.DOTALL,
        ),
        REDACTED,
    ),
    # Credentials in URLs: scheme://user:password@host keeps the user.
    (re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://[^\s:/@?#\"']+):[^\s@/?#\"']+@"), r"\1:" + REDACTED + "@"),
    # Slack incoming webhooks and workflow triggers: the path is the secret.
    (
        re.compile(
            r"(?i)(https?://hooks\.slack(?:-gov)?\.com/)(?:services|workflows|triggers)/[A-Za-z0-9/_\-]+"
        ),
        r"\1" + REDACTED,
    ),
    # Slack tokens: bot, user, app-level, refresh, configuration.
    (re.compile(r"\bxox[abeoprs](?:\.xox[a-z])?-[A-Za-z0-9\-]{6,}"), REDACTED),
    (re.compile(r"\bxapp-[A-Za-z0-9\-]{6,}"), REDACTED),
    # GitHub tokens.
    (re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}"), REDACTED),
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"), REDACTED),
    # Anthropic, then OpenAI (sk-, sk-proj-, sk-svcacct-, ...).
    (re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{16,}"), REDACTED),
    (re.compile(r"\bsk-[A-Za-z0-9_\-]{20,}"), REDACTED),
    # AWS access key ids (long-term and temporary).
    (re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), REDACTED),
    # JWTs: header.payload.signature, the first two base64url JSON objects.
    (re.compile(r"\beyJ[A-Za-z0-9_\-]{4,}\.eyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]*"), REDACTED),
    # HTTP credentials: Bearer <token> (Basic <base64> is checked by decoding, in _redact_basic).
    (re.compile(r"(?i)\b(bearer)\s+(?!\[redacted\])[A-Za-z0-9._~+/\-]{8,}=*"), r"\1 " + REDACTED),
)
_BASIC = re.compile(r"\b(Basic\s+)([A-Za-z0-9+/]{6,}={0,2})(?![A-Za-z0-9+/=])")
# key=value, key: value, "key": "value" inside text, where the key looks like a secret's name; the
# replacement then asks is_secret_key, so ``author: x`` or ``max_tokens=5`` stay.
_KEY_VALUE = re.compile(
    r"(?i)(?<![a-z0-9_.\-])"
    r"([a-z0-9_.\-]*(?:password|passwd|passphrase|secret|token|authorization|api[_-]?key|private[_-]?key"
    r"|credential|cookie|session[_-]?id|signing[_-]?key|access[_-]?key|auth|pwd|pass|pw|bearer|jwt)[a-z0-9_.\-]*)"
    r"([\"']?\s*[:=]\s*)"
    r"(?!\[redacted\])"
    r"((?:bearer|basic|token|digest)\s+(?:\[redacted\]|[^\s&,;\"'}\]]+)|\"[^\"]*\"|'[^']*'|[^\s&,;\"'}\]]+)"
)


def _load_plugins() -> tuple[BasePlugin, ...]:
    """Every plugin detect-secrets ships, each module read on its own (its registry would read the
    global settings for custom plugins), less those that flag what is no credential."""
    left_out = {
        ip_public.IPPublicDetector,  # a public IP address is not a secret; a host must be shown
        # 40 hex digits are a commit more often than a key; a person must see which commit a tool
        # will check out. Hex keys of known formats have plugins of their own.
        high_entropy_strings.HexHighEntropyString,
    }
    plugins: dict[type[BasePlugin], BasePlugin] = {}
    for module in import_modules_from_package(detect_secrets.plugins, filter=lambda name: False):
        # The registry's type variable reads as Never to mypy.
        found = cast(list[type[BasePlugin]], list(get_plugins_from_module(module)))
        for plugin_class in found:
            if plugin_class not in left_out and plugin_class not in plugins:
                plugins[plugin_class] = plugin_class()
    return tuple(plugins.values())


_PLUGINS = _load_plugins()
# A word around a plugin's match: a pattern that stops short of a longer key leaves no part of it.
_WORD_CHARS = r"[A-Za-z0-9_.\-]*"
# The entropy plugins' words, quoted or not: a tool's argument is rarely quoted.
_UNQUOTED_WORDS = {
    plugin.secret_type: re.compile(f"[{re.escape(plugin.charset)}]+")
    for plugin in _PLUGINS
    if isinstance(plugin, high_entropy_strings.HighEntropyStringsPlugin)
}


def _plugin_findings(line: str) -> Iterator[str]:
    """What detect-secrets' plugins report as a secret in one line, less what its heuristics call
    an id, a template, a sequence or no word at all (its own filters, the ones that need no file)."""
    for plugin in _PLUGINS:
        if isinstance(plugin, high_entropy_strings.HighEntropyStringsPlugin):
            # n characters hold at most log2(n) bits each: a word no longer than 2 ** limit never
            # passes the limit, so its entropy (most of the time a long log took) is not computed.
            shortest = 2**plugin.entropy_limit
            found: Iterator[str] = (
                word
                for word in _UNQUOTED_WORDS[plugin.secret_type].findall(line)
                if len(word) > shortest and plugin.calculate_shannon_entropy(word) > plugin.entropy_limit
            )
        elif isinstance(plugin, keyword.KeywordDetector):
            found = plugin.analyze_string(line, keyword.CONFIG_DENYLIST_REGEX_TO_GROUP)
        else:
            found = plugin.analyze_string(line)
        for secret in found:
            if not (
                heuristic.is_sequential_string(secret)
                or heuristic.is_potential_uuid(secret)
                or heuristic.is_likely_id_string(secret, line, plugin)
                or heuristic.is_templated_secret(secret)
                or heuristic.is_not_alphanumeric_string(secret)
                or secret in (REDACTED, REDACTED[1:-1])
            ):
                yield secret


def _redact_plugin_findings(text: str) -> str:
    for line in text.splitlines() or [text]:
        for secret in sorted(set(_plugin_findings(line)), key=len, reverse=True):
            text = _redact_words_around(text, secret)
    return text


def _redact_words_around(text: str, secret: str) -> str:
    return re.sub(f"{_WORD_CHARS}{re.escape(secret)}{_WORD_CHARS}", REDACTED, text)


def is_secret_key(key: object) -> bool:
    """True when a mapping key names a secret (``client_secret``, ``X-Api-Key``, ``accessToken``, ...)."""
    try:
        norm = re.sub(r"[^a-z0-9]", "", str(key).lower())
    except Exception:
        return False
    if norm in _SECRET_KEY_EXACT:
        return True
    if _NOT_SECRET_KEY.search(norm):
        return False
    return any(word in norm for word in _SECRET_KEY_WORDS)


def redact_text(text: str) -> str:
    """Replaces every credential-shaped part of ``text`` with ``[redacted]``."""
    if not isinstance(text, str):
        return redact(text)  # type: ignore[no-any-return]
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    text = _BASIC.sub(_redact_basic, text)
    text = _KEY_VALUE.sub(_redact_pair, text)
    return _redact_plugin_findings(text)


def _redact_basic(match: re.Match[str]) -> str:
    """``Basic <base64 of user:password>``; ``Basic authentication`` is prose and stays."""
    try:
        decoded = base64.b64decode(match.group(2) + "=" * (-len(match.group(2)) % 4), validate=True)
        is_credential = ":" in decoded.decode("utf-8")
    except Exception:
        is_credential = False
    return match.group(1) + REDACTED if is_credential else match.group(0)


def _redact_pair(match: re.Match[str]) -> str:
    key, sep, _ = match.groups()
    return key + sep + REDACTED if is_secret_key(key) else match.group(0)


def redact(value: Any) -> Any:
    """A copy of JSON-like ``value`` with every secret replaced by ``[redacted]``. Never raises."""
    try:
        return _redact(value, 0)
    except Exception:  # an object whose str() or iteration fails: show nothing of it
        return REDACTED


def _redact(value: Any, depth: int) -> Any:
    if depth > _MAX_DEPTH:
        return REDACTED
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, Mapping):
        out: dict[Any, Any] = {}
        for key, item in value.items():
            if is_secret_key(key) and item is not None and not isinstance(item, bool):
                out[key] = REDACTED
            else:
                out[key] = _redact(item, depth + 1)
        return out
    if isinstance(value, list | tuple | set | frozenset):
        items = [_redact(item, depth + 1) for item in value]
        return tuple(items) if isinstance(value, tuple) else items
    if isinstance(value, bytes | bytearray):
        return redact_text(bytes(value).decode("utf-8", "replace"))
    return redact_text(str(value))


def shorten(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, ending in ``…`` when cut."""
    if limit <= 0:
        return ""
    if len(text) <= limit:
        return text
    return text[: limit - 1] + ELLIPSIS


def _show(value: Any) -> str:
    if value == REDACTED:
        return REDACTED
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except Exception:  # circular or otherwise unserializable: fall back to str
        return str(value)


def format_call(name: str, args: Any, limit: int) -> str:
    """A tool call for display, ``name(key="value", n=2)``: redacted first, then shortened to ``limit``.

    Values are shown as JSON (strings quoted, newlines escaped) so the result is one line. Arguments
    that are not a mapping are shown as one JSON value: ``name([1, 2])``. The final text is redacted
    once more, so a secret can never survive through an odd key or value rendering.
    """
    try:
        clean = redact(args if args is not None else {})
        if isinstance(clean, Mapping):
            inner = ", ".join(f"{key}={_show(item)}" for key, item in clean.items())
        else:
            inner = _show(clean)
        shown = f"{name}({inner})"
    except Exception:
        shown = f"{name}(…)"
    return shorten(redact_text(" ".join(shown.split())), limit)
