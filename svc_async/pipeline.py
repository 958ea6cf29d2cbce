"""The life of one call: auth, pacing, sending, observing and retrying under one deadline.

Two layers, after gidgethub's sans-I/O split:

* ``decide`` is pure: from the attempt number, what came back (an ``Outcome``), the
  ``RetryPolicy``, the clock, the deadline and the retry budget it says what happens
  next (a ``Decision``: return, renew auth, wait and retry, resolve an ambiguous
  outcome, or raise). It does no I/O and is tested as a table.
* ``run`` is the one async loop that carries a ``Call`` out through an ``Env`` (the
  client's transport, auth, pacer and budget) and returns the decoded data, or, when
  the call asks, a ``Reply``: the data with the metadata of the response that carried it.

A call's body is decoded by its ``decode`` strategy (``decode_json`` by default). A call
may instead give ``stream_decode``: the pipeline then opens the response as a stream and
hands a 2xx body to it unread (e.g. an incremental JSON decoder for large answers);
other statuses are read whole, as usual.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import random
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

import attrs
import orjson
import yarl

from .clock import SYSTEM_CLOCK, Clock
from .errors import (
    APIError,
    ClientClosedError,
    ConnectError,
    LocalProtocolError,
    PacingExceedsDeadline,
    RateLimitError,
    RequestTimeout,
    ResponseDecodeError,
    ResponseTooLargeError,
    SvcError,
    TransportError,
    error_class_for,
)
from .models import RateLimit
from .ratelimit import Pacer, parse_rate_limit
from .redact import redact_text, redact_url, redact_value
from .retry import RetryBudget, RetryPolicy, server_wait
from .transport import Request, Response, StreamingTransport, StreamResponse, Timeout, Transport

logger = logging.getLogger(__name__)

Decoder = Callable[[Response], Any]
"""Turn a complete 2xx ``Response`` into data (raise ``ResponseDecodeError`` if it can't)."""

StreamDecoder = Callable[[StreamResponse], Awaitable[Any]]
"""Turn a streamed 2xx response (body unread) into data, e.g. incrementally."""

Resolver = Callable[[SvcError, "float | None"], Awaitable[Any]]
"""Settle an ambiguous failure of a call that is unsafe to repeat, before ``deadline``.

Returns the data the call would have returned, or raises (e.g. ``AmbiguousCreateError``).
"""


class Action(enum.Enum):
    """What the pipeline does after an attempt."""

    RETURN = "return"
    RENEW = "renew"
    RETRY = "retry"
    RESOLVE = "resolve"
    RAISE = "raise"


@attrs.frozen(slots=True)
class Outcome:
    """What one attempt produced: a status (None: no response) and the failure, if any.

    ``server_wait`` is the positive wait the server named (Retry-After, or the reset on
    a 429), None when it named no usable one (see ``retry.server_wait``);
    ``unprocessed`` is True when the answer proves the request was not acted on.
    """

    status: int | None
    failure: SvcError | None = None
    server_wait: float | None = None
    unprocessed: bool = False


@attrs.frozen(slots=True)
class Decision:
    """The next step. ``wait`` applies to RETRY; ``spend`` is the retry-budget cost."""

    action: Action
    wait: float = 0.0
    spend: int = 0
    reason: str = ""
    rate_limited: bool = False


RETURN = Decision(Action.RETURN)
RENEW = Decision(Action.RENEW)


def outcome_of(
    status: int | None,
    failure: SvcError | None,
    headers: Mapping[str, str],
    wall: float | None = None,
) -> Outcome:
    """Classify an attempt: did the service certainly not process it?

    Unprocessed: a refused connection (``ConnectError``), a request refused before
    sending (``LocalProtocolError``), a 429 and a 503 (the service, or the gateway in
    front of it, refusing before anything starts). Everything else (a
    500, 502 or 504, a dropped connection, a timeout, a body cut off) may have been
    processed. ``wall`` is the epoch time a ``Retry-After`` date is read against.
    """
    if status is None:
        unprocessed = isinstance(failure, ConnectError) or (
            isinstance(failure, TransportError) and not failure.maybe_sent
        )
        return Outcome(None, failure, None, unprocessed)
    wait = server_wait(status, headers, wall) if status >= 300 else None
    unprocessed = status in (429, 503)
    return Outcome(status, failure, wait, unprocessed)


def decide(
    *,
    attempt: int,
    outcome: Outcome,
    policy: RetryPolicy,
    idempotent: bool,
    now: float,
    deadline: float | None,
    backoff: float,
    budget_tokens: int,
    budget: RetryBudget,
    can_renew: bool,
    can_resolve: bool,
) -> Decision:
    """The next step after attempt ``attempt`` (1-based) ended with ``outcome``.

    ``backoff`` is the jittered wait the policy draws for this attempt (drawn by the
    caller so this stays pure). Rules, in order: 2xx returns; a 401 renews auth once;
    an oversized body, a request refused locally or a status outside
    ``policy.statuses`` raises; a failure that may have been processed by a call unsafe
    to repeat is resolved (when a resolver exists) or raised; a server wait above
    ``policy.max_server_wait`` raises as a rate limit, however large; then every retry,
    429s included, needs an attempt left, a wait (``policy.retry_wait``) that ends
    before the deadline (else it raises, as a rate limit when the server named the
    wait), and its cost in the retry budget.
    """
    status, failure = outcome.status, outcome.failure
    if failure is None and status is not None and 200 <= status < 300:
        return RETURN
    if status == 401 and can_renew:
        return RENEW
    if isinstance(failure, ResponseTooLargeError):
        return Decision(Action.RAISE, reason="too large")
    if isinstance(failure, LocalProtocolError):
        return Decision(Action.RAISE, reason="refused locally")
    if isinstance(failure, APIError) and status not in policy.statuses:
        return Decision(Action.RAISE, reason=f"HTTP {status}")
    if not idempotent and not outcome.unprocessed:
        if can_resolve:
            return Decision(Action.RESOLVE, reason="ambiguous")
        return Decision(Action.RAISE, reason="not safe to repeat")
    server = outcome.server_wait
    if server is not None and server > policy.max_server_wait:
        return Decision(Action.RAISE, reason="server wait too long", rate_limited=True)
    if attempt >= policy.max_attempts:
        return Decision(Action.RAISE, reason="attempts spent")
    wait = policy.retry_wait(attempt, backoff, server, refused=status in (429, 503))
    if deadline is not None and now + wait >= deadline:
        return Decision(Action.RAISE, reason="deadline", rate_limited=server is not None)
    cost = budget.timeout_cost if isinstance(failure, RequestTimeout) else budget.retry_cost
    if budget_tokens < cost:
        return Decision(Action.RAISE, reason="retry budget exhausted")
    reason = f"HTTP {status}" if status is not None else type(failure).__name__
    return Decision(Action.RETRY, wait=wait, spend=cost, reason=reason)


class ResponseMeta:
    """The metadata of the response that carried a call's data: status and headers.

    ``date`` is the server's ``Date`` header; ``rate_limit`` its ``x-ratelimit-*``
    headers, parsed on first use.
    """

    __slots__ = ("_rate", "headers", "status")

    def __init__(self, status: int, headers: Mapping[str, str]) -> None:
        self.status = status
        self.headers = headers
        self._rate: RateLimit | bool | None = False

    def __repr__(self) -> str:
        return f"<ResponseMeta {self.status} date={self.date!r}>"

    @property
    def date(self) -> str | None:
        """The server's ``Date`` header (its clock), if any."""
        return self.headers.get("Date")

    @property
    def rate_limit(self) -> RateLimit | None:
        """The ``x-ratelimit-*`` headers of this response, if any."""
        if self._rate is False:
            self._rate = parse_rate_limit(self.headers)
        return self._rate  # type: ignore[return-value]


class Reply:
    """A call's decoded data with the metadata of the response that carried it.

    ``meta`` is None when no single response carried the data (an ambiguous create
    settled by a search). Made only for calls that ask for it (``Call.reply``).
    """

    __slots__ = ("_headers", "_meta", "_status", "data")

    def __init__(
        self, data: Any, status: int | None = None, headers: Mapping[str, str] | None = None
    ) -> None:
        self.data = data
        self._status = status
        self._headers = headers
        self._meta: ResponseMeta | None = None

    def __repr__(self) -> str:
        return f"<Reply status={self._status}>"

    @property
    def meta(self) -> ResponseMeta | None:
        """The response's metadata (status, ``Date``, rate limit), made on first use."""
        if self._meta is None and self._status is not None and self._headers is not None:
            self._meta = ResponseMeta(self._status, self._headers)
        return self._meta


@attrs.define(slots=True, kw_only=True)
class Call:
    """Everything one logical call needs; built by the client from a resource's request.

    Not frozen: one is built per call, and a frozen class pays a setattr call per field.
    Nothing changes a ``Call`` once built.
    """

    method: str
    url: yarl.URL
    content: bytes | None
    idempotent: bool
    timeout: Timeout
    policy: RetryPolicy
    authenticate: bool = True
    decode: Decoder | None = None
    stream_decode: StreamDecoder | None = None
    resolve: Resolver | None = None
    reply: bool = False
    """Return the ``Reply`` (data and response metadata) rather than the data alone."""


@attrs.define(slots=True, kw_only=True)
class Env:
    """The client-wide pieces a call runs through (shared by concurrent calls)."""

    transport: Transport
    auth_headers: Callable[[], Awaitable[Mapping[str, str]]]
    static_auth: Mapping[str, str] | None = None
    renew: Callable[[Mapping[str, str]], Awaitable[bool]]
    headers: Callable[[Mapping[str, str] | None, bool], Mapping[str, str]]
    secrets: Callable[[], tuple[str, ...]]
    observe: Callable[[Response | None], None]
    pacer: Pacer | None
    budget: RetryBudget
    rng: random.Random
    active: dict[asyncio.Task[Any], int] = attrs.field(factory=dict)
    """The tasks running calls (a count per task: calls nest), for ``closed`` to end."""
    closed: Callable[[], bool] = lambda: False
    """Whether the client was closed: a call cancelled then raises ClientClosedError."""
    clock: Clock = SYSTEM_CLOCK
    """Deadlines, backoff sleeps and ``Retry-After`` dates are read on this clock."""


def decode_json(response: Response) -> Any:
    """The default decoder: the body as JSON (None when empty), integers kept exact."""
    content = response.content
    if not content:
        return None
    try:
        data = orjson.loads(content)
    except orjson.JSONDecodeError as exc:
        snippet = redact_text(" ".join(response.text[:80].split()))
        raise ResponseDecodeError(
            f"HTTP {response.status} body is not valid JSON ({exc.msg}): {snippet!r}",
            status=response.status,
        ) from None
    if content.translate(_DIGITS).find(_NINETEEN) >= 0:
        # orjson reads integers beyond 64 bits as floats: decode exactly instead.
        import json

        with contextlib.suppress(ValueError):
            data = json.loads(content)
    return data


_DIGITS = bytes(48 if 48 <= i <= 57 else 32 for i in range(256))
"""Maps every digit to ``0`` and everything else to a space (a C-speed scan for runs)."""
_NINETEEN = b"0" * 19
"""A run of 19+ digits: a number that may not fit 64 bits (or a long digit string)."""


def api_error(
    response: Response,
    method: str,
    url: yarl.URL,
    secrets: Iterable[str],
    *,
    as_rate_limit: bool = False,
    wall: float | None = None,
) -> APIError:
    """The APIError for a non-2xx answer, with every secret redacted from its body."""
    secrets = tuple(secrets)
    body: Any
    try:
        body = orjson.loads(response.content) if response.content else None
    except orjson.JSONDecodeError:
        body = response.text[:2000]
    body = redact_value(body, secrets)
    cls = RateLimitError if as_rate_limit else error_class_for(response.status)
    error = cls(
        response.status, headers=response.headers, body=body, method=method, url=redact_url(url)
    )
    if isinstance(error, RateLimitError):
        error.retry_after = server_wait(response.status, response.headers, wall)
    return error


def _bounded(timeout: Timeout, deadline: float | None, now: float) -> Timeout:
    """Cap an attempt's total timeout so the call's deadline is never overshot."""
    if deadline is None:
        return timeout
    left = max(0.001, deadline - now)
    if timeout.total is not None and timeout.total <= left:
        return timeout
    return attrs.evolve(timeout, total=left)


async def _send_streamed(
    transport: StreamingTransport, request: Request, decoder: StreamDecoder
) -> tuple[Response, Any]:
    async with transport.stream(request) as stream:
        if 200 <= stream.status < 300:
            data = await decoder(stream)
            return Response(stream.status, stream.headers, b"", request), data
        body = b"".join([chunk async for chunk in stream.iter_chunks(65536)])
        return Response(stream.status, stream.headers, body, request), None


_NO_DATA = object()


async def run(env: Env, call: Call) -> Any:
    """Carry ``call`` out: every step, waits included, under ``call.policy.timeout``.

    Returns the decoded data (the ``Reply`` when ``call.reply``). The calling task is
    counted in ``env.active`` meanwhile; cancelled because the client closed, the call
    raises ``ClientClosedError``.
    """
    loop = asyncio.get_running_loop()
    task = asyncio.current_task(loop)
    active = env.active
    if task is not None:
        active[task] = active.get(task, 0) + 1
    try:
        policy = call.policy
        clock = env.clock
        deadline = None if policy.timeout is None else clock.now() + policy.timeout
        has_body = call.content is not None
        attempt = 0
        renewed = False
        while True:
            attempt += 1
            if not call.authenticate:
                auth = None
            elif env.static_auth is not None:
                auth = env.static_auth
            else:
                auth = await env.auth_headers()
            headers = env.headers(auth, has_body)
            if env.pacer is not None and not env.pacer.admit():
                await _pace(env.pacer, call, deadline, loop)
            now = clock.now()
            timeout = call.timeout
            if deadline is not None and (timeout.total is None or timeout.total > deadline - now):
                timeout = _bounded(timeout, deadline, now)
            request = Request(call.method, call.url, headers, call.content, timeout)
            response: Response | None = None
            failure: SvcError | None = None
            data: Any = _NO_DATA
            try:
                if call.stream_decode is not None and isinstance(env.transport, StreamingTransport):
                    response, data = await _send_streamed(
                        env.transport, request, call.stream_decode
                    )
                else:
                    response = await env.transport.send(request)
            except (TransportError, ResponseDecodeError) as exc:
                failure = exc
            finally:
                env.observe(response)
            if response is not None and logger.isEnabledFor(logging.DEBUG):
                logger.debug("%s %s -> %d", call.method, redact_url(call.url), response.status)
            if response is not None and 200 <= response.status < 300:
                if data is _NO_DATA and failure is None:
                    try:
                        data = (call.decode or decode_json)(response)
                    except ResponseDecodeError as exc:
                        failure = exc
                if failure is None:
                    env.budget.record_success()
                    return Reply(data, response.status, response.headers) if call.reply else data
            decision, failure = _after(env, call, attempt, renewed, response, failure, deadline)
            action = decision.action
            if action is Action.RENEW:
                renewed = True
                if await env.renew(headers):
                    attempt -= 1
                    continue
                raise failure
            if action is Action.RESOLVE:
                assert call.resolve is not None
                data = await call.resolve(failure, deadline)
                return Reply(data) if call.reply else data
            if action is Action.RAISE:
                raise failure
            await clock.sleep(_wait_before_retry(call, attempt, decision))
    except asyncio.CancelledError:
        if task is not None and env.closed() and task.cancelling():
            task.uncancel()
            raise ClientClosedError(
                f"{call.method} {call.url.path} was cancelled because the client was closed"
            ) from None
        raise
    finally:
        if task is not None:
            left = active[task] - 1
            if left:
                active[task] = left
            else:
                del active[task]


async def _pace(pacer: Pacer, call: Call, deadline: float | None, loop: Any) -> None:
    """Wait for the pacer; a wait beyond the deadline raises RateLimitError at once."""
    try:
        await pacer.acquire(deadline, loop)
    except PacingExceedsDeadline as exc:
        error = RateLimitError(429, method=call.method, url=redact_url(call.url))
        error.retry_after = exc.wait
        error.args = (
            f"rate limit budget spent for {call.method} {redact_url(call.url)}:"
            f" the next window opens in {exc.wait:.1f}s, beyond the call's deadline",
        )
        raise error from None


def _after(
    env: Env,
    call: Call,
    attempt: int,
    renewed: bool,
    response: Response | None,
    failure: SvcError | None,
    deadline: float | None,
) -> tuple[Decision, SvcError]:
    """Classify an attempt that did not return data and decide the next step.

    Returns the decision with the error to raise if it comes to that (rate-limit and
    decoder messages built here, with every secret redacted).
    """
    status = None if response is None else response.status
    wall = env.clock.wall()
    if response is not None and not 200 <= response.status < 300:
        failure = api_error(response, call.method, call.url, env.secrets(), wall=wall)
    if isinstance(failure, ResponseDecodeError):
        # A decoder quotes the body: hide whatever credentials the server echoed.
        failure.args = (redact_text(str(failure), env.secrets()),)
    assert failure is not None
    outcome = outcome_of(status, failure, response.headers if response is not None else {}, wall)
    policy = call.policy
    decision = decide(
        attempt=attempt,
        outcome=outcome,
        policy=policy,
        idempotent=call.idempotent,
        now=env.clock.now(),
        deadline=deadline,
        backoff=policy.backoff(attempt, env.rng),
        budget_tokens=env.budget.tokens,
        budget=env.budget,
        can_renew=call.authenticate and not renewed,
        can_resolve=call.resolve is not None,
    )
    if decision.action is Action.RAISE:
        if decision.rate_limited and response is not None:
            failure = api_error(
                response, call.method, call.url, env.secrets(), as_rate_limit=True, wall=wall
            )
        elif decision.reason == "retry budget exhausted":
            logger.warning(
                "retry budget exhausted; not retrying %s %s", call.method, redact_url(call.url)
            )
    elif decision.spend and not env.budget.try_spend(timeout=isinstance(failure, RequestTimeout)):
        decision = Decision(Action.RAISE, reason="retry budget exhausted")
    return decision, failure


def _wait_before_retry(call: Call, attempt: int, decision: Decision) -> float:
    """How long to sleep before the next attempt (``decide`` drew it); logs the retry."""
    wait = decision.wait
    logger.info(
        "retrying %s %s (attempt %d) after %s; waiting %.2fs",
        call.method,
        call.url.path,
        attempt + 1,
        decision.reason,
        wait,
    )
    return wait
