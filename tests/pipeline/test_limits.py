"""Response size limits: huge, endless and compressed-bomb bodies stop at the cap."""

from __future__ import annotations

import re
import tracemalloc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from svc_async import (
    AiohttpTransport,
    Client,
    MockTransport,
    Request,
    Response,
    ResponseTooLargeError,
    json_response,
)
from svc_async._pipeline import incremental as _incremental
from svc_async.testing import FakeService

from ..bombs import gzip_bomb
from ..conftest import serve_app

MB = 1024 * 1024


def _app() -> tuple[web.Application, dict[str, int]]:
    counts = {"requests": 0}

    big_body = b"[" + b"1," * (3 * MB) + b"1]"  # built before memory is traced

    async def big(request: web.Request) -> web.Response:
        counts["requests"] += 1
        return web.Response(body=big_body, content_type="application/json")

    async def endless(request: web.Request) -> web.StreamResponse:
        counts["requests"] += 1
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        chunk = b" " * 65536
        for _ in range(10_000):  # bounded: 640 MB at most, the client stops far earlier
            try:
                await response.write(chunk)
            except (ConnectionResetError, RuntimeError):
                break
        return response

    bomb_body = gzip_bomb(64 * MB)  # 16x the cap unpacked

    async def bomb(request: web.Request) -> web.Response:
        counts["requests"] += 1
        return web.Response(
            body=bomb_body,
            headers={"Content-Type": "application/json", "Content-Encoding": "gzip"},
        )

    app = web.Application()
    app.router.add_get("/api/public/v1/season", big)
    app.router.add_get("/api/public/v1/verification-job/1", endless)
    app.router.add_get("/api/public/v1/verification-job/2", bomb)
    return app, counts


@pytest.mark.slow
@pytest.mark.parametrize("path", ["season", "endless", "bomb"])
async def test_body_over_the_cap_raises_and_is_not_retried(path: str) -> None:
    app, counts = _app()
    cap = 4 * MB
    async with serve_app(app) as url:
        transport = AiohttpTransport(max_body_size=cap)
        async with Client(url, token="t", transport=transport) as svc:
            tracemalloc.start()
            try:
                with pytest.raises(ResponseTooLargeError):
                    if path == "season":
                        await svc.seasons.list()
                    else:
                        await svc.jobs.get(1 if path == "endless" else 2)
                _, peak = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
        await transport.aclose()
    assert counts["requests"] == 1
    if path != "season":
        # A declared length over the cap is refused before reading a byte; the streamed
        # and compressed cases are read, and must stop at the cap. (The in-process
        # server's own buffers count too, so this bounds the client generously.)
        assert peak < 2 * cap, f"peak {peak / MB:.1f} MB with a {cap / MB:.0f} MB cap"


# ---------------------------------------------------------------- one cap, every transport

CAP = 2000
_TOO_LARGE = re.compile(
    r"^response body( of \d+ bytes)? of POST \S+/api/public/v1/season/1/entries"
    rf" exceeds max_body_size \({CAP} bytes\)$"
)


@asynccontextmanager
async def _client(kind: str, fake: FakeService, cap: int) -> AsyncIterator[Client]:
    """A client over ``kind`` of transport, each with the body cap ``cap``."""
    token = FakeService.DEFAULT_TOKEN
    if kind == "aiohttp":
        async with fake.serve() as url:
            transport: Any = AiohttpTransport(max_body_size=cap)
            async with Client(url, token=token, transport=transport) as svc:
                yield svc
        return
    if kind == "in-process":
        transport = fake.transport(max_body_size=cap)
    else:  # the fake's answers, handed over by a MockTransport handler

        async def handler(request: Request) -> Response:
            outcome = await fake.handle(
                request.method,
                request.url.path,
                headers=dict(request.headers),
                body=request.content or b"",
            )
            return Response(outcome.status, outcome.headers, outcome.body)

        transport = MockTransport(handler, max_body_size=cap)
    async with Client("http://fake.invalid", token=token, transport=transport) as svc:
        yield svc


@pytest.mark.parametrize("threshold", [1, 1 << 30], ids=["streamed", "one-shot"])
@pytest.mark.parametrize("kind", ["aiohttp", "in-process", "mock"])
async def test_every_transport_applies_the_body_cap_as_aiohttps_does(
    kind: str, threshold: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same oversized answer raises the same error through each transport, on the
    streamed (sliced) and the one-shot path; within the cap it is read whole."""
    monkeypatch.setattr(_incremental, "STREAM_THRESHOLD", threshold)
    async with FakeService(seed=1) as fake:
        async with _client(kind, fake, CAP) as svc:
            with pytest.raises(ResponseTooLargeError) as info:
                await svc.entries.for_season(1)
        assert _TOO_LARGE.match(str(info.value)), str(info.value)
        assert fake.count("POST", "/api/public/v1/season/{id}/entries") == 1  # not retried
        async with _client(kind, fake, 4 * MB) as svc:
            entries = await svc.entries.for_season(1)
    assert len(entries) > 10


@pytest.mark.parametrize("kind", ["in-process", "mock"])
def test_the_cap_must_be_positive(kind: str) -> None:
    with pytest.raises(ValueError, match="max_body_size must be positive"):
        if kind == "mock":
            MockTransport(lambda request: json_response([]), max_body_size=0)
        else:
            FakeService().transport(max_body_size=0)


async def test_a_download_to_disk_is_not_capped(tmp_path: Path) -> None:
    """Only bodies held in memory are capped: a download streamed to disk is not."""
    async with FakeService(seed=1, file_size=64 * 1024) as fake:
        entry = next(e for e in fake.state.entries.values() if e.recording is not None)
        link = fake.entry(entry.id)["soundRecording"]["downloadURL"]
        transport = fake.transport(max_body_size=1024)
        async with Client(
            "http://fake.invalid", token=fake.DEFAULT_TOKEN, transport=transport
        ) as svc:
            done = await svc.download(link, tmp_path / "mix.mp3")
    assert done.bytes_written == 64 * 1024 == (tmp_path / "mix.mp3").stat().st_size
    mock = MockTransport(lambda request: Response(200, {}, b"x" * 5000), max_body_size=1024)
    async with Client("https://verify.example", token="t", transport=mock) as svc:
        done = await svc.download("https://files.example/a.mp3", tmp_path / "b.mp3")
        with pytest.raises(ResponseTooLargeError):
            await svc.request("GET", "/api/public/v1/season")
    assert done.bytes_written == 5000
