"""Optional OpenTelemetry tracing: one span per SDK call (the ``svc-async[otel]`` extra).

``Client(tracing=True)`` gives every call a client span named after the SDK call
(``svc_async jobs.get``) from the global tracer provider (or the provider given as
``tracing=``). The span carries the redacted URL, the attempts made and the final HTTP
status as attributes; each attempt, pacing hold and retry wait is an event. No header
is recorded, and the URL passes ``redact_url`` (no user info, no query values).

Tracing is an observer of the pipeline (``pipeline.CallObserver``): it hears a call's
steps and records them; it never runs the call. The span is the current one while the
call runs, so a login the call needs is its child.

Only this module imports ``opentelemetry``, and only a client with tracing on imports
this module: without it, tracing costs one check per call.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode, TracerProvider

from .._version import __version__
from ..errors import APIError, SvcError
from ..redact import redact_text, redact_url
from .run import Call

if TYPE_CHECKING:
    from .._transports.base import Request, Response

__all__ = ["CallTracer", "call_tracer"]

TRACER_NAME = "svc_async"


class _SpanWatch:
    """One call's span: opened when the call starts, current while it runs, ended with it."""

    __slots__ = ("attempts", "secrets", "span", "status", "token")

    def __init__(self, span: trace.Span, secrets: tuple[str, ...]) -> None:
        self.span = span
        self.secrets = secrets
        self.attempts = 0
        self.status: int | None = None
        self.token = otel_context.attach(trace.set_span_in_context(span))

    def request(self, request: Request) -> None:
        """The call's request id (the same on every attempt) joins the span to logs."""
        rid = request.headers.get("X-Request-Id")
        if rid is not None:
            self.span.set_attribute("svc_async.request_id", rid)

    def attempt(self, number: int, response: Response | None, failure: SvcError | None) -> None:
        self.attempts = number
        attributes: dict[str, Any] = {"svc_async.attempt": number}
        if response is not None:
            self.status = response.status
            attributes["http.response.status_code"] = response.status
        if failure is not None:
            attributes["error.type"] = type(failure).__name__
        self.span.add_event("svc_async.attempt", attributes)

    def paced(self, seconds: float) -> None:
        self.span.add_event("svc_async.pacing_hold", {"svc_async.wait_seconds": seconds})

    def retrying(self, attempt: int, wait: float, reason: str) -> None:
        self.span.add_event(
            "svc_async.retry",
            {
                "svc_async.attempt": attempt,
                "svc_async.wait_seconds": wait,
                "svc_async.reason": reason,
            },
        )

    def end(self, error: BaseException | None) -> None:
        span = self.span
        if isinstance(error, asyncio.CancelledError):
            span.set_attribute("error.type", "cancelled")
        elif error is not None:
            # The SDK's messages are redacted already; redact again, since any exception
            # may land here (a bug's message quotes whatever it quotes).
            message = redact_text(str(error), self.secrets)
            span.set_attribute("error.type", type(error).__name__)
            span.set_status(Status(StatusCode.ERROR, f"{type(error).__name__}: {message}"))
            if isinstance(error, APIError) and self.status is None:
                self.status = error.status
        span.set_attribute("svc_async.attempts", self.attempts)
        if self.status is not None:
            span.set_attribute("http.response.status_code", self.status)
        otel_context.detach(self.token)
        span.end()


class CallTracer:
    """The pipeline observer that traces each call in a span of ``provider``'s tracer."""

    __slots__ = ("tracer",)

    def __init__(self, provider: TracerProvider | None = None) -> None:
        self.tracer = trace.get_tracer(TRACER_NAME, __version__, tracer_provider=provider)

    def start(self, call: Call, secrets: tuple[str, ...]) -> _SpanWatch:
        """Open the call's span (the current one until the call ends)."""
        url = call.url
        operation = call.operation or "request"
        attributes: dict[str, Any] = {
            "http.request.method": call.method,
            "url.full": redact_url(url),
            "server.address": url.host or "",
            "svc_async.operation": operation,
        }
        if url.port is not None:
            attributes["server.port"] = url.port
        span = self.tracer.start_span(
            f"svc_async {operation}",
            kind=SpanKind.CLIENT,
            attributes=attributes,
            record_exception=False,
            set_status_on_exception=False,
        )
        return _SpanWatch(span, secrets)


def call_tracer(provider: TracerProvider | None = None) -> CallTracer:
    """The tracing observer of ``Client(tracing=...)`` (``provider`` None: the global)."""
    return CallTracer(provider)
