"""Optional OpenTelemetry tracing: one span per SDK call (the ``svc-async[otel]`` extra).

``Client(tracing=True)`` runs every call inside a client span named after the SDK call
(``svc_async jobs.get``) from the global tracer provider (or the provider given as
``tracing=``). The span carries the redacted URL, the attempts made and the final HTTP
status as attributes; each attempt, pacing hold and retry wait is an event. No header
is recorded, and the URL passes ``redact_url`` (no user info, no query values).

Only this module imports ``opentelemetry``, and only a client with tracing on imports
this module: without it, tracing costs one ``None`` check per call.
"""

from __future__ import annotations

import asyncio
from typing import Any

import attrs
from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode, TracerProvider

from ._version import __version__
from .errors import APIError, SvcError
from .pipeline import Call, Env, run
from .redact import redact_text, redact_url

__all__ = ["call_tracer"]

TRACER_NAME = "svc_async"


class _Recorder:
    """The ``CallSpan`` the pipeline reports to: writes attempts, holds and retries."""

    __slots__ = ("attempts", "span", "status")

    def __init__(self, span: trace.Span) -> None:
        self.span = span
        self.attempts = 0
        self.status: int | None = None

    def attempt(self, number: int, status: int | None, failure: SvcError | None) -> None:
        self.attempts = number
        attributes: dict[str, Any] = {"svc_async.attempt": number}
        if status is not None:
            self.status = status
            attributes["http.response.status_code"] = status
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


def call_tracer(provider: TracerProvider | None = None) -> Any:
    """The ``Env.trace`` hook: runs each call in a span of ``provider`` (None: the global)."""
    tracer = trace.get_tracer(TRACER_NAME, __version__, tracer_provider=provider)

    async def traced(env: Env, call: Call) -> Any:
        url = call.url
        attributes: dict[str, Any] = {
            "http.request.method": call.method,
            "url.full": redact_url(url),
            "server.address": url.host or "",
            "svc_async.operation": call.operation or "request",
        }
        if url.port is not None:
            attributes["server.port"] = url.port
        name = f"svc_async {call.operation or 'request'}"
        with tracer.start_as_current_span(
            name,
            kind=SpanKind.CLIENT,
            attributes=attributes,
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            recorder = _Recorder(span)
            try:
                return await run(env, attrs.evolve(call, span=recorder))
            except asyncio.CancelledError:
                span.set_attribute("error.type", "cancelled")
                raise
            except BaseException as exc:
                # The SDK's messages are redacted already; redact again, since any
                # exception may land here (a bug's message quotes whatever it quotes).
                message = redact_text(str(exc), env.secrets())
                span.set_attribute("error.type", type(exc).__name__)
                span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {message}"))
                if isinstance(exc, APIError) and recorder.status is None:
                    recorder.status = exc.status
                raise
            finally:
                span.set_attribute("svc_async.attempts", recorder.attempts)
                if recorder.status is not None:
                    span.set_attribute("http.response.status_code", recorder.status)

    return traced
