"""Hostile bodies: deep nesting, gzip downloads, error-body bombs, odd redirect schemes.

Every answer a server can send ends in data or an ``SvcError``; every body read into
memory stops at the one cap (``max_body_size``), whatever its status or path.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import tracemalloc
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
    ResponseDecodeError,
    ResponseTooLargeError,
    RetryPolicy,
    SvcError,
)
from svc_async.errors import RedirectError, ServerError

from ..bombs import gzip_bomb
from ..conftest import serve_app

MB = 1024 * 1024
BIG = "1234567890123456789"  # 19 digits: the exact-integer path of decode_json


def _deep(depth: int, leaf: str) -> bytes:
    """An object nested ``depth`` levels deep around ``leaf``."""
    return b'{"a":' * depth + leaf.encode() + b"}" * depth


def _deep_list(depth: int, leaf: str) -> bytes:
    return b"[" * depth + leaf.encode() + b"]" * depth


LEAVES = ["1", BIG, f'"{BIG}"']
DEPTHS = [1_000, 10_000, 100_000]


@pytest.mark.parametrize("depth", DEPTHS)
@pytest.mark.parametrize("leaf", LEAVES)
@pytest.mark.parametrize("status", [200, 400, 500])
async def test_deep_answers_end_in_an_svc_error(depth: int, leaf: str, status: int) -> None:
    for body in (_deep(depth, leaf), _deep_list(depth, leaf)):
        transport = MockTransport(lambda request, b=body: Response(status=status, content=b))
        policy = RetryPolicy(attempts=1)
        async with Client("https://api.example", token="t", transport=transport) as svc:
            with pytest.raises(SvcError) as info:
                await svc.jobs.get(1, retry=policy)
            if status == 200:
                assert isinstance(info.value, ResponseDecodeError)
            assert str(info.value) and repr(info.value)  # the message is made, no recursion
            await _data_or_svc_error(svc.request("GET", "/x", retry=policy))
            with pytest.raises(SvcError):
                await svc.entries.for_event(1, retry=policy)


async def _data_or_svc_error(call: Any) -> None:
    """Await ``call``: decoded data and an SvcError are both fine, nothing else is."""
    with contextlib.suppress(SvcError):
        await call


@pytest.mark.parametrize("depth", [900, 1_000, 1_020])
async def test_deep_numbers_within_orjson_s_limit_decode_or_refuse_cleanly(depth: int) -> None:
    """Up to orjson's depth, a 19-digit number is decoded exactly or refused as a decode error."""
    body = _deep_list(depth, BIG)
    transport = MockTransport(lambda request: Response(status=200, content=body))
    async with Client("https://api.example", token="t", transport=transport) as svc:
        try:
            data = await svc.request("GET", "/x", retry=RetryPolicy(attempts=1))
        except ResponseDecodeError as exc:
            assert "deep" in str(exc)
        else:
            for _ in range(depth):
                data = data[0]
            assert data == int(BIG)


async def test_deep_entries_answer_streamed_in_slices_ends_in_an_svc_error() -> None:
    """A big entries answer goes incremental; a deep element there is a decode error too."""
    element = _deep(10_000, BIG).decode()
    body = ("[" + ",".join([element] * 150) + "]").encode()  # over the 1 MiB threshold
    assert len(body) > MB
    transport = MockTransport(lambda request: Response(status=200, content=body))
    async with Client("https://api.example", token="t", transport=transport) as svc:
        with pytest.raises(ResponseDecodeError):
            await svc.entries.for_event(1, retry=RetryPolicy(attempts=1))


# -- item 5: one cap for every body on every path ----------------------------------------


def _bomb_app(status: int, counts: dict[str, int]) -> web.Application:
    bomb = gzip_bomb(64 * MB)  # about 64 KB on the wire, 8x the cap unpacked

    async def handler(request: web.Request) -> web.Response:
        counts["requests"] = counts.get("requests", 0) + 1
        return web.Response(
            status=status,
            body=bomb,
            headers={"Content-Type": "application/json", "Content-Encoding": "gzip"},
        )

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    return app


def _endless_app(status: int) -> web.Application:
    async def handler(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(status=status, headers={"Content-Type": "text/plain"})
        await response.prepare(request)
        for _ in range(4_000):  # 256 MB at most; the client stops far earlier
            try:
                await response.write(b" " * 65536)
            except (ConnectionResetError, RuntimeError):
                break
        return response

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    return app


async def _call(svc: Client, what: str, url: str, tmp_path: Path) -> Any:
    policy = RetryPolicy(attempts=1)
    if what == "entries":
        return await svc.entries.for_event(1, retry=policy)
    if what == "jobs.get":
        return await svc.jobs.get(1, retry=policy)
    return await svc.download(f"{url}/file.bin?X-Amz-Signature=s3cret", tmp_path / "file.bin")


@pytest.mark.slow
@pytest.mark.parametrize("what", ["entries", "jobs.get", "download"])
@pytest.mark.parametrize("status", [200, 404, 500])
async def test_gzip_bomb_stops_at_the_cap_for_every_status_and_path(
    what: str, status: int, tmp_path: Path
) -> None:
    if what == "download" and status == 200:
        pytest.skip("a download's 2xx body goes to disk, not memory (see the next test)")
    counts: dict[str, int] = {}
    cap = 8 * MB
    async with serve_app(_bomb_app(status, counts)) as url:
        transport = AiohttpTransport(max_body_size=cap)
        async with Client(url, token="t", transport=transport) as svc:
            tracemalloc.start()
            try:
                with pytest.raises(ResponseTooLargeError) as info:
                    await _call(svc, what, url, tmp_path)
                _, peak = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
    assert counts["requests"] == 1  # too large is not retried
    message = str(info.value)
    assert "max_body_size" in message and "http://127.0.0.1" in message
    assert "s3cret" not in message
    assert peak < 3 * cap, f"peak {peak / MB:.1f} MB under an {cap // MB} MB cap"


@pytest.mark.slow
@pytest.mark.parametrize("what", ["entries", "jobs.get", "download"])
async def test_endless_error_body_stops_at_the_cap(what: str, tmp_path: Path) -> None:
    cap = 4 * MB
    async with serve_app(_endless_app(500)) as url:
        transport = AiohttpTransport(max_body_size=cap)
        async with Client(url, token="t", transport=transport) as svc:
            with pytest.raises(ResponseTooLargeError):
                await _call(svc, what, url, tmp_path)


async def test_error_body_under_the_cap_is_kept_on_the_streamed_path() -> None:
    counts: dict[str, int] = {}

    async def handler(request: web.Request) -> web.Response:
        counts["n"] = counts.get("n", 0) + 1
        return web.json_response({"message": "boom"}, status=500)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    async with serve_app(app) as url:
        async with Client(url, token="t") as svc:
            with pytest.raises(ServerError) as info:
                await svc.entries.for_event(1, retry=RetryPolicy(attempts=1))
    assert info.value.body == {"message": "boom"}


# -- item 3: gzip-encoded downloads --------------------------------------------------------


def _gzip_app(payload: bytes, content_type: str) -> web.Application:
    encoded = gzip.compress(payload)

    async def handler(request: web.Request) -> web.Response:
        return web.Response(
            body=encoded,
            headers={"Content-Type": content_type, "Content-Encoding": "gzip"},
        )

    app = web.Application()
    app.router.add_get("/{name}", handler)
    return app


@pytest.mark.parametrize("content_type", ["audio/mpeg", "application/gzip"])
async def test_gzip_encoded_download_saves_the_decoded_body(
    content_type: str, tmp_path: Path
) -> None:
    payload = b"ID3" + b"\x00\x01mp3 frames " * 8_000  # 88,003 bytes, compresses well
    seen: list[tuple[int, int | None]] = []
    async with serve_app(_gzip_app(payload, content_type)) as url:
        async with Client(url, token="t") as svc:
            result = await svc.download(
                f"{url}/a.mp3", tmp_path / "a.mp3", progress=lambda d, t: seen.append((d, t))
            )
            buffer = io.BytesIO()
            await svc.download(f"{url}/a.mp3", buffer)
    assert (tmp_path / "a.mp3").read_bytes() == payload  # what requests and httpx save
    assert buffer.getvalue() == payload
    assert result.bytes_written == len(payload)
    assert result.content_type == content_type
    # The encoded Content-Length says nothing about the decoded size: total is unknown.
    assert {t for _, t in seen} == {None}
    assert seen[-1][0] == len(payload)


async def test_a_gz_file_served_without_content_encoding_is_saved_as_is(tmp_path: Path) -> None:
    encoded = gzip.compress(b"log line\n" * 1000)

    async def handler(request: web.Request) -> web.Response:
        return web.Response(body=encoded, headers={"Content-Type": "application/gzip"})

    app = web.Application()
    app.router.add_get("/{name}", handler)
    seen: list[int | None] = []
    async with serve_app(app) as url, Client(url, token="t") as svc:
        await svc.download(f"{url}/a.gz", tmp_path / "a.gz", progress=lambda d, t: seen.append(t))
    assert (tmp_path / "a.gz").read_bytes() == encoded
    assert seen[-1] == len(encoded)


# -- item 9: redirects to other schemes ----------------------------------------------------


@pytest.mark.parametrize("location", ["file:///etc/passwd", "ftp://files.example/x", "data:,x"])
async def test_download_redirect_to_another_scheme_is_an_svc_error(
    location: str, tmp_path: Path
) -> None:
    def handler(request: Request) -> Response:
        return Response(status=302, headers={"Location": location})

    async with Client("http://api.example", token="t", transport=MockTransport(handler)) as svc:
        with pytest.raises(RedirectError) as info:
            await svc.download("http://storage.example/x?sig=s3cret", tmp_path / "x")
    assert "s3cret" not in str(info.value)
    assert not isinstance(info.value, ValueError)
    assert not (tmp_path / "x").exists()


async def test_download_redirect_to_a_garbage_location_is_an_svc_error(tmp_path: Path) -> None:
    def handler(request: Request) -> Response:
        return Response(status=302, headers={"Location": "http://[::1"})

    async with Client("http://api.example", token="t", transport=MockTransport(handler)) as svc:
        with pytest.raises(RedirectError):
            await svc.download("http://storage.example/x", tmp_path / "x")


@pytest.mark.parametrize(
    "length", ["abc", "-5", "", "1e3", "1_0", "\u0661\u0660", "\uff11\uff10", "+10"]
)
async def test_a_content_length_that_is_no_count_says_nothing(length: str, tmp_path: Path) -> None:
    """A transport of one's own need not parse Content-Length as aiohttp's does: a value
    that is no count neither fails the call (it used to raise a bare ``ValueError`` from
    the body cap) nor sizes a download's progress; nor does one that ``int()`` reads but
    HTTP does not (``1_0``, Arabic-Indic or full-width digits, a sign), which sized it."""
    entries = b"[]"
    headers = {"Content-Type": "application/json", "Content-Length": length}
    transport = MockTransport(lambda request: Response(200, headers, entries))
    seen: list[tuple[int, int | None]] = []
    async with Client("https://api.example", token="t", transport=transport) as svc:
        assert await svc.entries.for_event(1) == []
        result = await svc.download(
            "https://files.example/a", tmp_path / "a", progress=lambda n, t: seen.append((n, t))
        )
    assert result.bytes_written == 2
    assert seen and all(total is None for _, total in seen)


@pytest.mark.parametrize(
    ("encoding", "total"), [("identity", 2), (" Identity ", 2), ("gzip", None)]
)
async def test_a_download_is_sized_by_content_length_unless_it_is_encoded(
    encoding: str, total: int | None, tmp_path: Path
) -> None:
    headers = {"Content-Length": "2", "Content-Encoding": encoding}
    transport = MockTransport(lambda request: Response(200, headers, b"ab"))
    seen: list[tuple[int, int | None]] = []
    async with Client("https://api.example", token="t", transport=transport) as svc:
        await svc.download(
            "https://files.example/a", tmp_path / "a", progress=lambda n, t: seen.append((n, t))
        )
    assert seen[0] == (0, total) and seen[-1] == (2, total)
