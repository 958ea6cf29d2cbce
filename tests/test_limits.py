"""Response size limits: huge, endless and compressed-bomb bodies stop at the cap."""

from __future__ import annotations

import tracemalloc

import pytest
from aiohttp import web

from svc_async import AiohttpTransport, Client, ResponseTooLargeError

from .bombs import gzip_bomb
from .conftest import serve_app

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
