"""The life of one call: a short loop over named steps, all under the call's deadline.

Each attempt of a call goes through the same steps, each a function of its own:

* **credentials**: the auth's headers; when it has none yet, its login *flow* runs
  first. An auth never sends anything itself: its flow yields the account-host requests
  it needs and the loop here sends them (httpx's auth flow, made async);
* **prepare**: the request's headers and time limit, after the pacer lets it go;
* **exchange**: the send, cut off at the attempt's limit, then what the answer says is
  observed (the pacer released, the rate limit and Date kept);
* **decide**: the pure table of ``_decide``: return, renew, retry, hand back, raise;
* **act**: renew the credentials (the auth's flow again), wait before the next attempt,
  or hand an ambiguous outcome back to the caller (``Ambiguous``: ``Jobs.create``
  settles it); nothing here calls back up into the client.

Observers (``CallObserver``: tracing, event hooks) hear each step of a call through the
``CallWatch`` they return for it; they observe, they never run the call.

A call's 2xx answer becomes what it returns through its ``Decoder`` (``answers.py``), the
one interface of every endpoint: ``read`` (bytes -> JSON) within the attempt, so that a
bad read is retried like any, then ``build`` (JSON -> model) once the call succeeded. A
decoder that streams (entries structured in slices, a download written to disk) is handed
a 2xx answer unread; other statuses are read whole, under the transport's body cap.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import itertools
import logging
import os
import random
from collections.abc import AsyncGenerator, Iterator, Mapping
from typing import Any, Literal, Protocol, TypeVar

import attrs
import orjson
import yarl
from multidict import CIMultiDict, CIMultiDictProxy, istr

from .._core.headers import SendableHeaders, header_problem
from .._transports.base import (
    Request,
    Response,
    StreamingTransport,
    Timeout,
    Transport,
)
from .._transports.cutoff import cut_off
from ..auth import AccountRequest, Auth, secrets_of
from ..clock import SYSTEM_CLOCK, Clock, wait_tasks
from ..errors import (
    AuthenticationError,
    ClientClosedError,
    PacingExceedsDeadline,
    RateLimitError,
    ResponseDecodeError,
    SvcError,
    TransportError,
)
from ..models import RateLimit
from ..redact import redact_text, redact_url
from ..retry import RetryBudget, RetryPolicy
from .answers import (
    JSON,
    REPLIES,
    Decoder,
    Reply,
    ResponseMeta,
    api_error,
    decode_json,
    read_exactly,
)
from .decide import RENEW, RETURN, Action, Decision, Outcome, decide, outcome_of
from .ratelimit import Pacing, parse_rate_limit

__all__ = [
    "RENEW",
    "RETURN",
    "Action",
    "Ambiguous",
    "Call",
    "CallObserver",
    "CallWatch",
    "Decision",
    "Decoder",
    "Env",
    "Outcome",
    "Reply",
    "ResponseMeta",
    "Seen",
    "Tracker",
    "api_error",
    "deadline_scope",
    "decide",
    "decode_json",
    "outcome_of",
    "read_exactly",
    "run",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")


class CallWatch(Protocol):
    """What an observer hears of one call (returned by ``CallObserver.start``)."""

    def request(self, request: Request) -> None:
        """An attempt is about to be sent, as ``request``."""

    def attempt(self, number: int, response: Response | None, failure: SvcError | None) -> None:
        """Attempt ``number`` ended: its response (None when none came) or failure."""

    def paced(self, seconds: float) -> None:
        """The pacer held the call back for ``seconds`` before an attempt."""

    def retrying(self, attempt: int, wait: float, reason: str) -> None:
        """Attempt ``attempt`` follows after ``wait`` seconds, because of ``reason``."""

    def end(self, error: BaseException | None) -> None:
        """The call ended: with ``error`` raised, or None when it returned."""


class CallObserver(Protocol):
    """Observes every call of a client (tracing, event hooks): never changes one."""

    def start(self, call: Call, secrets: tuple[str, ...]) -> CallWatch:
        """A call starts (``secrets``: to redact what is recorded of it)."""


@attrs.frozen(slots=True)
class Ambiguous:
    """A call unsafe to repeat failed in a way that may have been processed.

    Returned (not raised) for a call that asked for it (``Call.ambiguous``): the caller
    settles it (``Jobs.create`` looks for its creation tag) by ``deadline``.
    """

    failure: SvcError
    deadline: float | None


@attrs.define(slots=True, kw_only=True)
class Call:
    """Everything one logical call needs; built by the client from a resource's request.

    ``timeout`` bounds the whole call (seconds, None: no bound): every attempt, pacing
    hold and auth login or renewal. ``attempt_timeout`` limits each HTTP exchange within
    it. The options a caller may give are declared once, in
    ``resources._base.CallOptions``, under these names.

    Not frozen: one is built per call, and a frozen class pays a setattr call per field.
    Nothing changes a ``Call`` once built.
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
    decode: Decoder[Any] = JSON
    """How the 2xx answer becomes what the call returns (``JSON``: the JSON itself)."""
    ambiguous: bool = False
    """Return ``Ambiguous`` instead of raising when a failure may have been processed."""
    reply: bool = False
    """Return the ``Reply`` (data and response metadata) rather than the data alone."""
    headers: Mapping[str, str] | None = None
    """Headers of this call over the client's (a download's ``Accept: */*``)."""
    redirects: bool = False
    """Hand a redirect (301, 302, 303, 307, 308) to ``decode.read`` instead of raising it."""
    service: bool = True
    """The URL is the service's own: paced, and its answer observed (rate limit, Date).
    False for another origin (the storage host of a signed link)."""


REDIRECTS = frozenset({301, 302, 303, 307, 308})
"""The statuses a call with ``redirects`` returns rather than raises."""


_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "svc_async_deadline", default=None
)
"""The deadline (clock time) of the call or wait this task is inside, if any."""


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
    inside a call), so each task is counted. Work of several calls (a wait, a bulk
    fetch) is tracked for its whole length (``operation``).

    ``aclose(grace=...)`` drains first (``drain``): the client counts as closed, but
    work already under way goes on (``admits``) until nothing is tracked or the grace
    is spent.

    ``loop`` is the event loop the client's calls run on, bound by the client on first
    use (which refuses another running loop). Knowing it, ``run`` finds its task with
    ``current_task(loop)``: asking for the running loop instead costs a ``getpid``
    system call on Python 3.11, on every call.
    """

    __slots__ = ("_closer", "_idle", "_since", "_streams", "active", "closed", "loop")

    def __init__(self) -> None:
        self.active: dict[asyncio.Task[Any], int] = {}
        self.closed = False
        self.loop: asyncio.AbstractEventLoop | None = None
        self._idle: asyncio.Future[None] | None = None
        """Set while draining: done when no task but the closing one is tracked."""
        self._since = 0
        """While draining: work begun in an operation numbered up to this goes on."""
        self._closer: asyncio.Task[Any] | None = None
        """While draining: the task that drains (its own calls do not hold it up)."""
        self._streams = 0
        """Streams of work begun and not yet ended (``stepwise``): a drain waits for them."""

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
            if self._idle is not None:
                self._settle()

    def closing(self, task: asyncio.Task[Any] | None, what: str) -> ClientClosedError | None:
        """The error to raise instead of a cancellation caused by ``aclose()``, if it was."""
        if task is not None and self.closed and self._idle is None and task.cancelling():
            task.uncancel()
            return ClientClosedError(f"{what} was cancelled because the client was closed")
        return None

    def admits(self, task: asyncio.Task[Any] | None) -> bool:
        """Whether a closed client still lets a call of ``task`` through: while it drains,
        for work begun before (a call's task, a wait, a bulk fetch's workers)."""
        if self._idle is None:
            return False
        return task in self.active or 0 < _OPERATION.get() <= self._since

    @contextlib.contextmanager
    def operation(self, what: str, number: int = 0) -> Iterator[int]:
        """Track the current task for the whole of some work of several calls (``what``,
        named in the ``ClientClosedError`` a close raises in it); yields the operation's
        number, which a later step of the same work passes back in. The tasks it starts
        inherit the number, so that a draining close lets their calls through too; new
        work on a closed client is refused at once."""
        task = asyncio.current_task()
        number = number or _OPERATION.get() or next(_OPERATIONS)
        token = _OPERATION.set(number)
        try:
            if self.closed and not self.admits(task):
                raise ClientClosedError(f"{what}: this Client is closed; create a new one")
            self.enter(task)
            try:
                yield number
            except asyncio.CancelledError:
                error = self.closing(task, what)
                if error is None:
                    raise
                raise error from None
            finally:
                self.leave(task)
        finally:
            _OPERATION.reset(token)

    async def stepwise(self, what: str, steps: AsyncGenerator[T, None]) -> AsyncGenerator[T, None]:
        """``steps`` (a bulk fetch, a watch: work yielded as it goes), each step run as
        part of one ``operation``; a draining close waits for the whole stream to end."""
        number = 0
        try:
            while True:
                with self.operation(what, number) as step:
                    if not number:
                        self._streams += 1  # counted from the first step that was let in
                    number = step
                    try:
                        item = await anext(steps)
                    except StopAsyncIteration:
                        return
                yield item
        finally:
            if number:
                self._streams -= 1
                self._settle()
            await steps.aclose()

    async def drain(self, clock: Clock, grace: float) -> None:
        """Wait up to ``grace`` seconds (on ``clock``) for the tracked work to end, the
        client closed meanwhile to all but that work."""
        self._closer = asyncio.current_task()
        self._idle = asyncio.get_running_loop().create_future()
        self._since = next(_OPERATIONS)
        try:
            self._settle()
            await wait_tasks(clock, [self._idle], grace)
        finally:
            self._idle = self._closer = None

    def _settle(self) -> None:
        idle, closer = self._idle, self._closer
        if idle is None or idle.done() or self._streams:
            return
        if all(t is closer for t in self.active):
            idle.set_result(None)


_OPERATION: contextvars.ContextVar[int] = contextvars.ContextVar("svc_async_operation", default=0)
"""The number of the operation (``Tracker.operation``) this context's work belongs to."""

_OPERATIONS = itertools.count(1)


_REMAINING, _DATE = istr("x-ratelimit-remaining"), istr("Date")
"""Header names looked up on every answer, as ``istr``: found without lowering them."""


class Seen:
    """What the pipeline last saw in answers: rate-limit headers and the server's Date.

    The client's ``rate_limit`` and ``server_date`` read it; the rate-limit headers are
    parsed only when asked for, an epoch reset against ``clock``'s wall time then.
    """

    __slots__ = ("_rate", "_rate_headers", "clock", "server_date")

    def __init__(self, clock: Clock = SYSTEM_CLOCK) -> None:
        self.clock = clock
        self._rate: RateLimit | None = None
        self._rate_headers: Mapping[str, str] | None = None
        self.server_date: str | None = None

    @property
    def rate_limit(self) -> RateLimit | None:
        """The ``x-ratelimit-*`` headers of the last response that had them."""
        if self._rate_headers is not None:
            self._rate = parse_rate_limit(self._rate_headers, self.clock.wall())
            self._rate_headers = None
        return self._rate

    def record(self, headers: Mapping[str, str]) -> None:
        """Keep ``headers``' rate limit (to parse when asked for) and Date."""
        if _REMAINING in headers:
            self._rate_headers = headers
        self.server_date = headers.get(_DATE, self.server_date)


_JSON_HEADERS = {"Content-Type": "application/json"}


@attrs.define(slots=True, kw_only=True)
class Env:
    """The client-wide pieces a call runs through (shared by concurrent calls).

    The pipeline's own state lives here (``tracker``, ``seen``, the merged headers);
    the client hands in values, none of them a callable back into it. An auth login or
    renewal is a call of its own, made here: a POST to ``account_url`` without
    credentials, under the ``login_*`` settings and the deadline of the call it serves.
    """

    transport: Transport = attrs.field(converter=cut_off)
    """Ends each exchange at ``Request.timeout``: a transport that does not say it does
    (``enforces_timeout = True``) is wrapped in one that does (``cut_off``)."""
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
    observers: tuple[CallObserver, ...] = ()
    """Who hears every call's steps (``svc_async._pipeline.tracing``, event hooks)."""
    clock: Clock = SYSTEM_CLOCK
    """Deadlines, backoff sleeps and ``Retry-After`` dates are read on this clock."""
    seen: Seen = attrs.field(default=attrs.Factory(lambda env: Seen(env.clock), takes_self=True))
    """The last rate-limit headers and server Date seen."""
    pacer_on_clock: bool = attrs.field(
        init=False,
        default=attrs.Factory(lambda env: getattr(env.pacer, "clock", None) is env.clock, True),
    )
    """The pacer reads ``clock`` too: its ``admit`` is handed the time the call read."""
    merged: dict[bool, tuple[Mapping[str, str] | None, CIMultiDictProxy[str]]] = attrs.field(
        factory=dict
    )
    """The request headers last merged, with and without a body, by the auth they hold."""

    def secrets(self) -> tuple[str, ...]:
        """Every credential the auth holds now (tokens change as an API key renews)."""
        return secrets_of(self.auth)


def request_headers(
    env: Env, auth_headers: Mapping[str, str] | None, has_body: bool
) -> CIMultiDictProxy[str]:
    """Default + auth (+ JSON) headers, merged and checked once per distinct auth header
    mapping: ``SendableHeaders`` when all may be sent (a custom auth's may not)."""
    cached = env.merged.get(has_body)
    if cached is not None and cached[0] is auth_headers:
        return cached[1]
    merged = CIMultiDict(
        {**env.default_headers, **(_JSON_HEADERS if has_body else {}), **(auth_headers or {})}
    )
    proxy = CIMultiDictProxy(merged) if header_problem(merged) else SendableHeaders(merged)
    env.merged[has_body] = (auth_headers, proxy)
    return proxy


def observe(env: Env, response: Response | None, service: bool) -> None:
    """After each attempt to the ``service``: release the pacer and keep what the answer
    says (``seen``). Nothing for another origin (a signed link's storage host)."""
    if not service:
        return
    if response is None:
        if env.pacer is not None:
            env.pacer.release(None)
        return
    if env.pacer is not None:
        env.pacer.release(response.headers, response.status)
    env.seen.record(response.headers)


async def _send_streamed(
    transport: StreamingTransport, request: Request, decoder: Decoder[Any]
) -> tuple[Response, Any]:
    async with transport.stream(request) as stream:
        if 200 <= stream.status < 300:
            data = await decoder.read_stream(stream)
            return Response(stream.status, stream.headers, b"", request), data
        body = b"".join([chunk async for chunk in stream.iter_chunks(65536)])
        return Response(stream.status, stream.headers, body, request), _NO_DATA


_NO_DATA = object()

REQUEST_ID = istr("X-Request-Id")
"""The header that carries a call's id, the same on each of its attempts."""

_ID_PREFIX = os.urandom(6).hex()
_ID_COUNT = itertools.count(1)
"""A call's id is ``<_ID_PREFIX>-<count>``: a random prefix of this process, then a count
(cheaper than a uuid on every call, and as unique across processes)."""


# ---------------------------------------------------------------- the call and its loop


class _Attempts:
    """One call's state across its attempts: what every step reads, and where it is.

    Built once per call by ``run``; the steps below take it instead of a list of values.
    ``number`` counts attempts (a renewal's replay is not one); ``auth`` is the headers
    the current attempt was sent with (what a renewal replaces).
    """

    __slots__ = ("auth", "call", "deadline", "env", "number", "renewed", "rid", "started", "watch")

    def __init__(self, env: Env, call: Call, deadline: float | None, started: float) -> None:
        self.env = env
        self.call = call
        self.deadline = deadline
        self.started = started
        self.watch = _watch(env, call) if env.observers else None
        self.rid = f"{_ID_PREFIX}-{next(_ID_COUNT)}"  # the call's id (see ``_ID_COUNT``)
        self.number = 0
        self.renewed = False
        self.auth: Mapping[str, str] | None = None

    def fields(self, response: Response | None = None, **more: object) -> dict[str, object]:
        """The structured fields of a log record about this call (``extra=``)."""
        call = self.call
        fields: dict[str, object] = {
            "request_id": _answered_id(response, self.rid),
            "operation": call.operation,
            "method": call.method,
            "status": None if response is None else response.status,
            "attempt": self.number,
        }
        fields.update(more)
        return fields


async def run(env: Env, call: Call, outer: float | Literal["context"] | None = "context") -> Any:
    """Carry ``call`` out: every step, waits included, by the call's deadline.

    The deadline is ``call.timeout`` from now, or the ``outer`` deadline (by default the
    one of the call or wait this one runs inside: ``deadline_scope``), whichever is
    first. The transport ends each send at its ``Request.timeout``, which never reaches
    past the deadline (``Env`` makes any transport do so: ``cut_off``). Returns the
    decoded data (the ``Reply`` when ``call.reply``; ``Ambiguous`` when
    ``call.ambiguous`` and the outcome is). The calling task is tracked meanwhile;
    cancelled because the client closed, the call raises ``ClientClosedError``. Every
    ``SvcError`` it raises carries the call's request id.
    """
    if outer == "context":
        outer = _DEADLINE.get()
    now = env.clock.now()
    deadline = outer
    if call.timeout is not None:  # the earlier of ``now + timeout`` and ``outer``
        own = now + call.timeout
        deadline = own if outer is None or own < outer else outer
    tracker = env.tracker
    task = asyncio.current_task(tracker.loop)
    tracker.enter(task)
    attempts = _Attempts(env, call, deadline, now)
    try:
        result = await _attempt_until_done(attempts)
    except BaseException as exc:
        raise _ended(attempts, task, exc) from None
    finally:
        tracker.leave(task)
    if attempts.watch is not None:
        attempts.watch.end(None)
    return result


def _ended(
    attempts: _Attempts, task: asyncio.Task[Any] | None, exc: BaseException
) -> BaseException:
    """What a call that raised ``exc`` raises: ``ClientClosedError`` for a cancellation
    by ``aclose()``, else ``exc``; an ``SvcError`` with the call's request id."""
    call = attempts.call
    if isinstance(exc, asyncio.CancelledError):
        exc = attempts.env.tracker.closing(task, f"{call.method} {call.url.path}") or exc
    if isinstance(exc, ResponseDecodeError):  # a document that did not fit its model
        _hide_secrets(exc, attempts.env)
    if isinstance(exc, SvcError) and exc.request_id is None:
        exc.request_id = attempts.rid
    if attempts.watch is not None:
        attempts.watch.end(exc)
    return exc


async def _attempt_until_done(attempts: _Attempts) -> Any:
    """Attempt after attempt: credentials, pace, prepare, exchange, decide, act.

    The exchange is written out here rather than as a step of its own: one coroutine
    layer less on every call. The clock is read again only after a step that waited
    (one read on a plain call).
    """
    env, call = attempts.env, attempts.call
    now = attempts.started
    while True:
        attempts.number += 1
        auth = env.static_auth if call.authenticate else None
        if auth is None and call.authenticate:  # an auth whose headers may change
            auth = await _credentials(env, attempts.deadline)
            now = env.clock.now()
        attempts.auth = auth
        pacer = env.pacer if call.service else None
        if pacer is not None and not pacer.admit(now if env.pacer_on_clock else None):
            await _pace(attempts, pacer)  # held back: wait
            now = env.clock.now()
        request = _prepare(attempts, now)
        response: Response | None = None
        data: Any = _NO_DATA
        failure: SvcError | None = None
        try:  # the exchange (the one path): whatever came, the answer is observed
            if not call.decode.streams or not isinstance(env.transport, StreamingTransport):
                response = await env.transport.send(request)
            else:
                response, data = await _send_streamed(env.transport, request, call.decode)
        except (TransportError, ResponseDecodeError) as exc:
            failure = exc
        finally:
            observe(env, response, call.service)
        _heard(attempts, response, failure)
        answered, data, failure = _outcome(call, response, data, failure)
        if answered is not None:
            return _returned(attempts, data, answered)
        ambiguous = await _recover(attempts, response, failure)
        if ambiguous is not None:
            return ambiguous  # for the caller to settle
        now = env.clock.now()


async def _recover(
    attempts: _Attempts, response: Response | None, failure: SvcError | None
) -> Ambiguous | None:
    """After an attempt that brought no data: decide, then act on it. Returns None once
    the next attempt may go (the credentials renewed, or the wait before a retry slept
    and logged), or an ``Ambiguous`` to hand back; raises when the decision is to."""
    decision, error = _after(attempts, response, failure)
    error.request_id = _answered_id(response, attempts.rid)
    if decision.action is Action.RENEW:
        if not await _renewed(attempts.env, attempts.auth, attempts.deadline):
            raise error
        attempts.renewed = True
        attempts.number -= 1  # a renewal is not a retry
        return None
    if decision.action is Action.RAISE:
        raise error
    if decision.action is Action.RESOLVE:
        return Ambiguous(error, attempts.deadline)
    wait, call = decision.wait, attempts.call
    logger.info(
        "retrying %s %s (attempt %d) after %s; waiting %.2fs",
        call.method,
        call.url.path,
        attempts.number + 1,
        decision.reason,
        wait,
        extra=attempts.fields(response, wait=wait, reason=decision.reason),
    )
    if attempts.watch is not None:
        attempts.watch.retrying(attempts.number + 1, wait, decision.reason)
    await attempts.env.clock.sleep(wait)
    return None


def _returned(attempts: _Attempts, data: Any, response: Response) -> Any:
    """What a successful call returns: its data built (``Decoder.build``: a document that
    does not fit raises, unretried), or its ``Reply`` when it asked for one; the reply is
    also handed to whoever listens in this task (``with_raw_response``)."""
    env, call = attempts.env, attempts.call
    env.budget.record_success()
    data = call.decode.build(data, response.status)
    listening = REPLIES.get()
    if not call.reply and listening is None:
        return data
    reply = Reply(
        data,
        response.status,
        response.headers,
        attempts=attempts.number,
        elapsed=env.clock.now() - attempts.started,
        request_id=_answered_id(response, attempts.rid),
    )
    if listening is not None:
        listening.append((call.operation, reply))
    return reply if call.reply else data


def _answered_id(response: Response | None, rid: str) -> str:
    """The server's own request id when its answer names one, else the one sent."""
    if response is None:
        return rid
    return response.headers.get(REQUEST_ID, rid)


def _watch(env: Env, call: Call) -> CallWatch:
    """One watch for the call, telling every observer (the usual case: one)."""
    secrets = env.secrets()
    watches = [observer.start(call, secrets) for observer in env.observers]
    return watches[0] if len(watches) == 1 else _Watches(watches)


class _Watches:
    """Several observers' watches of one call, told in order."""

    __slots__ = ("_all",)

    def __init__(self, watches: list[CallWatch]) -> None:
        self._all = watches

    def request(self, request: Request) -> None:
        for watch in self._all:
            watch.request(request)

    def attempt(self, number: int, response: Response | None, failure: SvcError | None) -> None:
        for watch in self._all:
            watch.attempt(number, response, failure)

    def paced(self, seconds: float) -> None:
        for watch in self._all:
            watch.paced(seconds)

    def retrying(self, attempt: int, wait: float, reason: str) -> None:
        for watch in self._all:
            watch.retrying(attempt, wait, reason)

    def end(self, error: BaseException | None) -> None:
        for watch in reversed(self._all):
            watch.end(error)


# ---------------------------------------------------------------- step: credentials


async def _credentials(env: Env, deadline: float | None) -> Mapping[str, str]:
    """The auth headers of the next attempt of an auth that may change them; logs in
    first when it has none yet. (A static auth's headers need no step at all.)"""
    headers = env.auth.headers()
    if headers is None:
        await _drive(env, env.auth.flow(None), deadline)
        headers = env.auth.headers()
        if headers is None:
            raise AuthenticationError(401, body="the auth has no credentials after its login")
    return headers


async def _renewed(env: Env, rejected: Mapping[str, str] | None, deadline: float | None) -> bool:
    """After a 401: run the auth's renewal flow; True when new credentials are worth a
    replay (another caller's renewal counts)."""
    await _drive(env, env.auth.flow(rejected or {}), deadline)
    fresh = env.auth.headers()
    return fresh is not None and dict(fresh) != dict(rejected or {})


async def _drive(
    env: Env, flow: AsyncGenerator[AccountRequest, Any], deadline: float | None
) -> None:
    """Carry an auth flow out: send each account-host request it yields and hand the
    answer back in (a failure is thrown in, for the flow to handle or let through)."""
    answer: Any = None
    failure: SvcError | None = None
    try:
        while True:
            try:
                request = await (flow.asend(answer) if failure is None else flow.athrow(failure))
            except StopAsyncIteration:
                return
            answer, failure = None, None
            try:
                answer = await _account(env, request, deadline)
            except SvcError as exc:
                failure = exc
    finally:
        await flow.aclose()


async def _account(env: Env, request: AccountRequest, deadline: float | None) -> Any:
    """POST an auth flow's request to the account host, without credentials.

    Safe to repeat (a repeated login only issues another token), so transport errors
    are retried like any idempotent call's; the deadline of the call that needed it
    bounds it too.
    """
    call = Call(
        method="POST",
        url=yarl.URL(env.account_url + request.path),
        content=orjson.dumps(dict(request.body)),
        idempotent=True,
        timeout=env.login_timeout,
        attempt_timeout=env.login_attempt_timeout,
        policy=env.login_policy,
        operation="auth." + request.path.rsplit("/", 1)[-1],
        authenticate=False,
    )
    return await run(env, call, deadline)


# ---------------------------------------------------------------- step: prepare


def _prepare(attempts: _Attempts, now: float) -> Request:
    """The attempt's request: headers merged (the call's id on every attempt), its time
    limit within the deadline."""
    env, call, deadline = attempts.env, attempts.call, attempts.deadline
    base = request_headers(env, attempts.auth, call.content is not None)
    merged = base.copy()
    if call.headers is not None:
        merged.update(call.headers)
    merged[REQUEST_ID] = attempts.rid
    # The id is hex digits and a count: checked headers stay sendable with it. A call's
    # own headers are left to the transport's check.
    sendable = call.headers is None and type(base) is SendableHeaders
    headers = SendableHeaders(merged) if sendable else CIMultiDictProxy(merged)
    timeout = call.attempt_timeout
    if deadline is not None and (timeout.total is None or timeout.total > deadline - now):
        # Capped so the deadline is never overshot; rounded to the nanosecond, as
        # (start + 12) - start can come out a hair above 12.
        left = round(max(0.001, deadline - now), 9)
        if timeout.total is None or timeout.total > left:
            timeout = attrs.evolve(timeout, total=left)
    request = Request(call.method, call.url, headers, call.content, timeout)
    if attempts.watch is not None:
        attempts.watch.request(request)
    return request


# ---------------------------------------------------------------- step: exchange


def _heard(attempts: _Attempts, response: Response | None, failure: SvcError | None) -> None:
    """Tell the call's observers, and the debug log, how an attempt ended."""
    if attempts.watch is not None:
        attempts.watch.attempt(attempts.number, response, failure)
    if response is not None and logger.isEnabledFor(logging.DEBUG):
        call = attempts.call
        fields = attempts.fields(response)
        logger.debug(
            "%s %s -> %d (request %s)",
            call.method,
            redact_url(call.url),
            response.status,
            fields["request_id"],
            extra=fields,
        )


def _outcome(
    call: Call, response: Response | None, data: Any, failure: SvcError | None
) -> tuple[Response | None, Any, SvcError | None]:
    """What an attempt brought: a success (a 2xx, or a redirect the call takes) is its
    response and data, read now unless streamed; anything else is no response, with the
    failure if there is one."""
    if failure is not None or response is None:
        return None, None, failure
    status = response.status
    if not (200 <= status < 300 or (call.redirects and status in REDIRECTS)):
        return None, None, None
    if data is not _NO_DATA:
        return response, data, None
    try:
        return response, call.decode.read(response), None
    except ResponseDecodeError as exc:
        return None, None, exc


# ---------------------------------------------------------------- steps: decide and act


def _after(
    attempts: _Attempts, response: Response | None, failure: SvcError | None
) -> tuple[Decision, SvcError]:
    """Classify an attempt that did not return data and decide the next step.

    Returns the decision with the error to raise if it comes to that (rate-limit and
    decoder messages built here, with every secret redacted).
    """
    env, call = attempts.env, attempts.call
    status = None if response is None else response.status
    wall = env.clock.wall()
    if response is not None and not 200 <= response.status < 300:
        failure = api_error(response, call.method, call.url, env.secrets(), wall=wall)
    if isinstance(failure, ResponseDecodeError):
        _hide_secrets(failure, env)
    assert failure is not None
    outcome = outcome_of(status, failure, response.headers if response is not None else {}, wall)
    policy = call.policy
    decision = decide(
        attempt=attempts.number,
        outcome=outcome,
        policy=policy,
        idempotent=call.idempotent,
        now=env.clock.now(),
        deadline=attempts.deadline,
        backoff=policy.backoff(attempts.number, env.rng),
        budget_tokens=env.budget.tokens,
        budget=env.budget,
        can_renew=call.authenticate and not attempts.renewed,
        can_resolve=call.ambiguous,
    )
    if decision.action is Action.RAISE:
        if decision.rate_limited and response is not None:
            failure = api_error(
                response, call.method, call.url, env.secrets(), as_rate_limit=True, wall=wall
            )
        elif decision.reason == "retry budget exhausted":
            logger.warning(
                "retry budget exhausted; not retrying %s %s",
                call.method,
                redact_url(call.url),
                extra=attempts.fields(response, reason=decision.reason),
            )
    elif decision.spend:
        env.budget.spend(decision.spend)  # ``decide`` checked the budget can afford it
    return decision, failure


def _hide_secrets(error: ResponseDecodeError, env: Env) -> None:
    """A decoder quotes the body: hide whatever credentials the server echoed in it."""
    error.args = (redact_text(str(error), env.secrets()),)


async def _pace(attempts: _Attempts, pacer: Pacing) -> None:
    """Wait for the pacer; a wait beyond the deadline raises RateLimitError at once."""
    clock, call = attempts.env.clock, attempts.call
    start = clock.now()
    try:
        await pacer.acquire(attempts.deadline)
        if attempts.watch is not None:
            attempts.watch.paced(clock.now() - start)
    except PacingExceedsDeadline as exc:
        error = RateLimitError(429, method=call.method, url=redact_url(call.url))
        error.retry_after = exc.wait
        error.args = (
            f"rate limit budget spent for {call.method} {redact_url(call.url)}:"
            f" the next window opens in {exc.wait:.1f}s, beyond the call's deadline",
        )
        raise error from None
