"""Streaming downloads of signed links: memory, expiry, interruption, credentials."""

from __future__ import annotations

import io
import tracemalloc
from pathlib import Path

import pytest
from aiohttp import web

from svc_async import Client, MockTransport, Request, Response, SignedURLExpired, TransportError
from svc_async.errors import NotFoundError

from .conftest import serve_app

MB = 1024 * 1024


def _storage(seen: list[dict[str, str]], size: int = 4 * MB) -> web.Application:
    block = b"\x5a" * (64 * 1024)

    async def blob(request: web.Request) -> web.StreamResponse:
        seen.append(dict(request.headers))
        if request.query.get("X-Amz-Expires") == "0":
            return web.Response(
                status=403,
                text="<Error><Code>AccessDenied</Code><Message>Request has expired</Message></Error>",
                content_type="application/xml",
            )
        response = web.StreamResponse(
            headers={"Content-Type": "audio/mpeg", "Content-Length": str(size)}
        )
        await response.prepare(request)
        sent = 0
        while sent < size:
            part = block[: min(len(block), size - sent)]
            if request.query.get("cut") and sent >= size // 2:
                assert request.transport is not None
                request.transport.close()
                return response
            await response.write(part)
            sent += len(part)
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_get("/rec/{name}", blob)
    return app


async def test_streams_in_constant_memory_without_auth_to_storage(tmp_path: Path) -> None:
    seen: list[dict[str, str]] = []
    size = 200 * MB
    async with serve_app(_storage(seen, size)) as storage:
        async with Client("http://127.0.0.1:9", token="api-secret-token") as svc:
            tracemalloc.start()
            try:
                result = await svc.download(
                    f"{storage}/rec/a.mp3?X-Amz-Signature=abc&X-Amz-Expires=60", tmp_path / "a.mp3"
                )
                _, peak = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
    assert result.bytes_written == size
    assert (tmp_path / "a.mp3").stat().st_size == size
    assert peak < 16 * MB, f"peak {peak / MB:.1f} MB for a {size / MB:.0f} MB body"
    assert "Authorization" not in seen[0]
    assert "abc" not in result.url  # the signature is redacted in what we report
    assert list(tmp_path.iterdir()) == [tmp_path / "a.mp3"]


async def test_expired_link_raises_signed_url_expired(tmp_path: Path) -> None:
    async with serve_app(_storage([])) as storage:
        async with Client("http://127.0.0.1:9", token="t") as svc:
            with pytest.raises(SignedURLExpired) as info:
                await svc.download(
                    f"{storage}/rec/a.mp3?X-Amz-Signature=s1gnature&X-Amz-Expires=0",
                    tmp_path / "a.mp3",
                )
    assert "read the resource again" in str(info.value)
    assert "s1gnature" not in str(info.value)
    assert not (tmp_path / "a.mp3").exists()


async def test_interrupted_download_leaves_no_partial_file(tmp_path: Path) -> None:
    async with serve_app(_storage([], 4 * MB)) as storage:
        async with Client("http://127.0.0.1:9", token="t") as svc:
            with pytest.raises(TransportError):
                await svc.download(f"{storage}/rec/a.mp3?cut=1", tmp_path / "a.mp3")
    assert list(tmp_path.iterdir()) == []


async def test_auth_goes_to_the_api_origin_but_not_across_a_redirect(tmp_path: Path) -> None:
    storage_seen: list[dict[str, str]] = []
    api_seen: list[dict[str, str]] = []
    async with serve_app(_storage(storage_seen, 1000)) as storage:

        async def redirect(request: web.Request) -> web.Response:
            api_seen.append(dict(request.headers))
            raise web.HTTPTemporaryRedirect(f"{storage}/rec/b.mp3")

        api_app = web.Application()
        api_app.router.add_get("/api/files/download", redirect)
        async with serve_app(api_app) as api:
            async with Client(api, token="api-secret-token") as svc:
                buffer = io.BytesIO()
                result = await svc.download(f"{api}/api/files/download?t=jwt", buffer)
    assert api_seen[0]["Authorization"] == "Bearer api-secret-token"
    assert "Authorization" not in storage_seen[0]
    assert result.bytes_written == 1000
    assert buffer.getvalue() == b"\x5a" * 1000


async def test_https_to_http_redirect_is_refused(tmp_path: Path) -> None:
    def handler(request: Request) -> Response:
        return Response(status=302, headers={"Location": "http://evil.example/x"})

    async with Client("https://api.example", token="t", transport=MockTransport(handler)) as svc:
        with pytest.raises(TransportError, match="https to http"):
            await svc.download("https://storage.example/x?sig=1", tmp_path / "x")
    assert not (tmp_path / "x").exists()


async def test_progress_and_file_object_with_mock_transport() -> None:
    body = bytes(range(256)) * 100
    calls: list[tuple[int, int | None]] = []

    def handler(request: Request) -> Response:
        return Response(status=200, headers={"Content-Length": str(len(body))}, content=body)

    async def progress(done: int, total: int | None) -> None:
        calls.append((done, total))

    async with Client("https://api.example", token="t", transport=MockTransport(handler)) as svc:
        out = io.BytesIO()
        await svc.download("https://storage.example/x", out, progress=progress)
    assert out.getvalue() == body
    assert calls[0] == (0, len(body))
    assert calls[-1] == (len(body), len(body))


async def test_other_errors_and_bad_arguments(tmp_path: Path) -> None:
    transport = MockTransport(lambda request: Response(status=404))
    async with Client("https://api.example", token="t", transport=transport) as svc:
        with pytest.raises(NotFoundError):
            await svc.download("https://storage.example/x", tmp_path / "x")
        with pytest.raises(ValueError, match="absolute"):
            await svc.download("/relative", tmp_path / "x")
        with pytest.raises(TypeError):
            await svc.download("https://storage.example/x", 42)  # type: ignore[arg-type]
    assert len(transport.requests) == 1
