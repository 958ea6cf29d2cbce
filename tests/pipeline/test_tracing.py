"""OpenTelemetry tracing (``Client(tracing=...)``): one span per SDK call, read back from
the SDK's in-memory exporter. Time is virtual (looptime): pacing holds and retry waits
pass without sleeping."""

from __future__ import annotations

import ast
import logging
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from svc_async import (
    ApiKeyAuth,
    Client,
    MockTransport,
    NotFoundError,
    Request,
    Response,
    RetryPolicy,
    json_response,
)
from svc_async.testing import VirtualClock

from ..conftest import load

SECRET = "sk-live-0123456789abcdef"


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def provider(exporter: InMemorySpanExporter) -> TracerProvider:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider


def _events(span: ReadableSpan, name: str) -> list[dict[str, Any]]:
    return [dict(e.attributes or {}) for e in span.events if e.name == name]


def _client(handler: Any, provider: TracerProvider, **options: Any) -> Client:
    options.setdefault("token", "tok")
    options.setdefault("retry", RetryPolicy(wait_initial=0.5, wait_jitter=0.0))
    return Client(
        "https://api.example", transport=MockTransport(handler), tracing=provider, **options
    )


@pytest.mark.looptime
async def test_a_paced_call_that_retries_shows_its_hold_retry_and_attempts(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    job = load("get-verification-job.response.json")
    answers = [
        # the first call spends the window's budget: the next is held for the reset
        json_response(
            job,
            headers={
                "x-ratelimit-limit": "5",
                "x-ratelimit-remaining": "0",
                "x-ratelimit-reset": "3",
            },
        ),
        json_response(
            {"message": "busy"}, 503, {"x-ratelimit-remaining": "4", "x-ratelimit-reset": "60"}
        ),
        json_response(job, headers={"x-ratelimit-remaining": "3", "x-ratelimit-reset": "59"}),
    ]

    def handler(request: Request) -> Response:
        return answers.pop(0)

    async with _client(handler, provider, clock=VirtualClock()) as svc:
        await svc.jobs.get(job["id"])
        await svc.jobs.get(job["id"])

    first, second = exporter.get_finished_spans()
    assert first.name == second.name == "svc_async jobs.get"
    assert second.kind is SpanKind.CLIENT
    attrs = dict(second.attributes or {})
    assert attrs["svc_async.operation"] == "jobs.get"
    assert attrs["http.request.method"] == "GET"
    assert attrs["url.full"] == f"https://api.example/api/public/v1/verification-job/{job['id']}"
    assert attrs["svc_async.attempts"] == 2
    assert attrs["http.response.status_code"] == 200
    assert second.status.status_code is StatusCode.UNSET
    # The hold came first, for the window's reset (3 s, plus a margin).
    assert [e.name for e in second.events] == [
        "svc_async.pacing_hold",
        "svc_async.attempt",
        "svc_async.retry",
        "svc_async.attempt",
    ]
    (hold,) = _events(second, "svc_async.pacing_hold")
    assert 3.0 <= hold["svc_async.wait_seconds"] < 3.5
    assert [a["http.response.status_code"] for a in _events(second, "svc_async.attempt")] == [
        503,
        200,
    ]
    (retry,) = _events(second, "svc_async.retry")
    assert retry == {
        "svc_async.attempt": 2,
        "svc_async.wait_seconds": 0.5,
        "svc_async.reason": "HTTP 503",
    }
    # The first call was neither held nor retried.
    assert [e.name for e in first.events] == ["svc_async.attempt"]
    assert dict(first.attributes or {})["svc_async.attempts"] == 1


async def test_a_failed_call_ends_its_span_with_an_error_and_its_status(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    def handler(request: Request) -> Response:
        return json_response({"message": "no such job"}, 404)

    async with _client(handler, provider) as svc:
        with pytest.raises(NotFoundError):
            await svc.jobs.get(7)

    (span,) = exporter.get_finished_spans()
    attrs = dict(span.attributes or {})
    assert attrs["http.response.status_code"] == 404
    assert attrs["error.type"] == "NotFoundError"
    assert attrs["svc_async.attempts"] == 1
    assert span.status.status_code is StatusCode.ERROR
    assert (span.status.description or "").startswith("NotFoundError: ")


async def test_a_connection_failure_names_its_error_on_each_attempt(
    provider: TracerProvider, exporter: InMemorySpanExporter, no_backoff: Any
) -> None:
    from svc_async import ConnectError

    def handler(request: Request) -> Response:
        raise ConnectError("cannot connect")

    async with _client(handler, provider, retry=RetryPolicy(attempts=2)) as svc:
        with pytest.raises(ConnectError):
            await svc.seasons.list()

    (span,) = exporter.get_finished_spans()
    assert span.name == "svc_async seasons.list"
    attempts = _events(span, "svc_async.attempt")
    assert attempts == [
        {"svc_async.attempt": 1, "error.type": "ConnectError"},
        {"svc_async.attempt": 2, "error.type": "ConnectError"},
    ]
    assert "http.response.status_code" not in dict(span.attributes or {})


async def test_spans_name_each_sdk_call_and_nest_a_login_under_its_call(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    def handler(request: Request) -> Response:
        if request.url.path.endswith("/login"):
            return json_response({"accessToken": "at-1", "refreshToken": "rt-1"})
        if request.url.path.endswith("/season"):
            return json_response(load("get-seasons.response.json"))
        return json_response({"ok": True})

    async with _client(handler, provider, token=None, auth=ApiKeyAuth("key-id", SECRET)) as svc:
        await svc.seasons.list()
        await svc.request("GET", "/api/anything")

    spans = exporter.get_finished_spans()
    by_name = {s.name: s for s in spans}
    assert set(by_name) == {"svc_async auth.login", "svc_async seasons.list", "svc_async request"}
    login, seasons = by_name["svc_async auth.login"], by_name["svc_async seasons.list"]
    assert login.parent is not None and login.parent.span_id == seasons.context.span_id
    assert seasons.context.trace_id == login.context.trace_id


async def test_urls_are_redacted_and_no_header_or_secret_is_recorded(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    def handler(request: Request) -> Response:
        return json_response({"echo": SECRET}, 400)

    async with _client(handler, provider, token=SECRET) as svc:
        with pytest.raises(Exception, match="400"):
            await svc.request("GET", "/api/x?token=tok-xyz&sig=" + SECRET)

    (span,) = exporter.get_finished_spans()
    text = repr(span.to_json())
    # Not a hex-looking value: the span's random trace and span ids are hex.
    assert SECRET not in text and "tok-xyz" not in text
    assert "[REDACTED]" in dict(span.attributes or {})["url.full"]
    assert not any("header" in key for key in dict(span.attributes or {}))


def test_tracing_must_be_a_bool_or_a_tracer_provider() -> None:
    with pytest.raises(TypeError, match="tracing must be"):
        Client("https://api.example", token="t", tracing="yes")  # type: ignore[arg-type]


@pytest.mark.slow
def test_without_tracing_nothing_of_opentelemetry_is_imported() -> None:
    code = (
        "import sys, asyncio, svc_async\n"
        "from svc_async import Client, MockTransport, json_response\n"
        "async def main():\n"
        "    t = MockTransport(lambda r: json_response([]))\n"
        "    async with Client('https://a.example', token='t', transport=t) as svc:\n"
        "        await svc.seasons.list()\n"
        "asyncio.run(main())\n"
        "print(sorted(m for m in sys.modules if m.startswith(('opentelemetry', 'svc_async._pipeline.tracing'))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]"


def test_tracing_without_the_extra_says_which_extra_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry", None)  # as if it were not installed
    monkeypatch.delitem(sys.modules, "svc_async._pipeline.tracing", raising=False)
    with pytest.raises(ImportError, match=r"pip install 'svc-async\[otel\]'"):
        Client("https://a.example", token="t", tracing=True)


LOGGING_PAGE = Path(__file__).parents[2] / "docs" / "guides" / "logging.md"


def _python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```$", text, flags=re.MULTILINE | re.DOTALL)


async def _run_block(source: str) -> None:
    code = compile(source, str(LOGGING_PAGE), "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    result = eval(code, {"__name__": "__logging_page__"})
    if result is not None:
        await result


async def test_the_logging_page_shows_the_debug_line_it_documents(
    caplog: pytest.LogCaptureFixture,
) -> None:
    (block,) = [b for b in _python_blocks(LOGGING_PAGE.read_text()) if "basicConfig" in b]
    logger = logging.getLogger("svc_async")
    level = logger.level
    try:
        await _run_block(block)
    finally:
        logger.setLevel(level)
    shown = block.strip().splitlines()[-1].removeprefix("# ")
    level_name, name, message = shown.split(" ", 2)

    def any_id(text: str) -> str:  # each call's request id is its own
        return re.sub(r"\(request [0-9a-f]{12}-[0-9]+\)", "(request ID)", text)

    assert "(request ID)" in any_id(message)
    assert (level_name, name.rstrip(":"), any_id(message)) in [
        (r.levelname, r.name, any_id(r.getMessage())) for r in caplog.records
    ]


async def test_the_logging_page_tracing_example_runs() -> None:
    (block,) = [b for b in _python_blocks(LOGGING_PAGE.read_text()) if "tracing=" in b]
    await _run_block(block)
