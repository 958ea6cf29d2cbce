"""Both real transports keep the same promises, checked by the same tests on real sockets.

Every test taking ``kind`` runs once with ``AiohttpTransport`` and once with
``HttpxTransport`` against loopback servers: statuses and headers, streamed bodies, the
body cap, cut-offs at the deadline, connection errors as the same ``SvcError``s,
redirects never followed, ``aclose``; then proxies (a real forward proxy, ``pproxy``,
in a subprocess, and a refusing one) and HTTP/2 over TLS (``hypercorn`` in a thread,
with a certificate made here).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime as dt
import gzip
import ipaddress
import json
import socket
import ssl
import subprocess
import sys
import threading
import time
import tracemalloc
import zlib
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yarl
from aiohttp import web

from svc_async import (
    AiohttpTransport,
    Client,
    ConnectError,
    ConnectionLostError,
    HeaderAuth,
    HttpxTransport,
    LocalProtocolError,
    MockTransport,
    ProxyError,
    Request,
    RequestTimeout,
    Response,
    ResponseTooLargeError,
    RetryPolicy,
    Timeout,
    Transport,
    TransportError,
)
from svc_async._pipeline.decide import Action, decide, outcome_of
from svc_async._transports.base import StreamingTransport
from svc_async._transports.proxy import Proxies, bypassed
from svc_async.retry import RetryBudget
from svc_async.testing import FakeService

from ..bombs import gzip_bomb
from ..conftest import serve_app

MB = 1024 * 1024
KINDS = ["aiohttp", "httpx"]
CAP = 1 * MB
PROXY_USER = ("proxy-user", "proxy-s3cret")


def make(kind: str, **options: Any) -> Any:
    """A transport of ``kind`` (no proxy from the environment unless asked for)."""
    options.setdefault("trust_env", False)
    if kind == "aiohttp":
        return AiohttpTransport(**options)
    return HttpxTransport(**options)


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@contextlib.asynccontextmanager
async def opened(kind: str, **options: Any) -> AsyncIterator[Any]:
    transport = make(kind, **options)
    try:
        async with asyncio.timeout(20):  # a hang fails the test, not CI
            yield transport
    finally:
        await transport.aclose()


def get(url: str, total: float | None = 5.0, **kw: Any) -> Request:
    return Request(
        "GET", yarl.URL(url), {"User-Agent": "conformance"}, None, Timeout(total=total, **kw)
    )


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# ------------------------------------------------------------------ the service


def service_app(hits: dict[str, int]) -> web.Application:
    """Every route the tests need; ``hits`` counts requests per path."""
    release = asyncio.Event()
    big = b"x" * (3 * MB)

    @web.middleware
    async def count(request: web.Request, handler: Any) -> web.StreamResponse:
        hits[request.path] = hits.get(request.path, 0) + 1
        response: web.StreamResponse = await handler(request)
        return response

    async def status(request: web.Request) -> web.Response:
        code = int(request.match_info["code"])
        response = web.Response(status=code, body=b"" if code == 204 else b'{"code":%d}' % code)
        response.headers.add("X-Multi", "one")
        response.headers.add("X-Multi", "two")
        response.headers["X-Name"] = "Zoë"
        return response

    async def echo(request: web.Request) -> web.Response:
        return web.json_response(
            {
                "method": request.method,
                "body": (await request.read()).decode(),
                "custom": request.headers.get("X-Custom"),
                "proxy_auth": request.headers.get("Proxy-Authorization"),
                "encodings": request.headers.get("Accept-Encoding", ""),
            }
        )

    async def gzipped(_: web.Request) -> web.Response:
        body = gzip.compress(json.dumps({"zipped": True, "pad": "z" * 5000}).encode())
        return web.Response(body=body, headers={"Content-Encoding": "gzip"})

    async def declared(_: web.Request) -> web.Response:
        return web.Response(body=big)

    async def streamed(request: web.Request) -> web.StreamResponse:
        size = int(request.query.get("size", str(MB)))
        response = web.StreamResponse()
        await response.prepare(request)
        sent = 0
        while sent < size:
            piece = min(100_000, size - sent)
            await response.write(bytes([sent % 251]) * piece)
            sent += piece
        await response.write_eof()
        return response

    async def bomb(_: web.Request) -> web.Response:
        return web.Response(body=gzip_bomb(16 * MB), headers={"Content-Encoding": "gzip"})

    async def stall(_: web.Request) -> web.Response:
        await release.wait()
        return web.json_response([])

    async def drip(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        response.content_length = 4 + 80 * 3 + 1
        await response.prepare(request)
        await response.write(b'["x"')
        for _ in range(80):
            await asyncio.sleep(0.05)
            await response.write(b',""')
        await response.write(b"]")
        return response

    async def redirect(_: web.Request) -> web.Response:
        raise web.HTTPFound("/target")

    async def target(_: web.Request) -> web.Response:
        return web.json_response({"followed": True})

    async def on_cleanup(_: web.Application) -> None:
        release.set()

    app = web.Application(middlewares=[count])
    app.router.add_route("*", "/status/{code}", status)
    app.router.add_route("*", "/echo", echo)
    app.router.add_get("/gzip", gzipped)
    app.router.add_get("/declared", declared)
    app.router.add_get("/streamed", streamed)
    app.router.add_get("/bomb", bomb)
    app.router.add_get("/stall", stall)
    app.router.add_get("/drip", drip)
    app.router.add_get("/redirect", redirect)
    app.router.add_get("/target", target)
    app.on_shutdown.append(on_cleanup)
    return app


@pytest.fixture
async def service() -> AsyncIterator[tuple[str, dict[str, int]]]:
    hits: dict[str, int] = {}
    async with serve_app(service_app(hits)) as url:
        yield url, hits


@contextlib.asynccontextmanager
async def raw_server(answer: bytes) -> AsyncIterator[tuple[int, list[bytes]]]:
    """A server that reads one request head, writes ``answer`` and closes; yields its
    port and the request heads it read."""
    heads: list[bytes] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            heads.append(await reader.readuntil(b"\r\n\r\n"))
            writer.write(answer)
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1], heads
    finally:
        server.close()
        await server.wait_closed()


# ------------------------------------------------------------------ statuses and headers


async def test_both_are_streaming_transports_that_enforce_the_timeout(kind: str) -> None:
    async with opened(kind) as transport:
        assert isinstance(transport, Transport) and isinstance(transport, StreamingTransport)
        assert transport.enforces_timeout is True
        assert "s3cret" not in repr(transport)


async def test_statuses_bodies_and_headers_come_back_as_sent(
    kind: str, service: tuple[str, dict[str, int]]
) -> None:
    url, _ = service
    async with opened(kind) as transport:
        for code in (200, 201, 204, 404, 409, 500, 503):
            response = await transport.send(get(f"{url}/status/{code}"))
            assert response.status == code
            assert response.content == (b"" if code == 204 else b'{"code":%d}' % code)
            assert response.headers.getall("x-multi") == ["one", "two"]
            assert response.headers["X-NAME"] == "Zoë"
        body = b'{"a": 1}'
        sent = Request("PUT", yarl.URL(f"{url}/echo"), {"X-Custom": "yes"}, body, Timeout())
        echoed = (await transport.send(sent)).json()
        assert echoed == {
            "method": "PUT",
            "body": '{"a": 1}',
            "custom": "yes",
            "proxy_auth": None,
            "encodings": echoed["encodings"],
        }
        assert "gzip" in echoed["encodings"]
        zipped = await transport.send(get(f"{url}/gzip"))
        assert zipped.json()["zipped"] is True  # decoded
        assert zipped.headers["Content-Encoding"] == "gzip"  # and said so, as sent


async def test_a_streamed_body_comes_in_chunks_of_at_most_the_size_asked(
    kind: str, service: tuple[str, dict[str, int]]
) -> None:
    url, _ = service
    async with opened(kind) as transport, transport.stream(get(f"{url}/streamed")) as stream:
        assert stream.status == 200
        chunks = [chunk async for chunk in stream.iter_chunks(65536)]
    assert max(map(len, chunks)) <= 65536
    expected = b"".join(bytes([s % 251]) * min(100_000, MB - s) for s in range(0, MB, 100_000))
    assert b"".join(chunks) == expected


async def test_redirects_come_back_as_responses_and_are_never_followed(
    kind: str, service: tuple[str, dict[str, int]]
) -> None:
    url, hits = service
    async with opened(kind) as transport:
        response = await transport.send(get(f"{url}/redirect"))
        async with transport.stream(get(f"{url}/redirect")) as stream:
            streamed = stream.status
    assert response.status == streamed == 302
    assert response.headers["Location"] == "/target"
    assert "/target" not in hits


# ------------------------------------------------------------------ the body cap


async def test_a_declared_body_over_the_cap_is_refused_before_it_is_read(
    kind: str, service: tuple[str, dict[str, int]]
) -> None:
    url, _ = service
    async with opened(kind, max_body_size=CAP) as transport:
        with pytest.raises(ResponseTooLargeError) as caught:
            await transport.send(get(f"{url}/declared?sig=s3cret"))
        async with transport.stream(get(f"{url}/declared")) as stream:
            with pytest.raises(ResponseTooLargeError):
                _ = [chunk async for chunk in stream.iter_chunks(65536)]
            # a download to disk lifts the cap
        async with transport.stream(get(f"{url}/declared")) as stream:
            whole = [chunk async for chunk in stream.iter_chunks(65536, capped=False)]
        assert (await transport.send(get(f"{url}/status/200"))).status == 200  # still works
    assert str(caught.value) == (
        f"response body of {3 * MB} bytes of GET {url}/declared?sig=[REDACTED] exceeds"
        f" max_body_size ({CAP} bytes)"
    )
    assert sum(map(len, whole)) == 3 * MB


async def test_an_undeclared_body_stops_at_the_cap_as_it_arrives(
    kind: str, service: tuple[str, dict[str, int]]
) -> None:
    url, _ = service
    async with opened(kind, max_body_size=CAP) as transport:
        with pytest.raises(ResponseTooLargeError) as caught:
            await transport.send(get(f"{url}/streamed?size={3 * MB}"))
    assert str(caught.value).startswith(f"response body of GET {url}/streamed")


async def test_a_gzip_bomb_stops_at_the_cap_without_unpacking_whole(
    kind: str, service: tuple[str, dict[str, int]]
) -> None:
    url, _ = service
    gzip_bomb(16 * MB)  # built before measuring
    async with opened(kind, max_body_size=CAP) as transport:
        await transport.send(get(f"{url}/status/200"))  # the pool and its TLS context made
        tracemalloc.start()
        try:
            with pytest.raises(ResponseTooLargeError):
                await transport.send(get(f"{url}/bomb"))
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert peak < 4 * CAP, f"peak {peak / MB:.1f} MB under a {CAP // MB} MB cap"


# ------------------------------------------------------------------ cut-offs


async def test_a_stalled_send_and_a_dripping_body_are_cut_at_the_total(
    kind: str, service: tuple[str, dict[str, int]]
) -> None:
    url, _ = service
    loop = asyncio.get_running_loop()
    async with opened(kind) as transport:
        for path, total in (("/stall?token=s3cret", 0.2), ("/drip", 0.3)):
            start = loop.time()
            with pytest.raises(RequestTimeout) as caught:
                await transport.send(get(url + path, total))
            assert total <= loop.time() - start < total + 1.5
            assert str(caught.value).startswith("timeout on GET") and "s3cret" not in str(
                caught.value
            )
            assert str(caught.value).endswith(f"after {total:g}s")
        start = loop.time()
        with pytest.raises(RequestTimeout):  # a stream's total covers reading its body
            async with transport.stream(get(f"{url}/drip", 0.3)) as stream:
                _ = [chunk async for chunk in stream.iter_chunks(1024)]
        assert 0.3 <= loop.time() - start < 1.8
        task = asyncio.create_task(transport.send(get(f"{url}/stall", 30)))
        await asyncio.sleep(0.1)
        task.cancel()  # a cancellation stays one
        with pytest.raises(asyncio.CancelledError):
            await task
        assert len(transport._cutoffs) == 0
        assert (await transport.send(get(f"{url}/status/200"))).status == 200


async def test_an_error_of_the_callers_inside_a_stream_stays_the_callers(
    kind: str, service: tuple[str, dict[str, int]]
) -> None:
    url, _ = service
    async with opened(kind) as transport:
        with pytest.raises(ValueError, match="the caller's own"):
            async with transport.stream(get(f"{url}/streamed", 5)) as stream:
                assert stream.status == 200
                raise ValueError("the caller's own")
        assert len(transport._cutoffs) == 0  # every stream's cut disarmed
        async with transport.stream(get(f"{url}/status/200", 5)) as stream:
            assert stream.status == 200


async def test_a_read_timeout_is_a_request_timeout(
    kind: str, service: tuple[str, dict[str, int]]
) -> None:
    url, _ = service
    async with opened(kind) as transport:
        with pytest.raises(RequestTimeout) as caught:
            await transport.send(get(f"{url}/stall", 10, read=0.2))
    assert str(caught.value) == f"timeout on GET {url}/stall"


# ------------------------------------------------------------------ connection errors


async def test_a_refused_connection_is_the_same_connect_error(kind: str) -> None:
    port = closed_port()
    async with opened(kind) as transport:
        with pytest.raises(ConnectError) as caught:
            await transport.send(get(f"http://127.0.0.1:{port}/api/orgs/me?token=s3cret"))
        with pytest.raises(ConnectError):
            async with transport.stream(get(f"http://127.0.0.1:{port}/file")):
                pass
    assert type(caught.value) is ConnectError and caught.value.maybe_sent is False
    assert str(caught.value) == (
        f"cannot connect to http://127.0.0.1:{port}: connection refused (GET /api/orgs/me)"
    )


@pytest.mark.parametrize(
    "answer",
    [b"", b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten.."],
    ids=["no answer", "body cut short"],
)
async def test_a_connection_that_breaks_is_connection_lost(kind: str, answer: bytes) -> None:
    async with raw_server(answer) as (port, _), opened(kind) as transport:
        with pytest.raises(ConnectionLostError) as caught:
            await transport.send(get(f"http://127.0.0.1:{port}/x?sig=s3cret"))
    assert str(caught.value).startswith(f"connection lost during GET http://127.0.0.1:{port}/x")
    assert "s3cret" not in str(caught.value)


ECHOES = {
    "header line": b"HTTP/1.1 200 OK\r\nX-Echo %s\r\nContent-Length: 0\r\n\r\n",
    "header value": b"HTTP/1.1 200 OK\r\nX-Echo: %s\x00\r\nContent-Length: 0\r\n\r\n",
    "status line": b"HTTP/1.1 2%s OK\r\nContent-Length: 0\r\n\r\n",
}


@pytest.mark.parametrize("echoed", ["key", "token", "signature"])
@pytest.mark.parametrize("where", list(ECHOES))
async def test_a_server_echoing_a_secret_in_a_line_it_garbles_never_shows_it(
    kind: str, where: str, echoed: str
) -> None:
    """The HTTP libraries quote the line they cannot parse: a server (or middlebox) that
    echoes the request's API key, bearer token or signed URL's signature in one had it in
    the ``ConnectionLostError``."""
    secret = {"key": "s3cret-key", "token": "s3cret-token", "signature": "s3cret-sig"}[echoed]
    async with raw_server(ECHOES[where] % secret.encode()) as (port, _), opened(kind) as transport:
        headers = {"X-Api-Key": "s3cret-key", "Authorization": "Bearer s3cret-token"}
        url = yarl.URL(f"http://127.0.0.1:{port}/x?X-Amz-Signature=s3cret-sig")
        with pytest.raises(ConnectionLostError) as caught:
            await transport.send(Request("GET", url, headers, None, Timeout(total=5)))
    assert "connection lost" in str(caught.value)
    assert "s3cret" not in str(caught.value) and "s3cret" not in repr(caught.value)


PLAIN = b'{"a": 1}' * 100


def _encoded(encoding: str, body: bytes) -> bytes:
    """``body`` sent with ``encoding`` and its exact Content-Length."""
    head = f"HTTP/1.1 200 OK\r\nContent-Encoding: {encoding}\r\nContent-Length: {len(body)}"
    return head.encode() + b"\r\n\r\n" + body


@pytest.mark.parametrize("stream", [False, True], ids=["send", "stream"])
@pytest.mark.parametrize("members", [2, 3])
async def test_a_gzip_body_of_several_members_is_decoded_whole(
    kind: str, members: int, stream: bool
) -> None:
    """gzip(1) concatenates members, and a body may be several (RFC 1952, 2.2): httpx's
    decoder stopped after the first, silently dropping the rest."""
    answer = _encoded("gzip", gzip.compress(PLAIN) * members)
    async with raw_server(answer) as (port, _), opened(kind) as transport:
        request = get(f"http://127.0.0.1:{port}/")
        if stream:
            async with transport.stream(request) as response:
                body = b"".join([chunk async for chunk in response.iter_chunks(1000)])
        else:
            body = (await transport.send(request)).content
    assert body == PLAIN * members


@pytest.mark.parametrize(
    "body",
    [gzip.compress(PLAIN) + b"junk", zlib.compress(PLAIN)[:-3]],
    ids=["gzip with bytes after its end", "deflate cut short"],
)
async def test_a_body_its_encoding_does_not_end_well_is_connection_lost(
    kind: str, body: bytes
) -> None:
    """aiohttp refuses bytes after a gzip body's end and a deflate body that stops short
    of its end; httpx's decoder passed both on as if whole."""
    encoding = "gzip" if body[:2] == b"\x1f\x8b" else "deflate"
    async with raw_server(_encoded(encoding, body)) as (port, _), opened(kind) as transport:
        with pytest.raises(ConnectionLostError) as caught:
            await transport.send(get(f"http://127.0.0.1:{port}/x"))
    assert str(caught.value).startswith(f"connection lost during GET http://127.0.0.1:{port}/x")


@pytest.mark.parametrize("url", ["/relative", "ftp://127.0.0.1:1/x", "http:///x", "x:y"])
async def test_a_url_no_transport_can_send_is_refused_before_sending(kind: str, url: str) -> None:
    """A URL that is no absolute http(s) one is the caller's error, the same from both:
    it was a ``ConnectionLostError`` (retried, "maybe sent"), or a bare ``ValueError``
    from the error's own wording (a URL without a host has no origin)."""
    async with opened(kind) as transport:
        with pytest.raises(LocalProtocolError) as caught:
            await transport.send(Request("GET", yarl.URL(url), {}))
    assert caught.value.maybe_sent is False
    assert "was refused before sending: the URL is not an absolute http:// or https://" in str(
        caught.value
    )


@pytest.mark.parametrize("method", ["G\u00e9T", "GE T", "GET\r\nX-Evil: 1"], ids=repr)
async def test_a_method_that_is_no_token_is_refused_before_sending(kind: str, method: str) -> None:
    """The client's own check lets a non-ASCII letter pass (``GéT``); aiohttp and httpx
    refuse it, which came back as a bare ``TransportError`` that "may have been sent"
    (or, from httpx, a ``ConnectionLostError``)."""
    connections: list[asyncio.StreamWriter] = []
    server = await asyncio.start_server(lambda _, w: connections.append(w), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        async with opened(kind) as transport:
            request = Request(method, yarl.URL(f"http://127.0.0.1:{port}/x"), {})
            with pytest.raises(LocalProtocolError) as caught:
                await transport.send(request)
    finally:
        for writer in connections:  # h11 refuses the method once a connection is open
            writer.close()
        server.close()
        await server.wait_closed()
    assert caught.value.maybe_sent is False
    assert "was refused before sending: the method" in str(caught.value)


async def test_a_header_that_cannot_be_sent_is_refused_before_sending(kind: str) -> None:
    connections: list[asyncio.StreamWriter] = []
    server = await asyncio.start_server(lambda _, w: connections.append(w), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        async with opened(kind) as transport:
            bad = Request("GET", yarl.URL(f"http://127.0.0.1:{port}/"), {"X-Bad": "a\r\nb"})
            with pytest.raises(LocalProtocolError, match="'X-Bad'"):
                await transport.send(bad)
            await asyncio.sleep(0.05)  # a connection opened would have been accepted by now
    finally:
        for writer in connections:
            writer.close()
        server.close()
        await server.wait_closed()
    assert connections == []  # refused before a connection was even opened


OK_JSON = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"


@pytest.mark.parametrize("value", ["s3cret-key ", " s3cret-key", "s3cret-key\t"], ids=repr)
async def test_a_value_with_whitespace_around_it_is_sent_by_both(kind: str, value: str) -> None:
    """Whitespace around a value is no part of it (RFC 9110, 5.5): aiohttp sends it and
    the server drops it; httpx's h11 refuses to write it, which came back as a
    ``ConnectionLostError`` quoting the value (an API key), retried, though nothing was
    sent. Both send the value now, and the server reads the same one."""
    policy = RetryPolicy(attempts=3, wait_initial=0.001, wait_max=0.002)
    async with raw_server(OK_JSON) as (port, heads):
        transport = make(kind)
        auth = HeaderAuth("X-Api-Key", value)
        async with Client(f"http://127.0.0.1:{port}", auth=auth, transport=transport) as svc:
            assert await svc.request("GET", "/x", retry=policy) == {}
    assert len(heads) == 1
    sent = [line for line in heads[0].split(b"\r\n") if line.lower().startswith(b"x-api-key:")]
    assert [line.split(b":", 1)[1].strip() for line in sent] == [b"s3cret-key"]


@pytest.mark.parametrize("name", ["X y", "X:y", "", "X-\u015c"], ids=repr)
async def test_httpx_refuses_a_name_it_cannot_write_before_sending(name: str) -> None:
    """A name h11 will not write (no HTTP token) is refused as ``LocalProtocolError``,
    never sent, naming no value; it was a ``ConnectionLostError`` (or a bare
    ``TransportError`` for a name outside latin-1) that might have been sent."""
    async with raw_server(OK_JSON) as (port, heads), opened("httpx") as transport:
        headers = {name: "v", "X-Api-Key": "s3cret-key "}
        request = Request("GET", yarl.URL(f"http://127.0.0.1:{port}/"), headers)
        with pytest.raises(LocalProtocolError) as caught:
            await transport.send(request)
    assert caught.value.maybe_sent is False
    assert str(caught.value).startswith(f"GET http://127.0.0.1:{port}/ was refused before sending")
    assert repr(name)[:60] in str(caught.value)
    assert "s3cret" not in str(caught.value) and "s3cret" not in repr(caught.value)
    assert heads == []


async def test_after_aclose_nothing_is_sent(kind: str, service: tuple[str, dict[str, int]]) -> None:
    url, hits = service
    transport = make(kind)
    assert (await transport.send(get(f"{url}/status/200"))).status == 200
    await transport.aclose()
    await transport.aclose()  # twice is fine
    with pytest.raises(TransportError, match="transport is closed"):
        await transport.send(get(f"{url}/status/200"))
    assert hits["/status/200"] == 1


async def test_the_client_works_the_same_over_either(
    kind: str, service: tuple[str, dict[str, int]], tmp_path: Path
) -> None:
    async with FakeService() as fake, fake.serve() as url:
        async with Client(url, token=FakeService.DEFAULT_TOKEN, transport=make(kind)) as svc:
            orgs = await svc.orgs.list()
            events = await svc.events.list(limit=2)
            entries = await svc.entries.for_event(events[0].id)
    assert orgs and len(events) == 2 and entries
    files, hits = service
    async with Client(files, token="t", transport=make(kind)) as svc:
        saved = await svc.download(f"{files}/streamed", tmp_path / "a.bin")
        followed = await svc.download(f"{files}/redirect", tmp_path / "b.json")
    assert saved.bytes_written == MB == (tmp_path / "a.bin").stat().st_size
    assert json.loads((tmp_path / "b.json").read_bytes()) == {"followed": True}
    assert followed.bytes_written > 0 and hits["/target"] == 1  # the download's own rules


# ------------------------------------------------------------------ TLS and HTTP/2


def _certificates(folder: Path) -> tuple[Path, Path, Path]:
    """A CA, and a certificate it signed for 127.0.0.1 and localhost: (ca, cert, key)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "conformance test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(hours=1))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(hours=1))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
        .sign(ca_key, hashes.SHA256())
    )
    paths = folder / "ca.pem", folder / "cert.pem", folder / "key.pem"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return paths


async def _asgi(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """``/version`` tells the HTTP version and client port; ``/big`` is 3 MB in pieces;
    ``/stall`` never answers."""
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            kind = message["type"].rsplit(".", 1)[-1]
            await send({"type": f"{message['type']}.complete"})
            if kind == "shutdown":
                return
    path = scope["path"]
    if path == "/stall":
        await asyncio.sleep(30)
    head: list[tuple[bytes, bytes]] = [(b"content-type", b"application/json")]
    await send({"type": "http.response.start", "status": 200, "headers": head})
    if path == "/big":
        for _ in range(48):
            await send({"type": "http.response.body", "body": b"y" * 65536, "more_body": True})
        await send({"type": "http.response.body", "body": b""})
        return
    facts = {"http_version": scope["http_version"], "port": scope["client"][1]}
    await send({"type": "http.response.body", "body": json.dumps(facts).encode()})


class TLSServer:
    """hypercorn serving ``_asgi`` over TLS (h2 or http/1.1 by ALPN) on 127.0.0.1, in a
    thread with its own loop."""

    def __init__(self, folder: Path) -> None:
        self.ca, cert, key = _certificates(folder)
        from hypercorn.config import Config

        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.url = f"https://127.0.0.1:{sock.getsockname()[1]}"
        config = Config()
        config.bind = [f"fd://{sock.detach()}"]
        config.certfile, config.keyfile = str(cert), str(key)
        config.errorlog = None
        config.graceful_timeout = 0.1
        self._config = config
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="hypercorn")

    def _run(self) -> None:
        from hypercorn.asyncio import serve

        async def main() -> None:
            self._stop = asyncio.Event()
            self._loop = asyncio.get_running_loop()
            self._started.set()
            await serve(_asgi, self._config, shutdown_trigger=self._stop.wait)  # type: ignore[arg-type]

        asyncio.run(main())

    def __enter__(self) -> TLSServer:
        self._thread.start()
        assert self._started.wait(10)
        deadline = time.monotonic() + 10
        port = int(self.url.rsplit(":", 1)[1])
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                return self
            time.sleep(0.02)
        raise RuntimeError("hypercorn did not start")

    def __exit__(self, *exc: object) -> None:
        def stop() -> None:
            # Open keep-alive connections are cancelled as it stops: not worth a log line.
            self._loop.set_exception_handler(lambda loop, context: None)
            self._stop.set()

        self._loop.call_soon_threadsafe(stop)
        self._thread.join(10)

    def trusted(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca))


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TLSServer]:
    with TLSServer(tmp_path_factory.mktemp("tls")) as server:
        yield server


async def test_an_untrusted_certificate_is_a_connect_error(kind: str, tls: TLSServer) -> None:
    async with opened(kind) as transport:
        with pytest.raises(ConnectError) as caught:
            await transport.send(get(f"{tls.url}/version"))
    assert str(caught.value) == (
        f"cannot connect to {tls.url}: TLS certificate not trusted (GET /version)"
    )


async def test_over_trusted_tls_both_speak_http_1_1_by_default(kind: str, tls: TLSServer) -> None:
    option = {"ssl": tls.trusted()} if kind == "aiohttp" else {"verify": tls.trusted()}
    async with opened(kind, **option) as transport:
        response = await transport.send(get(f"{tls.url}/version"))
    assert response.json()["http_version"] == "1.1"


async def test_http2_carries_concurrent_calls_on_one_connection(tls: TLSServer) -> None:
    async with opened("httpx", http2=True, verify=str(tls.ca)) as transport:
        answers = await asyncio.gather(
            *(transport.send(get(f"{tls.url}/version")) for _ in range(8))
        )
        facts = [a.json() for a in answers]
        assert {f["http_version"] for f in facts} == {"2"}
        assert len({f["port"] for f in facts}) == 1  # one connection for the eight
        async with transport.stream(get(f"{tls.url}/big")) as stream:
            body = b"".join([chunk async for chunk in stream.iter_chunks(10_000)])
        assert len(body) == 48 * 65536
    async with opened("httpx", http2=True, verify=tls.trusted(), max_body_size=CAP) as transport:
        with pytest.raises(ResponseTooLargeError):
            await transport.send(get(f"{tls.url}/big"))
        with pytest.raises(RequestTimeout, match=r"after 0\.2s"):
            await transport.send(get(f"{tls.url}/stall", 0.2))
        assert (await transport.send(get(f"{tls.url}/version"))).json()["http_version"] == "2"


# ------------------------------------------------------------------ proxies


@pytest.fixture(scope="module")
def pproxy() -> Iterator[str]:
    """A real forward proxy (pproxy, HTTP and CONNECT) on loopback that wants Basic
    credentials on every request; yields its URL without them."""
    port = closed_port()
    user, password = PROXY_USER
    listen = f"http://127.0.0.1:{port}#{user}:{password}"
    process = subprocess.Popen(
        # --auth 0: never "remember" a client by its address, ask every time
        [sys.executable, "-m", "pproxy", "-l", listen, "--auth", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 15
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                break
            if time.monotonic() > deadline or process.poll() is not None:
                raise RuntimeError("pproxy did not start")
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(10)


def with_credentials(proxy: str) -> str:
    return proxy.replace("http://", "http://{}:{}@".format(*PROXY_USER))


async def test_through_a_real_proxy_to_http_and_to_https(
    kind: str, pproxy: str, service: tuple[str, dict[str, int]], tls: TLSServer
) -> None:
    url, hits = service
    option = {"ssl": tls.trusted()} if kind == "aiohttp" else {"verify": tls.trusted()}
    async with opened(kind, proxy=with_credentials(pproxy), **option) as transport:
        echoed = (await transport.send(get(f"{url}/echo"))).json()
        assert echoed["method"] == "GET" and echoed["proxy_auth"] is None  # the proxy's own
        async with transport.stream(get(f"{url}/streamed")) as stream:
            assert len(b"".join([c async for c in stream.iter_chunks(65536)])) == MB
        tunnelled = await transport.send(get(f"{tls.url}/version"))  # CONNECT, then TLS
        assert tunnelled.json()["http_version"] == "1.1"
    assert hits["/echo"] == 1


async def test_a_proxy_wanting_credentials_is_a_proxy_error_naming_it(
    kind: str, pproxy: str, service: tuple[str, dict[str, int]], tls: TLSServer
) -> None:
    url, hits = service
    async with opened(kind, proxy=pproxy) as transport:
        for target in (f"{url}/echo?sig=s3cret", f"{tls.url}/version"):  # forwarded; CONNECT
            with pytest.raises(ProxyError, match="HTTP 407"):
                async with transport.stream(get(target)):
                    pass
            with pytest.raises(ProxyError) as caught:
                await transport.send(get(target))
            error = caught.value
            assert (error.status, error.refused, error.proxy, error.maybe_sent) == (
                407,
                True,
                pproxy,
                False,
            )
            assert isinstance(error, ConnectError)
            shown = target.replace("s3cret", "[REDACTED]")
            assert str(error) == (
                f"proxy {pproxy} refused GET {shown}: HTTP 407 Proxy Authentication Required"
                " (the proxy wants credentials: give them in its URL,"
                " http://user:password@host:port)"
            )
    assert "/echo" not in hits


async def test_a_wrong_password_never_shows(kind: str, pproxy: str) -> None:
    wrong = pproxy.replace("http://", "http://proxy-user:not-it@")
    async with opened(kind, proxy=wrong) as transport:
        with pytest.raises(ProxyError) as caught:
            await transport.send(get("http://127.0.0.1:9/x"))
    assert "not-it" not in str(caught.value) and caught.value.status == 407


REFUSALS = {
    403: b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
    407: b"HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic"
    b' realm="x"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n',
    502: b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
}


@pytest.mark.parametrize(
    ("status", "scheme", "attempts"),
    [(407, "http", 1), (407, "https", 1), (403, "https", 1), (502, "https", 3)],
)
async def test_a_refusing_proxy_is_never_retried_one_that_cannot_reach_the_service_is(
    kind: str, status: int, scheme: str, attempts: int, no_backoff: None
) -> None:
    """Through the client, with three attempts: a refusal (4xx) is raised at once; a
    CONNECT answered 502 (the proxy could not reach the service) is retried."""
    async with raw_server(REFUSALS[status]) as (port, heads):
        proxy = f"http://127.0.0.1:{port}"
        service = f"{scheme}://svc.invalid"
        async with Client(service, token="t", transport=make(kind, proxy=proxy)) as svc:
            with pytest.raises(ProxyError) as caught:
                await svc.request("GET", "/x", retry=RetryPolicy(attempts=3))
    assert caught.value.status == status and caught.value.refused is (status < 500)
    assert len(heads) == attempts
    method = b"CONNECT svc.invalid:443" if scheme == "https" else b"GET http://svc.invalid/x"
    assert all(head.startswith(method) for head in heads)


_TOKEN = base64.b64encode(":".join(PROXY_USER).encode()).decode()


@pytest.mark.parametrize("echo", [PROXY_USER[1], f"Basic {_TOKEN}"], ids=["password", "token"])
@pytest.mark.parametrize(("status", "scheme"), [(407, "http"), (407, "https"), (403, "https")])
async def test_a_proxy_echoing_its_credentials_back_never_shows_them(
    kind: str, echo: str, status: int, scheme: str
) -> None:
    """A refusal's reason phrase is the proxy's text: one quoting the credentials it was
    given (the password, or its ``Proxy-Authorization`` value) had them in the message."""
    answer = f"HTTP/1.1 {status} bad credentials {echo}\r\nContent-Length: 0\r\n\r\n"
    async with raw_server(answer.encode()) as (port, _):
        proxy = f"http://{':'.join(PROXY_USER)}@127.0.0.1:{port}"
        transport = make(kind, proxy=proxy)
        async with Client(f"{scheme}://svc.invalid", token="t", transport=transport) as svc:
            with pytest.raises(ProxyError) as caught:
                await svc.request("GET", "/x", retry=RetryPolicy(attempts=1))
    shown = str(caught.value) + repr(caught.value)
    assert f"HTTP {status} bad credentials" in shown
    assert PROXY_USER[1] not in shown and _TOKEN not in shown


async def test_a_proxy_that_cannot_be_reached_says_so_and_is_retried(
    kind: str, no_backoff: None
) -> None:
    port = closed_port()
    proxy = f"http://someone:pw@127.0.0.1:{port}"
    async with opened(kind, proxy=proxy) as transport:
        with pytest.raises(ProxyError) as caught:
            await transport.send(get("http://svc.invalid/api/x?token=s3cret"))
    error = caught.value
    assert (error.status, error.refused, error.maybe_sent) == (None, False, False)
    assert str(error) == (
        f"cannot connect to proxy http://127.0.0.1:{port}: connection refused"
        " (GET http://svc.invalid/api/x?token=[REDACTED])"
    )
    outcome = outcome_of(None, error, {})
    assert outcome.unprocessed
    assert _decision(outcome).action is Action.RETRY


def _decision(outcome: Any) -> Any:
    return decide(
        attempt=1,
        outcome=outcome,
        policy=RetryPolicy(),
        idempotent=False,
        now=0.0,
        deadline=None,
        backoff=0.0,
        budget_tokens=100,
        budget=RetryBudget(),
        can_renew=False,
        can_resolve=False,
    )


def test_the_decision_table_raises_a_refusal_and_retries_an_unreachable_proxy() -> None:
    refused = ProxyError("no", status=407)
    assert _decision(outcome_of(None, refused, {})).action is Action.RAISE
    assert _decision(outcome_of(None, refused, {})).reason == "proxy refused"
    for status in (None, 502, 503):
        assert _decision(outcome_of(None, ProxyError("x", status=status), {})).action is (
            Action.RETRY
        )


# ------------------------------------------------------------------ the environment


@pytest.fixture
def proxy_env(monkeypatch: pytest.MonkeyPatch) -> Callable[..., None]:
    """Set the proxy variables (everything else of the kind unset)."""
    names = ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY")
    for name in names:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)

    def put(**values: str) -> None:
        for name, value in values.items():
            monkeypatch.setenv(name, value)

    return put


async def test_the_environment_s_proxy_is_used_unless_no_proxy_names_the_host(
    kind: str,
    pproxy: str,
    service: tuple[str, dict[str, int]],
    proxy_env: Callable[..., None],
) -> None:
    url, hits = service
    proxy_env(HTTP_PROXY=pproxy)  # without credentials: a proxied call is refused (407)
    async with opened(kind, trust_env=True) as transport:
        with pytest.raises(ProxyError, match="HTTP 407"):
            await transport.send(get(f"{url}/echo"))
    async with opened(kind, trust_env=False) as transport:
        assert (await transport.send(get(f"{url}/echo"))).status == 200
    for no_proxy in ("127.0.0.1", "localhost, 127.0.0.1", "*", f"127.0.0.1:{yarl.URL(url).port}"):
        proxy_env(NO_PROXY=no_proxy)
        async with opened(kind, trust_env=True) as transport:
            assert (await transport.send(get(f"{url}/echo"))).status == 200, no_proxy
    proxy_env(NO_PROXY="other.example", http_proxy=with_credentials(pproxy))
    async with opened(kind, trust_env=True) as transport:
        assert (await transport.send(get(f"{url}/echo"))).status == 200  # through the proxy
    proxy_env(HTTP_PROXY="", http_proxy="", HTTPS_PROXY=pproxy)  # only for https:// URLs
    async with opened(kind, trust_env=True) as transport:
        assert (await transport.send(get(f"{url}/echo"))).status == 200
    assert hits["/echo"] == 7


def test_proxy_settings_are_checked_and_never_show_credentials(
    proxy_env: Callable[..., None], caplog: pytest.LogCaptureFixture
) -> None:
    for bad in ("socks5://127.0.0.1:1080", "ftp://h", "http://", ""):
        with pytest.raises(ValueError, match="proxy must be an http:// or https:// proxy URL"):
            AiohttpTransport(proxy=bad)
        with pytest.raises(ValueError, match="proxy must be"):
            HttpxTransport(proxy=bad)
    with pytest.raises(ValueError) as caught:
        AiohttpTransport(proxy="socks5://u:s3cret@h:1")
    assert "s3cret" not in str(caught.value)
    explicit = Proxies.configure("http://u:s3cret@proxy.example:3128", trust_env=True)
    assert explicit is not None and "s3cret" not in repr(explicit)
    route = explicit.route(yarl.URL("https://svc.example/x"))
    assert route is not None and str(route.url) == "http://proxy.example:3128"
    assert route.headers == {"Proxy-Authorization": "Basic dTpzM2NyZXQ="}
    proxy_env(HTTPS_PROXY="proxy.example:3128", HTTP_PROXY="socks5://h:1", NO_PROXY=".corp")
    with caplog.at_level("WARNING", logger="svc_async._transports.proxy"):
        env = Proxies.configure(None, trust_env=True)
    assert "HTTP_PROXY must be an http:// or https:// proxy URL" in caplog.text
    assert env is not None
    via = env.route(yarl.URL("https://svc.example/x"))
    assert via is not None and str(via.url) == "http://proxy.example:3128"  # http:// added
    assert env.route(yarl.URL("http://svc.example/x")) is None  # the socks one is ignored
    assert env.route(yarl.URL("https://api.corp/x")) is None
    assert Proxies.configure(None, trust_env=False) is None


@pytest.mark.parametrize(
    ("host", "port", "no_proxy", "expected"),
    [
        ("api.example.com", 443, "example.com", True),
        ("api.example.com", 443, ".example.com", True),
        ("example.com", 443, ".example.com", True),
        ("badexample.com", 443, "example.com", False),
        ("API.Example.COM", 443, "EXAMPLE.com", True),
        ("127.0.0.1", 8080, "127.0.0.1:8080", True),
        ("127.0.0.1", 8080, "127.0.0.1:9090", False),
        ("h.example", 80, " , other , *", True),
        ("h.example", 80, "", False),
    ],
)
def test_no_proxy_follows_the_standard_library_s_rule(
    host: str, port: int, no_proxy: str, expected: bool
) -> None:
    import urllib.request

    assert bypassed(host, port, no_proxy) is expected
    if no_proxy and "*" not in no_proxy:  # urllib takes "*" only alone
        by_urllib = urllib.request.proxy_bypass_environment  # type: ignore[attr-defined]
        assert bool(by_urllib(f"{host}:{port}", {"no": no_proxy})) is expected


@pytest.mark.parametrize(
    ("size", "error"), [(0, ValueError), (-1, ValueError), (2.5, TypeError), (True, TypeError)]
)
async def test_a_chunk_size_that_is_no_positive_int_is_refused(
    kind: str, size: Any, error: type[Exception]
) -> None:
    """``iter_chunks(0)`` gave aiohttp's body as empty and ``iter_chunks(-1)`` httpx's and
    the mock's: a body lost without a word. Each refuses it now, the same way."""
    answer = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
    mock = MockTransport(lambda request: Response(200, content=b"hello"))
    async with raw_server(answer) as (port, _), opened(kind) as transport:
        for each in (transport, mock):
            async with each.stream(get(f"http://127.0.0.1:{port}/")) as response:
                with pytest.raises(error, match="chunk_size"):
                    response.iter_chunks(size)


@pytest.mark.parametrize(("message", "status"), [("407 Auth", 407), ("\u00b2 x", 502), ("x", 502)])
def test_httpx_s_proxy_refusal_reads_only_ascii_digits_as_its_status(
    message: str, status: int
) -> None:
    """A superscript digit passes ``isdigit()`` and fails ``int()``: a bare ValueError."""
    from svc_async._transports.httpx import _proxy_answer

    assert _proxy_answer(message)[0] == status
