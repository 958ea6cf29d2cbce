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
hands a 2xx body to it unread (an incremental JSON decoder for large answers, a download
writing to disk); other statuses are read whole, under the transport's body cap.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import enum
import functools
import logging
import random
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from typing import Any, Protocol

import attrs
import orjson
import yarl
from multidict import CIMultiDict, CIMultiDictProxy, istr

from ._exact_json import has_long_number, loads_exact, too_deep
from .auth import AccountCall, Auth, secrets_of
from .clock import SYSTEM_CLOCK, Clock
from .cutoff import Cutoffs
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
from .ratelimit import Pacing, parse_rate_limit
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
    before the deadline (else it raises at once), and its cost in the retry budget.
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
    if attempt >= policy.attempts:
        return Decision(Action.RAISE, reason="attempts spent")
    wait = policy.retry_wait(attempt, backoff, server, refused=status in (429, 503))
    if deadline is not None and now + wait >= deadline:
        return Decision(Action.RAISE, reason="deadline", rate_limited=status == 429)
    cost = budget.cost(timeout=isinstance(failure, RequestTimeout))
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


class CallSpan(Protocol):
    """What a trace of one call hears from the pipeline (``svc_async.tracing``)."""

    def attempt(self, number: int, status: int | None, failure: SvcError | None) -> None:
        """Attempt ``number`` ended: its HTTP status, or the failure when none came."""

    def paced(self, seconds: float) -> None:
        """The pacer held the call back for ``seconds`` before an attempt."""

    def retrying(self, attempt: int, wait: float, reason: str) -> None:
        """Attempt ``attempt`` follows after ``wait`` seconds, because of ``reason``."""


@attrs.define(slots=True)
class Call:
    """Everything one logical call needs; built by the client from a resource's request.

    ``timeout`` bounds the whole call (seconds, None: no bound): every attempt, pacing
    hold, auth login or renewal, backoff and ambiguous-create search. ``attempt_timeout``
    limits each HTTP exchange within it. The options a caller may give are declared once,
    in ``resources._base.CallOptions``, under these names.

    Not frozen: one is built per call, and a frozen class pays a setattr call per field.
    Nothing changes a ``Call`` once built. The client builds it positionally, up to
    ``operation``: keyword arguments with defaults cost about twice as much to bind, on
    every call.
    """

    method: str
    url: yarl.URL
    content: bytes | None
    idempotent: bool
    timeout: float | None
    attempt_timeout: Timeout
    policy: RetryPolicy
    operation: str = ""
    """The SDK call this is (``jobs.get``), named by its sub-client: the name of its span."""
    authenticate: bool = True
    decode: Decoder | None = None
    stream_decode: StreamDecoder | None = None
    resolve: Resolver | None = None
    reply: bool = False
    """Return the ``Reply`` (data and response metadata) rather than the data alone."""
    span: CallSpan | None = None
    """The trace that hears this call's attempts, holds and retries (set by ``Env.trace``)."""
    headers: Mapping[str, str] | None = None
    """Headers of this call over the client's (a download's ``Accept: */*``)."""
    redirects: bool = False
    """Hand a redirect (301, 302, 303, 307, 308) to ``decode`` instead of raising it."""
    service: bool = True
    """The URL is the service's own: paced, and its answer observed (rate limit, Date).
    False for another origin (the storage host of a signed link)."""


REDIRECTS = frozenset({301, 302, 303, 307, 308})
"""The statuses a call with ``redirects`` returns rather than raises."""


_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "svc_async_deadline", default=None
)
"""The deadline (clock time) of the call or wait this task is inside, if any."""


def current_deadline() -> float | None:
    """The deadline (clock time) every call made now must end by: its caller's, if any."""
    return _DEADLINE.get()


@contextlib.contextmanager
def deadline_scope(deadline: float | None) -> Iterator[None]:
    """Bound every call made inside (in this task) by ``deadline`` (clock time) too.

    A nested call (an auth login inside a call, a poll inside a wait, a tag search
    inside a create) then ends by the outer deadline even with a longer timeout of its
    own. An earlier outer deadline is kept.
    """
    outer = _DEADLINE.get()
    if deadline is None or (outer is not None and outer <= deadline):
        yield
        return
    token = _DEADLINE.set(deadline)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


class Tracker:
    """The tasks running calls of one client, and whether that client was closed.

    ``aclose()`` cancels the tracked tasks; a tracked call cancelled after the close
    raises ``ClientClosedError`` instead of ``CancelledError``. Calls nest (a login
    inside a call), so each task is counted.

    ``loop`` is the event loop the client's calls run on, bound by the client on first
    use (which refuses another running loop). Knowing it, ``run`` finds its task with
    ``current_task(loop)``: asking for the running loop instead costs a ``getpid``
    system call on Python 3.11, on every call.
    """

    __slots__ = ("active", "closed", "loop")

    def __init__(self) -> None:
        self.active: dict[asyncio.Task[Any], int] = {}
        self.closed = False
        self.loop: asyncio.AbstractEventLoop | None = None

    def enter(self, task: asyncio.Task[Any] | None) -> None:
        """Count ``task`` as running one more call."""
        if task is not None:
            active = self.active
            active[task] = active.get(task, 0) + 1

    def leave(self, task: asyncio.Task[Any] | None) -> None:
        """Count one call of ``task`` as ended."""
        if task is not None:
            left = self.active.pop(task, 1) - 1
            if left > 0:
                self.active[task] = left

    def closing(self, task: asyncio.Task[Any] | None, what: str) -> ClientClosedError | None:
        """The error to raise instead of a cancellation caused by ``aclose()``, if it was."""
        if task is not None and self.closed and task.cancelling():
            task.uncancel()
            return ClientClosedError(f"{what} was cancelled because the client was closed")
        return None


_REMAINING, _DATE = istr("x-ratelimit-remaining"), istr("Date")
"""Header names looked up on every answer, as ``istr``: found without lowering them."""


class Seen:
    """What the pipeline last saw in answers: rate-limit headers and the server's Date.

    The client's ``rate_limit`` and ``server_date`` read it; the headers are parsed only
    when asked for (without pacing nothing else needs them on every response).
    """

    __slots__ = ("_rate", "_rate_headers", "server_date")

    def __init__(self) -> None:
        self._rate: RateLimit | None = None
        self._rate_headers: Mapping[str, str] | None = None
        self.server_date: str | None = None

    @property
    def rate_limit(self) -> RateLimit | None:
        """The ``x-ratelimit-*`` headers of the last response that had them."""
        if self._rate_headers is not None:
            self._rate = parse_rate_limit(self._rate_headers)
            self._rate_headers = None
        return self._rate

    def record(self, headers: Mapping[str, str], rate: RateLimit | None) -> None:
        """Keep ``headers``' rate limit (``rate`` when the pacer parsed it) and Date."""
        if rate is not None:
            self._rate, self._rate_headers = rate, None
        elif _REMAINING in headers:
            self._rate_headers = headers
        self.server_date = headers.get(_DATE, self.server_date)


_JSON_HEADERS = {"Content-Type": "application/json"}


@attrs.define(slots=True, kw_only=True)
class Env:
    """The client-wide pieces a call runs through (shared by concurrent calls).

    The pipeline's own state lives here (``tracker``, ``seen``, the merged headers);
    the client hands in values, none of them a callable back into it. An auth login or
    renewal is a call of its own (``account_call``): a POST to ``account_url`` without
    credentials, under the ``login_*`` settings and the deadline of the call it serves.
    """

    transport: Transport
    auth: Auth
    static_auth: Mapping[str, str] | None = None
    account_url: str
    """The account host's base URL (login and refresh)."""
    login_timeout: float | None
    login_attempt_timeout: Timeout
    login_policy: RetryPolicy
    default_headers: Mapping[str, str]
    """Sent with every call (User-Agent, Accept); auth and Content-Type are added."""
    pacer: Pacing | None
    budget: RetryBudget
    rng: random.Random
    tracker: Tracker = attrs.field(factory=Tracker)
    """The tasks running calls, and whether the client was closed."""
    transport_cuts: bool = False
    """The transport ends each exchange at ``Request.timeout`` itself (it says so with
    ``enforces_timeout = True``); otherwise the pipeline cuts each send off."""
    cutoffs: Cutoffs = attrs.field(factory=Cutoffs)
    """The sends the pipeline cuts off itself (when the transport does not)."""
    trace: Callable[[Env, Call], Awaitable[Any]] | None = None
    """Runs a call inside a span (``svc_async.tracing``); it calls ``run`` with ``Call.span``."""
    clock: Clock = SYSTEM_CLOCK
    """Deadlines, backoff sleeps and ``Retry-After`` dates are read on this clock."""
    seen: Seen = attrs.field(factory=Seen)
    """The last rate-limit headers and server Date seen."""
    merged: dict[bool, tuple[Mapping[str, str] | None, CIMultiDictProxy[str]]] = attrs.field(
        factory=dict
    )
    """The request headers last merged, with and without a body, by the auth they hold."""
    account_call: AccountCall = attrs.field(init=False)
    """POST to the account host without auth (what ``Auth.headers``/``renew`` call)."""

    def __attrs_post_init__(self) -> None:
        self.account_call = functools.partial(_account_call, self)

    def secrets(self) -> tuple[str, ...]:
        """Every credential the auth holds now (tokens change as an API key renews)."""
        return secrets_of(self.auth)


async def _account_call(env: Env, path: str, body: Mapping[str, Any]) -> Any:
    """POST ``body`` to ``path`` on the account host without auth: login and refresh.

    Safe to repeat (a repeated login only issues another token), so transport errors
    are retried within the deadline like any idempotent call; the deadline of the call
    that needed the login bounds it too.
    """
    call = Call(
        method="POST",
        url=yarl.URL(env.account_url + path),
        content=orjson.dumps(body),
        idempotent=True,
        timeout=env.login_timeout,
        attempt_timeout=env.login_attempt_timeout,
        policy=env.login_policy,
        authenticate=False,
        operation="auth." + path.rsplit("/", 1)[-1],
    )
    return await run(env, call)


def request_headers(
    env: Env, auth_headers: Mapping[str, str] | None, has_body: bool
) -> CIMultiDictProxy[str]:
    """Default + auth (+ JSON) headers, merged once per distinct auth header mapping."""
    cached = env.merged.get(has_body)
    if cached is not None and cached[0] is auth_headers:
        return cached[1]
    merged = {
        **env.default_headers,
        **(_JSON_HEADERS if has_body else {}),
        **(auth_headers or {}),
    }
    proxy = CIMultiDictProxy(CIMultiDict(merged))
    env.merged[has_body] = (auth_headers, proxy)
    return proxy


def observe(env: Env, response: Response | None) -> None:
    """After each attempt: release the pacer and keep what the answer says (``seen``)."""
    rate = None
    if env.pacer is not None:
        rate = env.pacer.release(
            None if response is None else response.headers,
            None if response is None else response.status,
        )
    if response is not None:
        env.seen.record(response.headers, rate)


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
    if has_long_number(content):
        return read_exactly(content, data, response.status)
    return data


def read_exactly(content: bytes, data: Any, status: int | None) -> Any:
    """JSON ``content`` read again with every integer exact (``data``: orjson's reading).

    For a body ``has_long_number`` flags: orjson reads integers beyond 64 bits as
    floats. A body nested too deeply raises ``ResponseDecodeError``; one the standard
    library refuses (not UTF-8, or a quirk orjson accepts) keeps orjson's reading.
    """
    if too_deep(content):
        raise ResponseDecodeError(
            f"HTTP {status} body is nested too deeply to decode exactly", status=status
        )
    try:
        return loads_exact(content)
    except ValueError:
        return data


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
    # Rounded to the nanosecond: (start + 12) - start can come out a hair above 12.
    left = round(max(0.001, deadline - now), 9)
    if timeout.total is not None and timeout.total <= left:
        return timeout
    return attrs.evolve(timeout, total=left)


_NO_DATA = object()


async def _send_streamed(
    transport: StreamingTransport, request: Request, decoder: StreamDecoder
) -> tuple[Response, Any]:
    async with transport.stream(request) as stream:
        if 200 <= stream.status < 300:
            data = await decoder(stream)
            return Response(stream.status, stream.headers, b"", request), data
        body = b"".join([chunk async for chunk in stream.iter_chunks(65536)])
        return Response(stream.status, stream.headers, body, request), _NO_DATA


async def _cut_send(env: Env, call: Call, request: Request, when: float) -> tuple[Response, Any]:
    """Send ``request``, cut off at ``when`` (the client's clock) by the pipeline itself.

    For transports that do not say they end an exchange at ``Request.timeout``: the
    deadline then holds whatever the transport does. Returns the response with the
    streamed data (``_NO_DATA`` when the body was read whole).
    """
    cut = env.cutoffs.arm(max(0.0, when - env.clock.now()))
    try:
        if call.stream_decode is not None and isinstance(env.transport, StreamingTransport):
            sent = await _send_streamed(env.transport, request, call.stream_decode)
        else:
            sent = await env.transport.send(request), _NO_DATA
    except BaseException:
        if not env.cutoffs.disarm(cut):
            raise
        limit = request.timeout.total if request.timeout is not None else None
        raise RequestTimeout(
            f"timeout on {call.method} {redact_url(call.url)}"
            + ("" if limit is None else f" after {limit:g}s"),
            request=request,
        ) from None
    env.cutoffs.disarm(cut)
    return sent


async def run(env: Env, call: Call) -> Any:
    """Carry ``call`` out: every step, waits included, by the call's deadline.

    The deadline is ``call.timeout`` from now, or the deadline of the call or wait this
    one runs inside, whichever is first; calls made meanwhile in this task (an auth login
    or renewal, a tag search) inherit it. Each send is cut off at the deadline (and at
    ``call.attempt_timeout``) whether or not the transport honours ``Request.timeout``.
    Returns the decoded data (the ``Reply`` when ``call.reply``). The calling task is
    tracked meanwhile; cancelled because the client closed, the call raises
    ``ClientClosedError``.

    This is every call's hot path: the first attempt of a call that succeeds reads the
    clock once and opens no deadline scope unless a login may run inside it.
    """
    if env.trace is not None and call.span is None:
        return await env.trace(env, call)
    tracker = env.tracker
    task = asyncio.current_task(tracker.loop)
    if task is not None:  # ``tracker.enter(task)``, inline: this runs for every call
        tracker.active[task] = tracker.active.get(task, 0) + 1
    clock = env.clock
    now = clock.now()
    deadline = None if call.timeout is None else now + call.timeout
    outer = _DEADLINE.get()
    if outer is not None and (deadline is None or outer < deadline):
        deadline = outer
    # Only calls started inside this one need the deadline in the context: a login (when
    # the auth is not static), a renewal or a tag search. Opened when one may start.
    scopes = deadline != outer
    scope = None
    try:
        attempt = 0
        renewed = False
        while True:
            attempt += 1
            if not call.authenticate:
                auth = None
            elif env.static_auth is not None:
                auth = env.static_auth
            else:
                if scopes and scope is None:
                    scope = _DEADLINE.set(deadline)
                auth = await env.auth.headers(env.account_call)
                now = clock.now()
            headers = request_headers(env, auth, call.content is not None)
            if call.headers is not None:
                headers = CIMultiDictProxy(CIMultiDict({**headers, **call.headers}))
            if env.pacer is not None and call.service and not env.pacer.admit():
                await _pace(env.pacer, clock, call, deadline)
                now = clock.now()
            timeout = call.attempt_timeout
            limit = timeout.total
            if deadline is not None and (limit is None or limit > deadline - now):
                timeout = _bounded(timeout, deadline, now)
                limit = timeout.total
            request = Request(call.method, call.url, headers, call.content, timeout)
            response: Response | None = None
            failure: SvcError | None = None
            data: Any = _NO_DATA
            try:
                if limit is not None and not env.transport_cuts:
                    response, data = await _cut_send(env, call, request, now + limit)
                elif call.stream_decode is not None and isinstance(
                    env.transport, StreamingTransport
                ):
                    response, data = await _send_streamed(
                        env.transport, request, call.stream_decode
                    )
                else:
                    response = await env.transport.send(request)
            except (TransportError, ResponseDecodeError) as exc:
                failure = exc
            finally:
                if call.service:
                    observe(env, response)
            if call.span is not None:
                call.span.attempt(attempt, None if response is None else response.status, failure)
            if response is not None:
                status = response.status
                if logger.isEnabledFor(logging.DEBUG):
                    logger.debug("%s %s -> %d", call.method, redact_url(call.url), status)
                if failure is None and (
                    200 <= status < 300 or (call.redirects and status in REDIRECTS)
                ):
                    if data is _NO_DATA:
                        try:
                            data = (call.decode or decode_json)(response)
                        except ResponseDecodeError as exc:
                            failure = exc
                    if failure is None:
                        env.budget.record_success()
                        return Reply(data, status, response.headers) if call.reply else data
            if scopes and scope is None:
                scope = _DEADLINE.set(deadline)
            decision, failure = _after(env, call, attempt, renewed, response, failure, deadline)
            action = decision.action
            if action is Action.RENEW:
                renewed = True
                if await env.auth.renew(env.account_call, headers):
                    attempt -= 1
                    now = clock.now()
                    continue
                raise failure
            if action is Action.RESOLVE:
                assert call.resolve is not None
                data = await call.resolve(failure, deadline)
                return Reply(data) if call.reply else data
            if action is Action.RAISE:
                raise failure
            await clock.sleep(_wait_before_retry(call, attempt, decision))
            now = clock.now()
    except asyncio.CancelledError:
        error = tracker.closing(task, f"{call.method} {call.url.path}")
        if error is not None:
            raise error from None
        raise
    finally:
        if scope is not None:
            _DEADLINE.reset(scope)
        if task is not None:  # ``tracker.leave(task)``, inline as its ``enter`` above
            left = tracker.active.pop(task, 1) - 1
            if left > 0:
                tracker.active[task] = left


async def _pace(pacer: Pacing, clock: Clock, call: Call, deadline: float | None) -> None:
    """Wait for the pacer; a wait beyond the deadline raises RateLimitError at once."""
    start = clock.now()
    try:
        await pacer.acquire(deadline)
        if call.span is not None:
            call.span.paced(clock.now() - start)
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
    elif decision.spend:
        env.budget.spend(decision.spend)  # ``decide`` checked the budget can afford it
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
    if call.span is not None:
        call.span.retrying(attempt + 1, wait, decision.reason)
    return wait
