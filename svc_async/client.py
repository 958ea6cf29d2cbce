"""Client: configuration, lifecycle, the send pipeline and the resource sub-clients.

Every call goes one way: a sub-client builds a path and a body, ``Client._send`` turns
them into a ``Call`` and runs the pipeline (auth -> pacing -> transport -> retry), and
the call's ``Decoder`` (the sub-client's) makes the answer its model.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import random
import sys
import traceback
import warnings
from collections.abc import Callable, Coroutine, Mapping, Sequence
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any, Literal, Self, Unpack

import attrs
import orjson
import yarl

from ._core import validate as _validate
from ._core.compat import caller_frame
from ._pipeline.ratelimit import Pacer, Pacing
from ._pipeline.run import Call, Env, deadline_scope, run
from ._transports.aiohttp import AiohttpTransport
from ._transports.base import Timeout, Transport
from ._version import __version__
from .auth import ApiKeyAuth, Auth, BearerAuth, static_headers
from .clock import SYSTEM_CLOCK, Clock, until, wait_tasks
from .errors import ClientClosedError, RequestTimeout, WrongEventLoopError
from .fleet import fleet_url
from .models import RateLimit
from .redact import redact_url
from .resources.entries import Entries
from .resources.events import Events
from .resources.jobs import Jobs
from .resources.orgs import Orgs
from .resources.seasons import Seasons
from .retry import RetryBudget, RetryPolicy
from .types import AttemptTimeoutArg, CallOptions, Progress, TimeoutArg, check_options, split

if TYPE_CHECKING:  # downloads, webhooks and tracing load on first use
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.trace import TracerProvider

    from ._pipeline.metrics import Metrics
    from .resources.downloads import DownloadResult
    from .resources.raw import RawResponses
    from .webhooks.waiters import WakeSource

logger = logging.getLogger(__name__)

Host = Literal["api", "account"]

_CLOSING = "svc_async client closed"
_JSON_HEADERS = {"Content-Type": "application/json"}


def _base(url: str | yarl.URL, what: str) -> str:
    parsed = yarl.URL(str(url))
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ValueError(f"{what} must be an absolute http(s) URL, got {redact_url(parsed)!r}")
    if parsed.query_string or parsed.fragment:
        raise ValueError(f"{what} must not carry a query string or fragment")
    return str(parsed).rstrip("/")


DEFAULT_TIMEOUT = 120.0
"""Seconds a call may take in all by default: attempts, pacing, auth, backoff, searches."""

DEFAULT_ATTEMPT_TIMEOUT = Timeout(total=30.0, connect=10.0)
"""The default limit of each HTTP exchange within a call."""


@attrs.frozen
class _Shared:
    """State shared by a client and its ``with_options`` views: the pipeline's ``Env``
    (the auth, the clock, the tracker of running calls among it), and what the client
    closes besides."""

    env: Env
    transport: Transport
    """The transport as given (``Env`` holds it cut off at each exchange's limit)."""
    fleet: Any
    """The fleet's pacer when there is one (closed with the client)."""
    wake: Any
    """The fleet wake-up source the client made itself (closed with it)."""
    urls: dict[tuple[str, str], yarl.URL] = attrs.field(factory=dict)


class Client:
    """The async session manager for the Licence Verification Service.

    Use it as ``async with Client(base_url, token=...) as svc:`` and reach the service
    through ``svc.orgs``, ``svc.seasons``, ``svc.events``, ``svc.entries`` and
    ``svc.jobs``. ``account_url`` serves ``GET /api/orgs/me`` and API-key login and
    defaults to ``base_url``. What you pass wins: the hosts come from ``SVC_BASE_URL``
    and ``SVC_ACCOUNT_URL`` only when you pass neither, and credentials from
    ``SVC_API_TOKEN`` (or ``SVC_API_KEY_ID`` and ``SVC_API_KEY_SECRET``) only when you
    pass neither ``token`` nor ``auth``. ``clock`` is where every deadline, pacing wait,
    poll and backoff reads the time and sleeps (default: the system clock; tests pass
    ``svc_async.testing.VirtualClock``). ``tracing=True`` (the ``otel`` extra) runs each
    call in an OpenTelemetry span of the global tracer provider, or of the
    ``TracerProvider`` given (see ``svc_async._pipeline.tracing``). ``metrics=True`` (the
    same extra) records OpenTelemetry metrics (request durations, retries, 429s, pacing
    holds, the rate limit left, job waits) on the global meter provider, or on the
    ``MeterProvider`` given. ``fleet`` (default
    ``SVC_FLEET_URL``) is a Redis URL: every client of the account given it draws from
    one rate budget. ``account`` names that account in the fleet (any string, the same on
    every client and ``WebhookReceiver`` of it); without it the account is told by the
    base URL and the credential (an API key's id, a token's digest), and an auth that
    tells neither is refused. With ``account`` and no ``webhooks``, ``jobs.wait`` wakes on
    the deliveries the account's receivers take, in any process.

    ``timeout`` (seconds, None: none) bounds each call as a whole: every attempt, pacing
    hold, auth login or renewal, backoff and tag search (default 120 s).
    ``attempt_timeout`` limits each HTTP exchange within a call (seconds or a ``Timeout``
    with connect and read parts; default 30 s, 10 s to connect).
    """

    webhooks: WakeSource | None
    """What wakes ``jobs.wait``: the receiver given, the fleet's wake-ups (with ``fleet``
    and ``account``), or None (polling only)."""
    creation_tags: bool
    """Whether ``jobs.create`` tags each job so an ambiguous create can be found again."""

    def __init__(
        self,
        base_url: str | yarl.URL | None = None,
        *,
        token: str | None = None,
        auth: Auth | None = None,
        account_url: str | yarl.URL | None = None,
        transport: Transport | None = None,
        timeout: TimeoutArg = DEFAULT_TIMEOUT,
        attempt_timeout: AttemptTimeoutArg | Literal["default"] = "default",
        retry: RetryPolicy | None = None,
        rate_limit: bool | Pacing = True,
        webhooks: WakeSource | None = None,
        user_agent: str | None = None,
        retry_budget: RetryBudget | None = None,
        creation_tags: bool = True,
        tracing: bool | TracerProvider = False,
        metrics: bool | MeterProvider = False,
        clock: Clock | None = None,
        fleet: str | None = None,
        account: str | None = None,
        headers: Mapping[str, str] | None = None,
        event_hooks: Mapping[str, Sequence[Callable[[Any], Any]]] | None = None,
        proxy: str | yarl.URL | None = None,
        trust_env: bool = True,
    ) -> None:
        self._base, self._account = _hosts(base_url, account_url)
        auth = _resolve_auth(token, auth)
        given = {"timeout": timeout, "attempt_timeout": attempt_timeout, "retry": retry}
        self._retry, self._timeout, self._attempt_timeout = _over(_BUILT_IN, "Client", given)
        transport = _default_transport(transport, proxy, trust_env)
        clock = _resolve_clock(clock)
        pacer = _local_pacer(rate_limit, clock)
        fleet = fleet_url(fleet)
        _validate.account_name(account)
        self.metrics = _metrics(metrics)
        """The OpenTelemetry instruments of ``metrics=`` (None when off)."""
        fleet_at = _FleetAt(fleet, account, clock, self.metrics)
        fleet_pacer = _fleet_pacer(fleet_at, pacer, self._base, auth)
        wake = webhooks if webhooks is not None else _fleet_wake(fleet_at)
        observers = _observers(tracing, event_hooks, self.metrics, clock)
        self._origin = _origin_of(caller_frame(1))
        headers = {**_default_headers(user_agent), **_own_headers(headers, auth, "headers")}
        env = Env(
            transport=transport,
            auth=auth,
            static_auth=static_headers(auth),
            account_url=self._account,
            # Logins run under the client's own settings (and the deadline of the call
            # that needs them), whatever view made that call.
            login_timeout=self._timeout,
            login_attempt_timeout=self._attempt_timeout,
            login_policy=self._retry,
            default_headers=headers,
            pacer=pacer if fleet_pacer is None else fleet_pacer,
            budget=retry_budget or RetryBudget(),
            rng=random.Random(),
            observers=observers,
            clock=clock,
        )
        own_wake = wake if wake is not webhooks else None
        self._shared = _Shared(env=env, transport=transport, fleet=fleet_pacer, wake=own_wake)
        self._call_headers: dict[str, str] | None = None
        """A ``with_options(headers=...)`` view's headers over the client's."""
        self.webhooks = wake
        self.creation_tags = creation_tags
        self._resources()

    def __repr__(self) -> str:
        env = self._shared.env
        state = "closed" if env.tracker.closed else "open"
        return f"<Client {self._base} auth={env.auth!r} {state}>"

    # lifecycle

    async def __aenter__(self) -> Self:
        self._check_usable()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __del__(self, _warn: Any = warnings.warn) -> None:
        shared = getattr(self, "_shared", None)
        tracker = None if shared is None else shared.env.tracker
        if tracker is None or tracker.closed or tracker.loop is None or not self._original():
            return
        _warn(
            f"unclosed svc_async.Client {self._base} created at {self._origin}:"
            " use `async with Client(...)` or `await client.aclose()`",
            ResourceWarning,
            source=self,
            stacklevel=2,
        )

    def _original(self) -> bool:
        """Whether this is the client itself, not a ``with_options`` view of it."""
        return "_view" not in self.__dict__

    async def aclose(self, *, grace: float = 0) -> None:
        """End running calls with ClientClosedError and close the transport.

        ``grace`` (seconds, default 0) lets the work under way finish first: the calls
        in flight, and the waits, bulk fetches and searches that started before, with
        every call they still make; a call started after ``aclose`` is refused at once
        (``ClientClosedError``). What is still running when the grace is spent ends as
        with ``grace=0``. The transport is closed even when you passed it in (httpx's
        rule); an aiohttp session you gave to ``AiohttpTransport(session=...)`` is still
        never closed.
        """
        grace = _validate.seconds(grace, "grace")
        shared = self._shared
        tracker, clock = shared.env.tracker, shared.env.clock
        if tracker.closed:
            return
        tracker.closed = True
        if grace:
            await tracker.drain(clock, grace)
        current = asyncio.current_task()
        running = [t for t in tracker.active if t is not current and not t.done()]
        for task in running:
            task.cancel(_CLOSING)
        if running:
            await wait_tasks(clock, running, 5.0)  # their unwinding, briefly
        await shared.transport.aclose()  # httpx's rule: a client closes the transport it was given
        if shared.fleet is not None:
            await shared.fleet.aclose()
        if shared.wake is not None:
            await shared.wake.aclose()

    @property
    def clock(self) -> Clock:
        """The clock this client's deadlines, pacing, polls and backoff run on."""
        return self._shared.env.clock

    @property
    def closed(self) -> bool:
        """True after ``aclose()``."""
        return self._shared.env.tracker.closed

    @property
    def rate_limit(self) -> RateLimit | None:
        """The ``x-ratelimit-*`` headers of the last response that had them."""
        return self._shared.env.seen.rate_limit

    @property
    def server_date(self) -> str | None:
        """The ``Date`` header of the last response that had one (the server's clock)."""
        return self._shared.env.seen.server_date

    @property
    def base_url(self) -> str:
        """The verification host's base URL."""
        return self._base

    @property
    def account_url(self) -> str:
        """The account host's base URL (orgs and login)."""
        return self._account

    @property
    def transport(self) -> Transport:
        """The transport this client sends through."""
        return self._shared.transport

    def with_options(
        self,
        *,
        timeout: TimeoutArg | Literal["default"] = "default",
        attempt_timeout: AttemptTimeoutArg | Literal["default"] = "default",
        retry: RetryPolicy | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Client:
        """A view of this client with other defaults; it shares connections and state.

        ``"default"`` keeps this client's setting. ``headers`` are sent by every call of
        the view, over the client's (checked as ``Client(headers=...)`` are).
        """
        view = object.__new__(Client)
        view.__dict__.update(self.__dict__)
        view.__dict__.pop("with_raw_response", None)  # the view's own, over its sub-clients
        view.__dict__["_view"] = True
        if headers is not None:
            own = _own_headers(headers, self._shared.env.auth, "headers")
            view._call_headers = {**(self._call_headers or {}), **own}
        given = {"timeout": timeout, "attempt_timeout": attempt_timeout, "retry": retry}
        view._retry, view._timeout, view._attempt_timeout = _over(
            self._defaults, "with_options", given
        )
        view._resources()
        return view

    @functools.cached_property
    def with_raw_response(self) -> RawResponses:
        """The same calls, each returning its ``Reply`` (``svc_async.resources.raw``): the model in
        ``.data``, and this call's own status, headers, rate limit, attempts, elapsed
        time and request id. A view: it shares this client (and its options)."""
        from .resources.raw import RawResponses

        return RawResponses(self.orgs, self.seasons, self.events, self.entries, self.jobs)

    def _resources(self) -> None:
        """Set up the sub-clients, and the defaults of a call that gives no options.

        The defaults are resolved here, once per client or view, not on every call.
        """
        self._defaults = (self._retry, self._timeout, self._attempt_timeout)
        send, tracker = self._send, self._shared.env.tracker
        self.orgs = Orgs(self, send, tracker)
        self.seasons = Seasons(self, send, tracker)
        self.events = Events(self, send, tracker)
        self.entries = Entries(self, send, tracker)
        self.jobs = Jobs(self, send, tracker)

    def _check_usable(self) -> None:
        tracker = self._shared.env.tracker
        if tracker.closed and not tracker.admits(asyncio.current_task()):
            raise ClientClosedError("this Client is closed; create a new one")
        loop = asyncio.get_running_loop()
        if tracker.loop is None:
            tracker.loop = loop
        elif tracker.loop is not loop:
            if tracker.loop.is_closed():
                tracker.loop = loop
            else:
                raise WrongEventLoopError(
                    "this Client belongs to another event loop; create one client per loop"
                )

    async def download(
        self,
        url: str | yarl.URL,
        destination: str | os.PathLike[str] | IO[bytes],
        *,
        progress: Progress | None = None,
        timeout: TimeoutArg = None,
        attempt_timeout: AttemptTimeoutArg | Literal["default"] = "default",
    ) -> DownloadResult:
        """Stream a signed link (recording, licence file, logo) to a path or binary file.

        The API's credentials go only to the API's own hosts; a path is written to a
        temporary file and renamed into place when complete. A 403 from a storage host
        raises ``SignedURLExpired``: read the resource again for a fresh link.
        ``timeout`` bounds the whole download in seconds (default: none, big files take
        long); ``attempt_timeout`` each exchange (default 10 s to connect, 60 s per read).
        """
        from .resources.downloads import download

        whole, per = split(timeout, attempt_timeout)
        limits = None if per == "default" else per
        seconds = None if whole == "default" else whole
        self._check_usable()
        work = download(
            self._shared.env,
            url,
            destination,
            api_urls=(self._base, self._account),
            policy=self._retry,
            progress=progress,
            timeout=limits,
        )
        what = f"download of {redact_url(str(url)) if isinstance(url, str | yarl.URL) else url}"
        env = self._shared.env
        # Tracked whole, as a wait is: aclose() ends it with ClientClosedError.
        deadline = None if seconds is None else env.clock.now() + seconds
        with env.tracker.operation(what):
            try:
                # Every hop, retry, backoff and login of the download ends by its deadline.
                with deadline_scope(deadline):
                    async with until(env.clock, deadline) as timer:
                        return await work
            except TimeoutError:
                if not timer.expired():
                    raise
                raise RequestTimeout(f"{what} did not finish within {seconds:g}s") from None

    # the escape hatch

    async def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        host: Host = "api",
        idempotent: bool | None = None,
        **options: Unpack[CallOptions],
    ) -> Any:
        """Call any endpoint and return its decoded JSON (for calls not modelled yet).

        ``idempotent`` (default: True for GET/HEAD) says whether retries may repeat it;
        ``options`` are every call's (``CallOptions``).
        """
        if not isinstance(method, str) or not method.isalpha():
            raise ValueError("method must be an HTTP method name such as 'GET'")
        if not isinstance(path, str) or not path.startswith("/"):
            raise ValueError("path must be a string starting with '/'")
        method = method.upper()
        if idempotent is None:
            idempotent = method in ("GET", "HEAD", "OPTIONS")
        return await self._send(
            method, path, json, options, host=host, idempotent=idempotent, operation="request"
        )

    # the pipeline

    def _send(
        self,
        method: str,
        path: str,
        body: Any = None,
        options: CallOptions | None = None,
        /,
        **fields: Any,
    ) -> Coroutine[Any, Any, Any]:
        """Send one logical call through the pipeline (await the result): the one way a
        sub-client calls, the ``Send`` of ``resources._base``.

        ``options`` are the caller's ``CallOptions`` as given, checked here (what is left
        out takes this client's default); ``fields`` the sub-client's own (``SendFields``):
        ``host`` picks the base URL, the rest are ``Call`` fields of the same names. Gives
        what the call's ``decode`` makes of the answer. Not a coroutine itself: the
        pipeline's ``run`` is awaited directly, one layer less on every call.
        """
        shared = self._shared
        tracker = shared.env.tracker  # its loop and closed flag, read without properties
        if tracker.loop is not asyncio.get_running_loop() or tracker.closed:
            self._check_usable()
        seconds: float | None
        if options:
            policy, seconds, per = _over(self._defaults, fields.get("operation", ""), options)
        else:
            policy, seconds, per = self._defaults
        url = self._url(fields.pop("host", "api"), path)
        if self._call_headers or (
            options and ("extra_headers" in options or "extra_query" in options)
        ):
            url = self._with_extras(url, fields, options)
        call = Call(
            method=method,
            url=url,
            content=None if body is None else orjson.dumps(body),
            timeout=seconds,
            attempt_timeout=per,
            policy=policy,
            **fields,
        )
        return run(shared.env, call)

    def _with_extras(
        self, url: yarl.URL, fields: dict[str, Any], options: CallOptions | None
    ) -> yarl.URL:
        """A call's own headers (the view's, then ``extra_headers``) into ``fields``, and
        its URL with ``extra_query``; both checked before anything is sent."""
        extra_headers = extra_query = None
        if options:
            extra_headers, extra_query = options.get("extra_headers"), options.get("extra_query")
        own = _own_headers(extra_headers, self._shared.env.auth, "extra_headers")
        headers = {**(self._call_headers or {}), **own, **(fields.get("headers") or {})}
        if headers:
            fields["headers"] = headers
        if extra_query is None:
            return url
        if not isinstance(extra_query, Mapping):
            raise TypeError("extra_query must be a mapping of parameter names to strings")
        for name, value in extra_query.items():
            if not isinstance(name, str) or not isinstance(value, str | int | float):
                raise TypeError("extra_query names must be strings, values strings or numbers")
            _validate.header_value(str(value), f"extra_query[{name!r}]")  # no control chars
        return url.update_query(extra_query)

    def _url(self, host: Host, path: str) -> yarl.URL:
        """The URL of ``path`` on ``host``, parsed once: paths repeat, parsing costs µs."""
        urls = self._shared.urls
        url = urls.get((host, path))
        if url is None:
            if len(urls) >= 4096:
                urls.clear()
            base = self._account if host == "account" else self._base
            url = urls[host, path] = yarl.URL(base + path)
        return url


def _resolve_auth(token: str | None, auth: Auth | None) -> Auth:
    """The client's credential: ``token`` or ``auth`` as passed, else the environment's."""
    if token is not None and auth is not None:
        raise ValueError("pass either token= or auth=, not both")
    if auth is None:
        return _auth_from(token)
    if not isinstance(auth, Auth):
        raise TypeError(
            "auth must implement the Auth protocol: headers() and flow() (see svc_async.auth)"
        )
    return auth


Limits = tuple[RetryPolicy, float | None, Timeout]
"""A call's retry policy, whole-call bound (seconds, None: none) and attempt limit."""

_BUILT_IN: Limits = (RetryPolicy(), DEFAULT_TIMEOUT, DEFAULT_ATTEMPT_TIMEOUT)
"""What a ``Client`` given no ``retry``, ``timeout`` or ``attempt_timeout`` uses."""


def _over(defaults: Limits, operation: str, options: Mapping[str, Any]) -> Limits:
    """The limits of ``options`` (a call's, a view's or the client's own, their names and
    values checked) over ``defaults``: what is None or ``"default"`` keeps the default."""
    check_options(operation, options)
    whole, per = split(options.get("timeout", "default"), options.get("attempt_timeout", "default"))
    policy, seconds, limit = defaults
    return (
        options.get("retry") or policy,
        seconds if whole == "default" else whole,
        limit if per == "default" else per,
    )


def _resolve_clock(clock: Clock | None) -> Clock:
    """``clock=``, checked, or the system clock."""
    if clock is None:
        return SYSTEM_CLOCK
    if not isinstance(clock, Clock):
        raise TypeError("clock must implement the Clock protocol (now, wall and sleep)")
    return clock


def _local_pacer(rate_limit: bool | Pacing, clock: Clock) -> Pacing | None:
    """The pacer of ``rate_limit=`` (None: no pacing), on ``clock`` unless it has its own."""
    if isinstance(rate_limit, Pacer):
        if rate_limit.clock is SYSTEM_CLOCK:
            rate_limit.clock = clock  # one timeline for the pacer and the deadlines
        return rate_limit
    if isinstance(rate_limit, bool):
        return Pacer(clock=clock) if rate_limit else None
    if isinstance(rate_limit, Pacing):
        return rate_limit
    raise TypeError("rate_limit must be a bool or a Pacer")


@attrs.frozen
class _FleetAt:
    """Where a client's fleet is and what its parts share: the URL (None: no fleet), the
    account named, the clock and the client's metrics."""

    url: str | None
    account: str | None
    clock: Clock
    metrics: Metrics | None


def _fleet_wake(fleet: _FleetAt) -> WakeSource | None:
    """The wake-up source a client makes itself to wake ``jobs.wait`` on its account's
    deliveries, taken by any receiver of the fleet (None without a fleet or account)."""
    if fleet.url is None or fleet.account is None:
        return None
    from .webhooks.wake import FleetWake

    return FleetWake(fleet.url, account=fleet.account, clock=fleet.clock, metrics=fleet.metrics)


def _default_headers(user_agent: str | None) -> dict[str, str]:
    """The headers of every request (``user_agent`` checked: it goes in a header)."""
    if user_agent is not None:
        _validate.header_value(user_agent, "user_agent")
    return {"User-Agent": user_agent or f"svc-async/{__version__}", "Accept": "application/json"}


def _own_headers(headers: Mapping[str, str] | None, auth: Auth, what: str) -> dict[str, str]:
    """Headers of the caller's own, checked like the SDK's (no CR, LF or other control
    character) before anything is sent; they may not override authentication or the
    call's request id (a clear ``ValueError``)."""
    if headers is None:
        return {}
    if not isinstance(headers, Mapping):
        raise TypeError(f"{what} must be a mapping of header names to strings")
    reserved = {"authorization", "proxy-authorization", "x-request-id"}
    reserved |= {name.lower() for name in static_headers(auth) or {}}
    out = {}
    for name, value in headers.items():
        _validate.header_name(name, f"{what} name")
        _validate.header_value(value, f"{what}[{name!r}]")
        if name.lower() in reserved:
            raise ValueError(
                f"{what} may not set {name!r}: the client's authentication and request id"
                " are its own (use auth= for credentials)"
            )
        out[name] = value
    return out


def _default_transport(
    transport: Transport | None, proxy: str | yarl.URL | None, trust_env: bool
) -> Transport:
    """The transport given, else aiohttp's with the proxy settings."""
    if not isinstance(trust_env, bool):
        raise TypeError("trust_env must be a bool")
    if transport is not None and not isinstance(transport, Transport):
        raise TypeError("transport must implement the Transport protocol (send, aclose)")
    if transport is None:
        return AiohttpTransport(proxy=proxy, trust_env=trust_env)
    if proxy is not None:
        raise ValueError(
            "proxy= applies to the default transport; with transport=, give that transport"
            " its own proxy= (AiohttpTransport(proxy=...) or HttpxTransport(proxy=...))"
        )
    return transport


def _observers(
    tracing: object, event_hooks: Any, metrics: Metrics | None, clock: Clock
) -> tuple[Any, ...]:
    """Who hears every call: the tracer (``tracing=``), the metrics (``metrics=``) and the
    event hooks, if any."""
    trace = _trace_hook(tracing)
    hooks = None
    if event_hooks is not None:
        from .hooks import EventHooks

        hooks = EventHooks(event_hooks)
    measure = metrics.observer(clock) if metrics is not None else None
    return tuple(o for o in (trace, measure, hooks) if o)


def _metrics(setting: object) -> Metrics | None:
    """The instruments of ``Client(metrics=...)``: None when off (nothing imported)."""
    if setting is False or setting is None:
        return None
    try:
        from ._pipeline.metrics import metrics_for
    except ImportError as exc:
        raise ImportError(
            "Client(metrics=...) needs OpenTelemetry: pip install 'svc-async[otel]'"
        ) from exc
    return metrics_for(setting)


def _trace_hook(tracing: object) -> Any:
    """The tracing observer for ``Client(tracing=...)``: None when off (nothing imported)."""
    if tracing is False:
        return None
    if tracing is not True and not callable(getattr(tracing, "get_tracer", None)):
        raise TypeError("tracing must be True, False or an OpenTelemetry TracerProvider")
    try:
        from ._pipeline.tracing import call_tracer
    except ImportError as exc:
        raise ImportError(
            "Client(tracing=...) needs OpenTelemetry: pip install 'svc-async[otel]'"
        ) from exc
    return call_tracer(None if tracing is True else tracing)  # type: ignore[arg-type]


def _origin_of(frame: Any) -> str:
    """Where a client was made: file:line, or the whole stack in asyncio debug/dev mode."""
    if frame is None:  # a Python without frames to read
        return "an unknown place"
    if sys.flags.dev_mode or os.environ.get("PYTHONASYNCIODEBUG"):
        return "\n" + "".join(traceback.format_stack(frame))
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"


def _fleet_pacer(fleet: _FleetAt, pacer: Pacing | None, base: str, auth: Auth) -> Pacing | None:
    """The account's shared budget in the fleet, which calls go through and the client
    closes: the local ``Pacer`` becomes its fallback for outages (None: no fleet, or
    ``rate_limit=`` gave no ``Pacer``)."""
    if fleet.url is None or not isinstance(pacer, Pacer):
        return None
    from .fleet.budget import FleetPacer
    from .fleet.keys import account_namespace, credential_identity
    from .fleet.store import Store

    if fleet.account is not None:
        namespace = account_namespace("account", fleet.account)
    else:
        identity = credential_identity(auth)
        if identity is None:
            raise ValueError(
                "a fleet must know which account it shares a budget for: pass account="
                " (the same name on every client of the account), or an auth with"
                " secrets() or a key_id"
            )
        namespace = account_namespace(base, identity)
    store = Store(fleet.url, clock=fleet.clock, metrics=fleet.metrics, role="budget")
    return FleetPacer(store, namespace, pacer, fleet.metrics)


def _hosts(base_url: str | yarl.URL | None, account_url: str | yarl.URL | None) -> tuple[str, str]:
    """The verification and account hosts: what the caller passes wins, never a mix.

    Passed in code (``account_url`` defaulting to ``base_url``), or both taken from the
    environment when neither is passed; ``SVC_ACCOUNT_URL`` is never combined with a
    ``base_url`` passed in code (logins would carry the key secret to a host the code did
    not name), and ``account_url`` without ``base_url`` is refused.
    """
    if base_url is None and account_url is None:
        env_base = os.environ.get("SVC_BASE_URL")
        if not env_base:
            raise ValueError("base_url is required (or set SVC_BASE_URL)")
        base = _base(env_base, "SVC_BASE_URL")
        env_account = os.environ.get("SVC_ACCOUNT_URL")
        return base, _base(env_account, "SVC_ACCOUNT_URL") if env_account else base
    if base_url is None:
        raise ValueError(
            "account_url was passed without base_url: pass base_url too (SVC_BASE_URL is"
            " not combined with hosts passed in code)"
        )
    base = _base(base_url, "base_url")
    if account_url is not None:
        return base, _base(account_url, "account_url")
    stale = os.environ.get("SVC_ACCOUNT_URL")
    if stale and stale.rstrip("/") != base:
        logger.warning(
            "SVC_ACCOUNT_URL is ignored because base_url was passed in code; the account"
            " host is base_url (pass account_url= for another one)"
        )
    return base, base


def _auth_from(token: str | None) -> Auth:
    if token is not None:
        return BearerAuth(token)  # passed in code: used as given, or refused
    try:
        token = os.environ.get("SVC_API_TOKEN")
        if token:
            return BearerAuth(token)
        key_id, secret = os.environ.get("SVC_API_KEY_ID"), os.environ.get("SVC_API_KEY_SECRET")
        if key_id and secret:
            return ApiKeyAuth(key_id, secret)
    except ValueError as exc:  # say where the bad value came from (never the value)
        raise ValueError(f"from the environment (SVC_API_*): {exc}") from None
    raise ValueError(
        "no credentials: pass token= or auth=, or set SVC_API_TOKEN"
        " (or SVC_API_KEY_ID and SVC_API_KEY_SECRET)"
    )
