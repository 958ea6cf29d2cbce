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

from typing import TYPE_CHECKING, Any

from opentelemetry import metrics as otel_metrics

from .._version import __version__
from ..clock import Clock
from ..errors import SvcError

if TYPE_CHECKING:
    from .._transports.base import Request, Response
    from .run import Call

__all__ = ["CallMetrics", "Metrics", "metrics_for"]

METER_NAME = "svc_async"
# Seconds, as the semantic conventions advise for http.client.request.duration.
_DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10)


class Metrics:
    """The SDK's instruments on one meter: created once, recorded by whoever owns a figure."""

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
        self.remaining = meter.create_gauge(
            "svc_async.client.rate_limit.remaining",
            unit="{request}",
            description="Calls left in the rate-limit window, as the service last said.",
        )
        self.job_wait = meter.create_histogram(
            "svc_async.job.wait.duration", description="Time jobs.wait took.", unit="s"
        )
        self.deliveries = meter.create_counter(
            "svc_async.webhook.deliveries",
            unit="{delivery}",
            description="Webhook deliveries received, run and given up.",
        )
        self.fleet_grants = meter.create_counter(
            "svc_async.fleet.grants", unit="{request}", description="Calls the fleet granted."
        )
        self.store_outages = meter.create_counter(
            "svc_async.fleet.store.outages", unit="{outage}", description="Fleet store outages."
        )

    def observer(self, clock: Clock) -> CallMetrics:
        """The pipeline observer recording each call's attempts on ``clock``'s time."""
        return CallMetrics(self, clock)

    def waited(self, seconds: float, outcome: str) -> None:
        """``jobs.wait`` ended after ``seconds``: finished, timeout or error."""
        self.job_wait.record(seconds, {"svc_async.outcome": outcome})

    def delivery(self, kind: str, event: str) -> None:
        """A webhook delivery of ``kind`` was received, run or given up."""
        self.deliveries.add(1, {"svc_async.webhook.kind": kind, "svc_async.webhook.event": event})


class _CallWatch:
    """One call's figures: each attempt's duration, its 429, pacing holds and retries."""

    __slots__ = ("base", "clock", "method", "metrics", "sent", "server")

    def __init__(self, metrics: Metrics, clock: Clock, call: Call) -> None:
        self.metrics = metrics
        self.clock = clock
        self.server = call.url.host or ""
        self.method = call.method
        self.base = {"svc_async.operation": call.operation or "request"}
        self.sent: float | None = None

    def request(self, request: Request) -> None:
        self.sent = self.clock.now()

    def attempt(self, number: int, response: Response | None, failure: SvcError | None) -> None:
        metrics = self.metrics
        attributes: dict[str, Any] = {
            **self.base,
            "http.request.method": self.method,
            "server.address": self.server,
        }
        if response is not None:
            attributes["http.response.status_code"] = response.status
            remaining = response.headers.get("x-ratelimit-remaining")
            if remaining is not None and remaining.strip().isdigit():
                metrics.remaining.set(int(remaining), {"server.address": self.server})
            if response.status == 429:
                metrics.rate_limited.add(1, self.base)
        if failure is not None:
            attributes["error.type"] = type(failure).__name__
        if self.sent is not None:
            metrics.request_duration.record(max(self.clock.now() - self.sent, 0.0), attributes)
            self.sent = None

    def paced(self, seconds: float) -> None:
        self.metrics.pacing.record(seconds, self.base)

    def retrying(self, attempt: int, wait: float, reason: str) -> None:
        self.metrics.retries.add(1, {**self.base, "svc_async.retry.reason": reason})

    def end(self, error: BaseException | None) -> None:
        return None


class CallMetrics:
    """The pipeline observer of ``Client(metrics=...)``."""

    __slots__ = ("clock", "metrics")

    def __init__(self, metrics: Metrics, clock: Clock) -> None:
        self.metrics = metrics
        self.clock = clock

    def start(self, call: Call, secrets: tuple[str, ...]) -> _CallWatch:
        return _CallWatch(self.metrics, self.clock, call)


def metrics_for(setting: object) -> Metrics:
    """``Metrics`` for ``Client(metrics=...)``: True for the global provider, else the
    ``MeterProvider`` given."""
    if setting is True:
        return Metrics()
    if not isinstance(setting, otel_metrics.MeterProvider):
        raise TypeError(
            f"metrics must be True or an OpenTelemetry MeterProvider, not {type(setting).__name__}"
        )
    return Metrics(setting)
