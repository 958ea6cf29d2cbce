"""Optional OpenTelemetry metrics (``Client(metrics=...)``, the ``svc-async[otel]`` extra).

The instruments a fleet's operators ask for, under OpenTelemetry's semantic-convention
names where one exists:

``http.client.request.duration`` (each attempt, with ``http.request.method``,
``http.response.status_code``, ``error.type``, ``server.address``,
``svc_async.operation``); ``svc_async.client.retries`` (by ``svc_async.retry.reason``),
``svc_async.client.rate_limited`` (answers 429), ``svc_async.client.pacing.duration``,
the ``svc_async.client.rate_limit.remaining`` gauge, ``svc_async.job.wait.duration``,
``svc_async.webhook.deliveries`` (received, run, given up), ``svc_async.fleet.grants``
and ``svc_async.fleet.store.outages``. The docs' logging page lists them with units.

Metrics observe: the call observer hears a call's steps (``CallObserver``) and records
them, and the features that own a figure (the poller, the receiver, the fleet) are
handed the ``Metrics`` and call it; nothing here runs or changes anything. Only this
module imports ``opentelemetry.metrics``, and only a client or receiver given ``metrics=``
imports this module.
"""

from __future__ import annotations

import functools
import threading
import time
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from opentelemetry import metrics as otel_metrics
from opentelemetry.metrics import Observation

from .._version import __version__
from ..clock import SYSTEM_CLOCK, Clock
from ..errors import SvcError
from .ratelimit import header_count

if TYPE_CHECKING:
    from .._transports.base import Request, Response
    from .run import Call

__all__ = ["CallMetrics", "Metrics", "metrics_for"]

METER_NAME = "svc_async"
# Seconds, as the semantic conventions advise for http.client.request.duration.
_DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10)


class Metrics:
    """The SDK's instruments on one meter: created once, recorded by whoever owns a figure.

    The per-call path stays cheap: the attributes of an attempt are built once per
    operation, method, server, status and error type and reused; the rate limit left is
    kept in a dict and read by the gauge's callback when the reader collects.
    """

    def __init__(self, provider: otel_metrics.MeterProvider | None = None) -> None:
        meter = otel_metrics.get_meter(METER_NAME, __version__, meter_provider=provider)
        seconds: dict[str, Any] = {
            "unit": "s",
            "explicit_bucket_boundaries_advisory": _DURATION_BUCKETS,
        }
        self.request_duration = meter.create_histogram(
            "http.client.request.duration",
            description="Duration of HTTP client requests.",
            **seconds,
        )
        self.retries = meter.create_counter(
            "svc_async.client.retries", unit="{retry}", description="Attempts retried, by reason."
        )
        self.rate_limited = meter.create_counter(
            "svc_async.client.rate_limited", unit="{response}", description="Answers 429."
        )
        self.pacing = meter.create_histogram(
            "svc_async.client.pacing.duration",
            description="Time a call was held back by rate-limit pacing.",
            **seconds,
        )
        self.left: dict[str, int] = {}
        """The rate limit left by server address, as the service last said."""
        self.remaining = meter.create_observable_gauge(
            "svc_async.client.rate_limit.remaining",
            callbacks=[self._observe_left],
            unit="{request}",
            description="Calls left in the rate-limit window, as the service last said.",
        )
        self.job_wait = meter.create_histogram(
            "svc_async.job.wait.duration", description="Time jobs.wait took.", **seconds
        )
        self.deliveries = meter.create_counter(
            "svc_async.webhook.deliveries",
            unit="{delivery}",
            description="Webhook deliveries received, run and given up.",
        )
        self.fleet_grants = meter.create_counter(
            "svc_async.fleet.grants",
            unit="{request}",
            description="Calls admitted by the fleet: from the shared budget, or locally.",
        )
        self.store_outages = meter.create_counter(
            "svc_async.fleet.store.outages",
            unit="{outage}",
            description="Times the fleet store became unreachable and the fleet went local.",
        )
        self.attempts: dict[tuple[Any, ...], dict[str, Any]] = {}
        """Attempt attributes by (operation, method, server, status, error type)."""

    def observer(self, clock: Clock) -> CallMetrics:
        """The pipeline observer recording each call's attempts on ``clock``'s time."""
        return CallMetrics(self, clock)

    def _observe_left(self, options: otel_metrics.CallbackOptions) -> list[Observation]:
        return [
            Observation(left, {"server.address": host}) for host, left in self.left.copy().items()
        ]

    def attempt_attributes(
        self, call: Call, status: int | None, error: str | None
    ) -> dict[str, Any]:
        """The attributes of an attempt of ``call`` not found in ``attempts``, made and kept
        there for each operation, method, server, status and error type (never changed:
        the SDK only reads them)."""
        found = {
            **_base_attributes(call.operation or "request"),
            "http.request.method": call.method,
            "server.address": call.url.host or "",
        }
        if status is not None:
            found["http.response.status_code"] = status
        if error is not None:
            found["error.type"] = error
        if len(self.attempts) < _MAX_ATTRIBUTE_SETS:
            self.attempts[(call.operation, call.method, call.url.host, status, error)] = found
        return found

    def waited(self, seconds: float, outcome: str, detail: str | None = None) -> None:
        """``jobs.wait`` ended after ``seconds``: ``finished`` (``detail``: the job's
        final status), ``timeout``, ``cancelled`` or ``error`` (``detail``: its type)."""
        attributes = {"svc_async.outcome": outcome}
        if detail is not None:
            key = "svc_async.job.status" if outcome == "finished" else "error.type"
            attributes[key] = detail
        self.job_wait.record(seconds, attributes)

    def delivery(self, kind: str, event: str, outcome: str | None = None) -> None:
        """A webhook delivery of ``kind`` was ``received`` (``outcome``: accepted,
        duplicate, test, rejected or closing), ``run`` or ``given_up``."""
        attributes = {"svc_async.webhook.kind": kind, "svc_async.webhook.event": event}
        if outcome is not None:
            attributes["svc_async.outcome"] = outcome
        self.deliveries.add(1, attributes)

    def granted(self, budget: str) -> None:
        """The fleet admitted a call: from the ``shared`` budget, or ``local`` (its store
        away or too slow for the call)."""
        self.fleet_grants.add(1, {"svc_async.fleet.budget": budget})

    def outage(self, role: str) -> None:
        """The fleet store of ``role`` (``budget``, ``wake`` or ``receiver``) became
        unreachable: what used it carries on locally until it is back."""
        self.store_outages.add(1, {"svc_async.fleet.role": role})


_MAX_ATTRIBUTE_SETS = 1024
"""Attempt attribute sets kept for reuse (operations x servers x statuses stay below)."""


class _CallWatch:
    """One call's figures: each attempt's duration, its 429, pacing holds and retries.

    Nothing is worked out when a call starts: an attempt's attributes are looked up
    once it ended, the pacing and retry ones only when the call was paced or retried.
    """

    __slots__ = ("call", "owner", "sent")

    def __init__(self, owner: CallMetrics, call: Call) -> None:
        self.owner = owner
        self.call = call
        self.sent: float | None = None

    @property
    def base(self) -> dict[str, Any]:
        return _base_attributes(self.call.operation or "request")

    def request(self, request: Request) -> None:
        self.sent = self.owner.now()

    def attempt(self, number: int, response: Response | None, failure: SvcError | None) -> None:
        metrics = self.owner.metrics
        call = self.call
        host = call.url.host
        status = None
        if response is not None:
            status = response.status
            left = header_count(
                response.headers.get("x-ratelimit-remaining")
            )  # as the pacer reads it
            if left is not None:
                metrics.left[host or ""] = left
            if status == 429:
                metrics.rate_limited.add(1, self.base)
        if self.sent is not None:
            error = None if failure is None else type(failure).__name__
            attributes = metrics.attempts.get((call.operation, call.method, host, status, error))
            if attributes is None:
                attributes = metrics.attempt_attributes(call, status, error)
            elapsed = self.owner.now() - self.sent
            metrics.request_duration.record(elapsed if elapsed > 0.0 else 0.0, attributes)
            self.sent = None

    def paced(self, seconds: float) -> None:
        self.owner.metrics.pacing.record(seconds, self.base)

    def retrying(self, attempt: int, wait: float, reason: str) -> None:
        self.owner.metrics.retries.add(1, {**self.base, "svc_async.retry.reason": reason})

    def end(self, error: BaseException | None) -> None:
        return None


@functools.lru_cache(maxsize=256)
def _base_attributes(operation: str) -> dict[str, Any]:
    """An operation's own attributes, one dict for all its calls (never changed)."""
    return {"svc_async.operation": operation}


class CallMetrics:
    """The pipeline observer of ``Client(metrics=...)``.

    An attempt's duration is read on ``clock``; on the system clock, whose time is the
    event loop's (``time.monotonic()`` on asyncio's loops), straight from
    ``time.monotonic()``: one call instead of six, on every attempt.
    """

    __slots__ = ("metrics", "now")

    def __init__(self, metrics: Metrics, clock: Clock) -> None:
        self.metrics = metrics
        self.now: Callable[[], float] = time.monotonic if clock is SYSTEM_CLOCK else clock.now

    def start(self, call: Call, secrets: tuple[str, ...]) -> _CallWatch:
        return _CallWatch(self, call)


_SHARED: weakref.WeakKeyDictionary[object, Metrics] = weakref.WeakKeyDictionary()
"""One ``Metrics`` per meter provider (``_GLOBAL``: the global one's), shared by every
client and receiver given it: an instrument is made once per meter, and an observable
gauge made twice keeps only its first callback."""


class _Global:
    """The key of the global provider's ``Metrics`` (weakly referenced, as providers are)."""


_GLOBAL = _Global()
_LOCK = threading.Lock()


def metrics_for(setting: object) -> Metrics:
    """``Metrics`` for ``Client(metrics=...)``: True for the global provider, else the
    ``MeterProvider`` given; the same one for every client and receiver given it."""
    if setting is not True and not isinstance(setting, otel_metrics.MeterProvider):
        raise TypeError(
            f"metrics must be True or an OpenTelemetry MeterProvider, not {type(setting).__name__}"
        )
    key = _GLOBAL if setting is True else setting
    with _LOCK:
        found = _SHARED.get(key)
        if found is None:
            found = _SHARED[key] = Metrics(None if setting is True else setting)
        return found
