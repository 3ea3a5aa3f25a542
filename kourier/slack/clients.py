"""Slack Web API clients. Every client in the product is made here, so all of them use SLACK_API_URL
and the same rules for Slack's faults.

Budgets (budgets.py). A client has a ``workspace`` key: the caller's (a Connection's team or id), or
else the bot token's digest, since one bot token is one app in one workspace. Before each call it
reserves the next free slot of its (workspace, method) budget (per channel for posts), shared by
every process through Redis in one round trip, and waits until then: calls wait their turn instead of
drawing 429s. A 429 that still comes blocks the budget until its ``Retry-After`` is over. A call waits
at most ``RetryPolicy.max_wait`` in all, and less inside ``patience(seconds)`` (a reply's writes that a
later one can replace): a slot later than that is not reserved and the call fails at once with
``SlackRateLimited``, a ``SlackApiError`` whose error is ``ratelimited``, without calling Slack.
``next_free`` tells when a call could go, without reserving (a reply choosing its mode).

Faults, per call (faults.py tells which is which):

- 429: Slack did not apply the call. It is sent again once the block is over, at most
  ``rate_limit_retries`` times, within ``max_wait``; then the 429 reaches the caller.
- A server error (HTTP 500-504, or Slack's ``fatal_error`` / ``internal_error`` /
  ``service_unavailable`` / ``request_timeout``), a timeout or a dropped connection: a repeatable
  call is sent again after an exponential backoff with jitter, at most ``attempts`` sends within
  ``max_wait``; then the caller gets the server's error, or ``SlackUnavailable`` for a timeout or a
  dropped connection. A connection that could not be opened never reached Slack, so every call,
  repeatable or not, is sent again after it.
- A call that is not repeatable (``NOT_REPEATABLE_METHODS``: Slack would show a repeat twice) and may
  have reached Slack is checked before it is sent again, after the backoff:

  - ``chat.postMessage`` in a thread with ``metadata``: the thread is searched for a message with
    that metadata (threads.py). Found, its answer is made from the message, and nothing is sent.
    The metadata must name the post (the writer puts the post's key in it).
  - ``chat.startStream`` in a thread: the thread is searched for a message this bot began since the
    call, with no metadata (threads.py). Found, it is the stream; the writer goes on appending to it.
  - any other (``chat.appendStream``, ``chat.postEphemeral``, a post without thread or metadata):
    ``SlackOutcomeUnknown`` is raised and nothing is repeated. The writer gives up a stream whose
    append was lost and rewrites the message with ``chat.update``, which can be repeated.

  A check that fails itself raises ``SlackOutcomeUnknown``: nothing is sent that may show twice.

The sync client (``web_client``) follows the same budgets and retries, without the checks: its
posts are not in threads.

Every call is counted once by method and how it ended (``call_outcome``), and every 429 Slack
answers by method (kourier/metrics.py). A failure an operator should see is kept as the workspace's
last (failures.py), for a Binding's live page.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import hashlib
import logging
import math
import random
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
from django.conf import settings
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse
from slack_sdk.web.slack_response import SlackResponse

from kourier import egress, metrics, shared_cache, tracing
from kourier.slack import call_log

from . import failures
from .budgets import Budget, Reservation, budgets_enabled
from .faults import (
    CALL_OK,
    TRANSPORT_ERRORS,
    fault_name,
    is_server_error,
    never_reached_slack,
    retry_after_of,
    slack_error,
)

# The faults' names the apps catch and ask about, where they make their clients.
from .faults import SlackBudgetDeferred as SlackBudgetDeferred
from .faults import SlackError as SlackError
from .faults import SlackOutcomeUnknown as SlackOutcomeUnknown
from .faults import SlackRateLimited as SlackRateLimited
from .faults import SlackUnavailable as SlackUnavailable
from .faults import call_outcome as call_outcome
from .faults import error_name as error_name
from .faults import may_pass as may_pass
from .threads import find_post, find_started_stream

logger = logging.getLogger(__name__)

# Slack answers within a few seconds; a call that hangs longer is treated as a timeout.
SLACK_TIMEOUT_SECONDS = 10
# Calls that create something Slack shows: repeating one whose answer was lost could show it twice.
NOT_REPEATABLE_METHODS = frozenset(
    {
        "chat.postMessage",
        "chat.postEphemeral",
        "chat.startStream",
        "chat.appendStream",
        # A repeat shares the file twice; sessions/files_out.py looks for it in the thread instead.
        "files.completeUploadExternal",
    }
)


@dataclass(frozen=True)
class RetryPolicy:
    """How long one call keeps trying. ``max_wait`` bounds all its waiting: blocks and backoffs."""

    attempts: int = 4  # sends of a call that meets server errors, timeouts or dropped connections
    backoff: float = 0.5  # the first backoff, doubled for each failed send
    max_backoff: float = 8.0
    rate_limit_retries: int = 5
    max_wait: float = 60.0

    def backoff_delay(self, failures: int) -> float:
        """Exponential backoff with jitter: half the step, plus up to the other half at random."""
        step = min(self.max_backoff, self.backoff * 2 ** max(0, failures - 1))
        return step / 2 + random.uniform(0, step / 2)


RETRY_POLICY = RetryPolicy()

# How long the calls made inside ``patience()`` may wait for their budget's slot (None: max_wait).
_patience: contextvars.ContextVar[float | None] = contextvars.ContextVar("slack_patience", default=None)


@contextlib.contextmanager
def patience(seconds: float) -> Iterator[None]:
    """The calls made inside wait at most ``seconds`` for their slot (in place of ``max_wait``: more,
    for a final answer that must wait its turn; less, for a write a later one can replace), else fail
    with ``SlackBudgetDeferred`` at once, reserving nothing (its Retry-After: when a slot could be had)."""
    token = _patience.set(seconds)
    try:
        yield
    finally:
        _patience.reset(token)


def channel_of(kwargs: Mapping[str, Any]) -> str | None:
    """The channel a call is for (posts have a budget per channel)."""
    arguments = kwargs.get("json") or kwargs.get("data") or kwargs.get("params") or {}
    channel = arguments.get("channel") if isinstance(arguments, Mapping) else None
    return channel if isinstance(channel, str) else None


def connection_workspace(connection_id: int) -> str:
    """The budget key of a Connection: Slack's limits are per app and workspace, which a Connection
    is (and it outlives a rotated token)."""
    return f"connection-{connection_id}"


def workspace_key(token: str | None, workspace: str | None) -> str:
    if workspace:
        return workspace
    return "token-" + hashlib.sha256((token or "").encode()).hexdigest()[:16]


class _Attempts:
    """The decisions for one call: what a fault means, how long to wait, when to give up."""

    def __init__(
        self, api_method: str, api_url: str, workspace: str, policy: RetryPolicy, now: float
    ) -> None:
        self.method = api_method
        self.api_url = api_url
        self.workspace = workspace
        self.policy = policy
        self.began = now
        self.deadline = now + policy.max_wait
        self.rate_limited = 0
        self.failures = 0

    def max_wait(self, now: float) -> float:
        """How long this call may wait for a slot: its patience, else (and without budgets, the naive
        bridge) to its deadline."""
        patient = _patience.get()
        if patient is None or not budgets_enabled():
            return max(0.0, self.deadline - now)
        return patient

    def wait_for_slot(self, reservation: Reservation, now: float) -> float:
        """Seconds to wait for the slot reserved (0: go), or SlackRateLimited when none was."""
        if reservation.reserved:
            wait = reservation.wait(now)
            if wait > 0:
                logger.info(
                    "slack.budget_wait",
                    extra={"workspace": self.workspace, "method": self.method, "seconds": round(wait, 1)},
                )
            return wait
        seconds = max(1, math.ceil(reservation.at - now - 0.001))  # Redis rounds the slot to microseconds
        deferred = _patience.get() is not None  # the caller asked to hear of it, not to wait
        logger.info(
            "slack.budget_deferred" if deferred else "slack.budget_wait_exceeded",
            extra={"workspace": self.workspace, "method": self.method, "seconds": seconds},
        )
        raise slack_error(
            SlackBudgetDeferred if deferred else SlackRateLimited,
            self.api_url,
            "ratelimited",
            status=429,
            headers={"Retry-After": str(seconds)},
        )

    def rate_limit_retry(self, exc: SlackApiError) -> bool:
        """Counts a 429; False when the call must give up on it."""
        self.rate_limited += 1
        logger.info(
            "slack.rate_limited",
            extra={"workspace": self.workspace, "method": self.method, "attempt": self.rate_limited},
        )
        return self.rate_limited <= self.policy.rate_limit_retries

    def backoff_after(self, exc: BaseException, now: float) -> float | None:
        """Counts a failed send; the backoff before the next, or None when the call must give up."""
        self.failures += 1
        delay = self.policy.backoff_delay(self.failures)
        give_up = self.failures >= self.policy.attempts or now + delay > self.deadline
        logger.info(
            "slack.call_failed",
            extra={
                "workspace": self.workspace,
                "method": self.method,
                "error": fault_name(exc),
                "attempt": self.failures,
                "last": give_up,
            },
        )
        return None if give_up else delay

    def final_error(self, exc: BaseException) -> BaseException:
        if isinstance(exc, SlackApiError):
            return exc
        error = slack_error(SlackUnavailable, self.api_url, fault_name(exc))
        error.__cause__ = exc
        return error

    def outcome_unknown(self, exc: BaseException) -> SlackApiError:
        logger.warning(
            "slack.outcome_unknown",
            extra={"workspace": self.workspace, "method": self.method, "error": fault_name(exc)},
        )
        error = slack_error(SlackOutcomeUnknown, self.api_url, fault_name(exc))
        error.__cause__ = exc
        return error


# auth.test's answers, per token (its digest), for the process; one lock per loop and token.
_identities: dict[str, AsyncSlackResponse] = {}
_identity_locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Lock]] = (
    weakref.WeakKeyDictionary()
)


def forget_identities() -> None:
    """Forgets the tokens' auth.test answers (tests; a rotated token is a new key anyway)."""
    _identities.clear()


class KourierAsyncWebClient(AsyncWebClient):
    """An AsyncWebClient with the product's budgets, retries and checks (see the module docstring)."""

    def __init__(
        self,
        *,
        workspace: str,
        policy: RetryPolicy = RETRY_POLICY,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
        **kwargs: Any,
    ) -> None:
        super().__init__(retry_handlers=[], **kwargs)
        # slack_sdk took HTTPS_PROXY but not NO_PROXY: the proxy is the one egress picks for Slack.
        self.proxy = egress.proxy_for(self.base_url)
        self.workspace = workspace
        self.policy = policy
        self._budget = Budget(workspace)
        self._clock = clock
        self._sleep = sleep
        self._bot_user_id: str | None = None

    async def api_call(self, api_method: str, **kwargs: Any) -> AsyncSlackResponse:  # type: ignore[override]
        with (
            tracing.call("slack." + api_method, {"slack.method": api_method}) as traced,
            call_log.call(api_method) as noted,
        ):
            return await self._traced_call(traced, noted, api_method, **kwargs)

    async def _traced_call(
        self, traced: Any, noted: call_log.Call | None, api_method: str, /, **kwargs: Any
    ) -> AsyncSlackResponse:
        try:
            response = await self._call_with_retries(traced, api_method, **kwargs)
        except Exception as exc:
            outcome, error = call_outcome(exc), fault_name(exc)
            if noted is not None:
                noted.outcome = error or outcome
            traced.set_attribute("slack.outcome", outcome)
            traced.set_attribute("slack.error", error)
            metrics.slack_call(api_method, outcome)
            if failures.worth_showing(outcome, error):  # a call deferred by its caller is not a failure
                at = self._clock()
                await shared_cache.arun(lambda: failures.remember(self.workspace, api_method, error, at))
            raise
        metrics.slack_call(api_method, CALL_OK)
        traced.set_attribute("slack.outcome", CALL_OK)
        return response

    async def _call_with_retries(self, traced: Any, api_method: str, /, **kwargs: Any) -> AsyncSlackResponse:
        attempts = _Attempts(
            api_method, self.base_url + api_method, self.workspace, self.policy, self._clock()
        )
        channel = channel_of(kwargs)
        while True:
            now = self._clock()
            reservation = await self._budget.areserve(
                api_method, now, channel=channel, max_wait=attempts.max_wait(now)
            )
            if wait := attempts.wait_for_slot(reservation, self._clock()):
                # Kourier's own pacing, not a fault: the call's record says how long (kourier/tracing.py).
                traced.set_attribute("kourier.budget_wait_ms", round(wait * 1000))
                await self._sleep(wait)
            try:
                return await super().api_call(api_method, **kwargs)
            except SlackApiError as exc:
                retry_after = retry_after_of(exc)
                if retry_after is not None:
                    metrics.slack_rate_limited(api_method)
                    traced.add_event("slack.rate_limited", retry_after=retry_after)
                    call_log.retried()
                    await self._budget.ablock(
                        api_method, self._clock() + retry_after, retry_after, channel=channel
                    )
                    if attempts.rate_limit_retry(exc):
                        continue
                    raise
                if not is_server_error(exc):
                    raise
                fault: BaseException = exc
            except TRANSPORT_ERRORS as exc:
                fault = exc
            delay = attempts.backoff_after(fault, self._clock())
            may_repeat = api_method not in NOT_REPEATABLE_METHODS or never_reached_slack(fault)
            if not may_repeat:
                check = self._check_for(api_method, kwargs)
                if check is None:
                    raise attempts.outcome_unknown(fault) from fault
                # Slack may still be applying the call: the backoff comes before the check.
                await self._sleep(delay if delay is not None else self.policy.backoff)
                try:
                    found = await check(attempts.began)
                except Exception as exc:
                    logger.warning(
                        "slack.check_failed", extra={"method": api_method, "error": fault_name(exc)}
                    )
                    raise attempts.outcome_unknown(fault) from fault
                if found is not None:
                    logger.info("slack.applied_call_found", extra={"method": api_method})
                    return self._found_response(api_method, kwargs, found)
                if delay is None:
                    raise attempts.outcome_unknown(fault) from fault
                continue
            if delay is None:
                raise attempts.final_error(fault) from fault
            traced.add_event("slack.retry", error=fault_name(fault))
            call_log.retried()
            await self._sleep(delay)

    async def admit(self, api_method: str, *, within: float, channel: str | None = None) -> bool:
        """Reserves a slot of ``api_method``'s budget (one not called: ``budgets.UPDATED_REPLIES``)
        when one is free within ``within`` seconds; whether it did."""
        now = self._clock()
        reservation = await self._budget.areserve(api_method, now, channel=channel, max_wait=within)
        return reservation.reserved

    async def next_free(self, api_method: str, *, channel: str | None = None) -> float:
        """Seconds until a call of ``api_method`` could go (0: now), reserving nothing."""
        now = self._clock()
        reservation = await self._budget.areserve(
            api_method, now, channel=channel, max_wait=math.inf, take=False
        )
        return reservation.wait(now)

    def _check_for(
        self, api_method: str, kwargs: Mapping[str, Any]
    ) -> Callable[[float], Awaitable[dict[str, Any] | None]] | None:
        """How to find out whether Slack applied a call that is not repeatable, or None: no way."""
        arguments = kwargs.get("json") or kwargs.get("data") or kwargs.get("params") or {}
        channel, thread_ts = arguments.get("channel"), arguments.get("thread_ts")
        if not (isinstance(channel, str) and isinstance(thread_ts, str) and thread_ts):
            return None
        metadata = arguments.get("metadata")
        if api_method == "chat.postMessage" and isinstance(metadata, Mapping):

            async def find_the_post(began: float) -> dict[str, Any] | None:
                return await find_post(self, channel, thread_ts, metadata)

            return find_the_post
        if api_method == "chat.startStream":

            async def find_the_stream(began: float) -> dict[str, Any] | None:
                return await find_started_stream(
                    self, channel, thread_ts, bot_user_id=await self._own_user_id(), since=began
                )

            return find_the_stream
        return None

    async def _own_user_id(self) -> str:
        if self._bot_user_id is None:
            self._bot_user_id = str((await self.identity())["user_id"])
        return self._bot_user_id

    async def identity(self) -> AsyncSlackResponse:
        """``auth.test``'s answer for this client's token, asked once per process (``forget_identities``):
        who a token is does not change, and a burst of events or turns asked it again and again."""
        if self.token is None:
            return await self.auth_test()
        key = workspace_key(self.token, None)
        known = _identities.get(key)
        if known is not None:
            return known
        locks = _identity_locks.setdefault(asyncio.get_running_loop(), {})
        async with locks.setdefault(key, asyncio.Lock()):
            known = _identities.get(key)
            if known is None:
                known = _identities[key] = await self.auth_test()
        return known

    def _found_response(
        self, api_method: str, kwargs: Mapping[str, Any], message: dict[str, Any]
    ) -> AsyncSlackResponse:
        """The answer Slack would have given to the call whose answer was lost."""
        arguments = kwargs.get("json") or kwargs.get("data") or {}
        return AsyncSlackResponse(
            client=self,
            http_verb="POST",
            api_url=self.base_url + api_method,
            req_args={},
            data={"ok": True, "channel": arguments.get("channel"), "ts": message["ts"], "message": message},
            headers={},
            status_code=200,
        )


class KourierWebClient(WebClient):
    """A WebClient with the product's budgets and retries (see the module docstring)."""

    def __init__(
        self,
        *,
        workspace: str,
        policy: RetryPolicy = RETRY_POLICY,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Any] = time.sleep,
        **kwargs: Any,
    ) -> None:
        super().__init__(retry_handlers=[], **kwargs)
        # slack_sdk took HTTPS_PROXY but not NO_PROXY: the proxy is the one egress picks for Slack.
        self.proxy = egress.proxy_for(self.base_url)
        self.workspace = workspace
        self.policy = policy
        self._budget = Budget(workspace)
        self._clock = clock
        self._sleep = sleep

    def api_call(self, api_method: str, **kwargs: Any) -> SlackResponse:  # type: ignore[override]
        try:
            response = self._call_with_retries(api_method, **kwargs)
        except Exception as exc:
            outcome, error = call_outcome(exc), fault_name(exc)
            metrics.slack_call(api_method, outcome)
            if failures.worth_showing(outcome, error):
                failures.remember(self.workspace, api_method, error, self._clock())
            raise
        metrics.slack_call(api_method, CALL_OK)
        return response

    def _call_with_retries(self, api_method: str, **kwargs: Any) -> SlackResponse:
        attempts = _Attempts(
            api_method, self.base_url + api_method, self.workspace, self.policy, self._clock()
        )
        channel = channel_of(kwargs)
        while True:
            now = self._clock()
            reservation = self._budget.reserve(
                api_method, now, channel=channel, max_wait=attempts.max_wait(now)
            )
            if wait := attempts.wait_for_slot(reservation, self._clock()):
                self._sleep(wait)
            try:
                return super().api_call(api_method, **kwargs)
            except SlackApiError as exc:
                retry_after = retry_after_of(exc)
                if retry_after is not None:
                    metrics.slack_rate_limited(api_method)
                    self._budget.block(api_method, self._clock() + retry_after, retry_after, channel=channel)
                    if attempts.rate_limit_retry(exc):
                        continue
                    raise
                if not is_server_error(exc):
                    raise
                fault: BaseException = exc
            except TRANSPORT_ERRORS as exc:
                fault = exc
            delay = attempts.backoff_after(fault, self._clock())
            if api_method in NOT_REPEATABLE_METHODS and not never_reached_slack(fault):
                raise attempts.outcome_unknown(fault) from fault
            if delay is None:
                raise attempts.final_error(fault) from fault
            self._sleep(delay)


def web_client(
    token: str,
    *,
    workspace: str | None = None,
    timeout: float = SLACK_TIMEOUT_SECONDS,
    policy: RetryPolicy = RETRY_POLICY,
) -> KourierWebClient:
    return KourierWebClient(
        token=token,
        base_url=settings.SLACK_API_URL,
        timeout=timeout,
        workspace=workspace_key(token, workspace),
        policy=policy,
    )


# The aiohttp session the clients made on an event loop share, for the loops that open one
# (``shared_session``: the worker's turn loop). Without it slack_sdk makes a session per call, and
# against Slack a TLS connection per call (docs/performance.md, issue 17 point 6).
_loop_sessions: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, aiohttp.ClientSession] = (
    weakref.WeakKeyDictionary()
)


@contextlib.asynccontextmanager
async def shared_session() -> AsyncIterator[aiohttp.ClientSession]:
    """While open, every async client made on this loop with the default timeout calls Slack through
    one aiohttp session, and so reuses its connections; closed on the way out."""
    loop = asyncio.get_running_loop()
    # No cap on connections: as many calls go at once as when each had its own session.
    session = aiohttp.ClientSession(
        timeout=aiohttp.ClientTimeout(total=SLACK_TIMEOUT_SECONDS),
        connector=aiohttp.TCPConnector(limit=0),
    )
    _loop_sessions[loop] = session
    try:
        yield session
    finally:
        if _loop_sessions.get(loop) is session:
            del _loop_sessions[loop]
        await session.close()


def _loop_session(timeout: float) -> aiohttp.ClientSession | None:
    """The running loop's shared session, if it has one and the client's timeout is the session's."""
    if timeout != SLACK_TIMEOUT_SECONDS:
        return None
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return None
    session = _loop_sessions.get(loop)
    return session if session is not None and not session.closed else None


def async_web_client(
    token: str | None,
    *,
    workspace: str | None = None,
    timeout: float = SLACK_TIMEOUT_SECONDS,
    policy: RetryPolicy = RETRY_POLICY,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
) -> KourierAsyncWebClient:
    """``workspace``: the key the budgets are kept under (the Connection's); else the token's. With no
    token, each call's token is set by its caller (Bolt does). Made on a loop with a ``shared_session``,
    the client calls through it."""
    return KourierAsyncWebClient(
        token=token,
        base_url=settings.SLACK_API_URL,
        timeout=timeout,
        session=_loop_session(timeout),
        workspace=workspace_key(token, workspace),
        policy=policy,
        clock=clock,
        sleep=sleep,
    )
