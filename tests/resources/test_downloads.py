"""Streaming downloads of signed links: memory, expiry, interruption, credentials."""

from __future__ import annotations

import asyncio
import io
import itertools
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from svc_async import (
    ApiKeyAuth,
    Client,
    MockTransport,
    Pacer,
    Request,
    Response,
    RetryPolicy,
    SignedURLExpired,
    Timeout,
    TransportError,
    json_response,
)
from svc_async.errors import NotFoundError, ServerError

from ..conftest import serve_app

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


@pytest.mark.slow
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


@pytest.mark.usefixtures("no_backoff")
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


# -- one send path: each hop of a download is a call through the pipeline ------------------


def _flaky_storage(
    size: int, *, cut: int = 0, fail: int = 0, seen: list[str] | None = None
) -> tuple[web.Application, dict[str, Any]]:
    """Storage answering ``fail`` 503s, then cutting ``cut`` bodies halfway, then serving."""
    body = bytes(range(256)) * (size // 256)
    count: dict[str, Any] = {"n": 0, "body": body}

    async def blob(request: web.Request) -> web.StreamResponse:
        count["n"] += 1
        if seen is not None:
            seen.append(request.headers.get("Accept", ""))
        if count["n"] <= fail:
            return web.Response(status=503, text="busy")
        response = web.StreamResponse(
            headers={"Content-Type": "audio/mpeg", "Content-Length": str(len(body))}
        )
        await response.prepare(request)
        if count["n"] <= fail + cut:
            await response.write(body[: len(body) // 2])
            assert request.transport is not None
            request.transport.close()
            return response
        await response.write(body)
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_get("/rec/{name}", blob)
    return app, count


@pytest.mark.usefixtures("no_backoff")
async def test_a_cut_body_is_retried_and_the_file_starts_over(tmp_path: Path) -> None:
    app, count = _flaky_storage(256 * 1024, cut=2, fail=1)
    progress: list[tuple[int, int | None]] = []
    async with serve_app(app) as storage, Client("http://127.0.0.1:9", token="t") as svc:
        result = await svc.download(
            f"{storage}/rec/a.mp3?sig=1",
            tmp_path / "a.mp3",
            progress=lambda d, t: progress.append((d, t)),
        )
    assert count["n"] == 4  # a 503, two cut bodies, then the whole one
    assert (tmp_path / "a.mp3").read_bytes() == count["body"]
    assert result.bytes_written == len(count["body"])
    assert progress[-1] == (len(count["body"]), len(count["body"]))
    assert [d for d, _ in progress].count(0) == 3  # each body read starts the count over
    assert list(tmp_path.iterdir()) == [tmp_path / "a.mp3"]


@pytest.mark.usefixtures("no_backoff")
async def test_a_seekable_file_object_starts_over_from_where_it_was(tmp_path: Path) -> None:
    app, count = _flaky_storage(64 * 1024, cut=1)
    buffer = io.BytesIO(b"header:")
    buffer.seek(0, io.SEEK_END)
    async with serve_app(app) as storage, Client("http://127.0.0.1:9", token="t") as svc:
        await svc.download(f"{storage}/rec/a.mp3", buffer)
    assert buffer.getvalue() == b"header:" + count["body"]


class _Pipe(io.RawIOBase):
    """A write-only, unseekable sink (a pipe, a socket)."""

    def __init__(self) -> None:
        self.data = bytearray()

    def writable(self) -> bool:
        return True

    def write(self, b: Any) -> int:
        self.data += bytes(b)
        return len(b)


@pytest.mark.usefixtures("no_backoff")
async def test_an_unseekable_sink_is_retried_only_before_anything_was_sent() -> None:
    app, count = _flaky_storage(64 * 1024, cut=1, fail=1)
    pipe = _Pipe()
    async with serve_app(app) as storage, Client("http://127.0.0.1:9", token="t") as svc:
        with pytest.raises(TransportError):
            await svc.download(f"{storage}/rec/a.mp3", pipe)  # type: ignore[arg-type]
    assert count["n"] == 2  # the 503 was retried; the cut body was not


@pytest.mark.usefixtures("no_backoff")
async def test_a_download_asks_for_any_type_and_server_errors_are_retried_then_raised(
    tmp_path: Path,
) -> None:
    seen: list[str] = []
    app, count = _flaky_storage(1024, fail=10, seen=seen)
    policy = RetryPolicy(attempts=3)
    async with serve_app(app) as storage:
        async with Client("http://127.0.0.1:9", token="t", retry=policy) as svc:
            with pytest.raises(ServerError) as info:
                await svc.download(f"{storage}/rec/a.mp3", tmp_path / "a.mp3")
    assert count["n"] == 3
    assert seen == ["*/*"] * 3
    assert info.value.body == "busy"
    assert list(tmp_path.iterdir()) == []


async def test_a_401_from_the_api_origin_renews_the_token_once() -> None:
    tokens: list[str | None] = []

    def handler(request: Request) -> Response:
        if request.url.path == "/api/auth/api-key/login":
            return json_response({"accessToken": f"tok{len(tokens)}", "refreshToken": "r"})
        if request.url.path == "/api/auth/access-token/refresh":
            return json_response({"accessToken": "fresh", "refreshToken": "r2"})
        tokens.append(request.headers.get("Authorization"))
        if request.headers.get("Authorization") != "Bearer fresh":
            return Response(status=401)
        return Response(status=200, headers={"Content-Type": "text/csv"}, content=b"a,b\n")

    auth = ApiKeyAuth("kid", "secret-value")
    transport = MockTransport(handler)
    async with Client("https://api.example", auth=auth, transport=transport) as svc:
        out = io.BytesIO()
        result = await svc.download("https://api.example/api/files/report.csv", out)
    assert out.getvalue() == b"a,b\n"
    assert tokens == ["Bearer tok0", "Bearer fresh"]
    assert result.content_type == "text/csv"


async def test_storage_answers_are_not_paced_or_observed_but_api_answers_are() -> None:
    def handler(request: Request) -> Response:
        headers = {"Date": "Wed, 01 Jan 2031 00:00:00 GMT", "x-ratelimit-remaining": "0"}
        if request.url.host == "api.example":
            headers = {"Date": "Tue, 01 Jan 2030 00:00:00 GMT", "x-ratelimit-remaining": "7"}
            if request.url.path == "/api/files/x":
                return Response(status=302, headers={**headers, "Location": "https://s.example/x"})
        return Response(status=200, headers=headers, content=b"data")

    class CountingPacer(Pacer):
        admitted = 0

        def admit(self, now: float | None = None) -> bool:
            CountingPacer.admitted += 1
            return super().admit(now)

    pacer = CountingPacer()
    transport = MockTransport(handler)
    async with Client(
        "https://api.example", token="t", transport=transport, rate_limit=pacer
    ) as svc:
        await svc.download("https://s.example/x", io.BytesIO())
        assert svc.server_date is None  # a storage host's clock is not the service's
        assert svc.rate_limit is None
        assert CountingPacer.admitted == 0  # nor does it spend the service's budget
        await svc.download("https://api.example/api/files/x", io.BytesIO())
        assert svc.server_date == "Tue, 01 Jan 2030 00:00:00 GMT"
        assert svc.rate_limit is not None and svc.rate_limit.remaining == 7
        assert CountingPacer.admitted == 1  # the API hop; the storage hop it led to is not


async def test_each_exchange_gets_the_download_s_limits() -> None:
    limits: list[Timeout | None] = []

    def handler(request: Request) -> Response:
        limits.append(request.timeout)
        return Response(status=200, content=b"x")

    async with Client("https://api.example", token="t", transport=MockTransport(handler)) as svc:
        await svc.download("https://s.example/x", io.BytesIO())
        await svc.download("https://s.example/x", io.BytesIO(), attempt_timeout=Timeout(total=5.0))
    assert limits == [Timeout(total=None, connect=10.0, read=60.0), Timeout(total=5.0)]


@pytest.mark.looptime
async def test_a_download_s_retries_end_by_its_timeout() -> None:
    """Retries and their waits run under the download's deadline (virtual time)."""
    sent: list[float] = []

    def handler(request: Request) -> Response:
        sent.append(asyncio.get_running_loop().time())
        return Response(status=503, headers={"Retry-After": "2"}, content=b"busy")

    policy = RetryPolicy(attempts=10)
    transport = MockTransport(handler)
    async with Client("https://api.example", token="t", transport=transport, retry=policy) as svc:
        start = asyncio.get_running_loop().time()
        with pytest.raises(ServerError):
            await svc.download("https://s.example/x", io.BytesIO(), timeout=5)
        elapsed = asyncio.get_running_loop().time() - start
    # Each retry waits the 2 s asked plus the jittered backoff (at most 0.5 s, then 1 s);
    # no attempt starts, and no wait ends, past the 5 s deadline.
    gaps = [later - earlier for earlier, later in itertools.pairwise(sent)]
    assert 2 <= len(sent) <= 3
    assert all(2.0 <= gap <= 2.0 + policy.ceiling(n) for n, gap in enumerate(gaps, 1))
    assert sent[-1] - start < 5
    assert elapsed < 5
