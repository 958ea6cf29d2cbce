"""The receiver reads a delivery's body whole, however it arrives on the socket.

A raw-socket client on 127.0.0.1 sends bodies of 300 KB to 3 MB, a 60-byte body in two
TCP segments, a body one byte at a time, chunked bodies, and bodies that stop or run
over the cap. ``StreamReader.read(n)`` returns what is buffered, not ``n`` bytes: a
receiver that trusts one read refuses these as "not valid JSON".
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import orjson
import pytest
from aiohttp import web

from svc_async.webhooks import (
    DEFAULT_PATH,
    MAX_BODY,
    EntryUpdate,
    JobStatusUpdate,
    WebhookReceiver,
)

from ..conftest import load, serve_app

SECRET = "body-test-secret"
TARGET = f"{DEFAULT_PATH}?key={SECRET}"
ENTRY = load("get-event-entries.response-0.json")[0]

Send = Callable[[asyncio.StreamWriter], Awaitable[None]]


@asynccontextmanager
async def receiving(
    receiver: WebhookReceiver, app: web.Application | None = None
) -> AsyncIterator[tuple[str, int]]:
    """The receiver's app (or ``app``) on a free loopback port: (host, port)."""
    async with serve_app(app or receiver.app()) as base:
        host, port = base.removeprefix("http://").split(":")
        yield host, int(port)


async def raw_post(address: tuple[str, int], head: dict[str, str], send: Send) -> tuple[int, bytes]:
    """POST by hand: the request head, then whatever ``send`` writes; (status, body).

    The answer is read while the body is still being sent, as a client that takes an
    early refusal (413, 408) does; sending stops once it has come.
    """
    reader, writer = await asyncio.open_connection(*address)

    async def answer() -> tuple[int, bytes]:
        head_bytes = await reader.readuntil(b"\r\n\r\n")
        status_line, *fields = head_bytes.decode().split("\r\n")
        sizes = [int(f.split(":")[1]) for f in fields if f.lower().startswith("content-length:")]
        body = await reader.readexactly(sizes[0] if sizes else 0)  # a 204 has none
        return int(status_line.split()[1]), body

    async def request() -> None:
        lines = [f"POST {TARGET} HTTP/1.1", f"Host: {address[0]}:{address[1]}"]
        lines += [f"{name}: {value}" for name, value in head.items()]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
        await writer.drain()
        with contextlib.suppress(ConnectionError):  # the server hung up after answering
            await send(writer)

    sending = asyncio.create_task(request())
    try:
        return await asyncio.wait_for(answer(), 600)
    finally:
        sending.cancel()
        await asyncio.gather(sending, return_exceptions=True)
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()


def fixed(body: bytes) -> dict[str, str]:
    return {
        "Content-Type": "application/json",
        "Content-Length": str(len(body)),
        "Connection": "close",
    }


CHUNKED = {
    "Content-Type": "application/json",
    "Transfer-Encoding": "chunked",
    "Connection": "close",
}


def pieces(body: bytes, *cuts: int, pause: float = 0.0, chunked: bool = False) -> Send:
    """Write ``body`` cut at ``cuts``, pausing between pieces (chunk-encoded if asked)."""

    async def send(writer: asyncio.StreamWriter) -> None:
        bounds = [0, *cuts, len(body)]
        for start, end in itertools.pairwise(bounds):
            part = body[start:end]
            writer.write(f"{len(part):x}\r\n".encode() + part + b"\r\n" if chunked else part)
            await writer.drain()
            if end < len(body):
                await asyncio.sleep(pause)
        if chunked:
            writer.write(b"0\r\n\r\n")
            await writer.drain()

    return send


def entry_update(size: int) -> bytes:
    """An entry-update delivery of about ``size`` bytes (a long field value)."""
    notes = {"key": "notes", "value": "n" * size, "signupFieldId": 93}
    fields = [*ENTRY["fields"], notes]
    return orjson.dumps({"entry": {**ENTRY, "fields": fields}, "eventId": 18})


def status_update(job_id: int = 7) -> bytes:
    body = orjson.dumps({"id": job_id, "status": "Processed", "note": "x" * 20})
    return body + b" " * (60 - len(body))  # a 60-byte delivery


def collect(receiver: WebhookReceiver) -> list[Any]:
    seen: list[Any] = []
    receiver.on_status_update(seen.append)
    receiver.on_entry_update(seen.append)
    return seen


@pytest.mark.parametrize("size", [300_000, 1_000_000, 3_000_000])
async def test_large_deliveries_are_read_whole_and_dispatched(size: int) -> None:
    receiver = WebhookReceiver(SECRET)
    seen = collect(receiver)
    body = entry_update(size)
    async with receiving(receiver) as address:
        # Written in 64 KiB pieces as a proxy would forward them.
        cuts = range(65536, len(body), 65536)
        status, answer = await raw_post(address, fixed(body), pieces(body, *cuts))
        await receiver.drain()
    assert (status, answer) == (204, b"")
    assert len(seen) == 1 and isinstance(seen[0], EntryUpdate)
    assert seen[0].entry.field("notes") == "n" * size


@pytest.mark.looptime
async def test_a_delivery_in_two_segments_is_read_whole() -> None:
    receiver = WebhookReceiver(SECRET)
    seen = collect(receiver)
    body = status_update()
    assert len(body) == 60
    async with receiving(receiver) as address:
        # Two TCP segments, the second 100 ms (virtual) after the first: two reads.
        status, _ = await raw_post(address, fixed(body), pieces(body, 30, pause=0.1))
        await receiver.drain()
    assert status == 204
    assert seen == [JobStatusUpdate(job_id=7, status="Processed")]


async def test_a_delivery_dripped_byte_by_byte_is_read_whole() -> None:
    receiver = WebhookReceiver(SECRET)
    seen = collect(receiver)
    body = status_update(8)
    async with receiving(receiver) as address:
        send = pieces(body, *range(1, len(body)), pause=0.001)
        status, _ = await raw_post(address, fixed(body), send)
        await receiver.drain()
    assert status == 204 and [u.job_id for u in seen] == [8]


@pytest.mark.parametrize("size", [60, 1_000_000])
async def test_chunked_deliveries_are_read_whole(size: int) -> None:
    receiver = WebhookReceiver(SECRET)
    seen = collect(receiver)
    body = status_update(9) if size == 60 else entry_update(size)
    async with receiving(receiver) as address:
        send = pieces(body, *range(7, len(body), max(7, len(body) // 5)), chunked=True)
        status, _ = await raw_post(address, CHUNKED, send)
        await receiver.drain()
    assert status == 204 and len(seen) == 1


async def test_bodies_up_to_the_cap_are_accepted_also_in_your_own_app() -> None:
    """``routes()`` in an app with aiohttp's default 1 MiB ``client_max_size``."""
    receiver = WebhookReceiver(SECRET)
    seen = collect(receiver)
    app = web.Application()
    app.add_routes(receiver.routes())
    body = entry_update(MAX_BODY - 3000)
    body += b" " * (MAX_BODY - len(body))  # exactly the cap
    async with receiving(receiver, app) as address:
        status, _ = await raw_post(address, fixed(body), pieces(body, 1 << 20))
        await receiver.drain()
    assert status == 204 and len(seen) == 1


@pytest.mark.parametrize("chunked", [False, True])
async def test_a_body_over_the_cap_is_413_and_not_dispatched(chunked: bool) -> None:
    receiver = WebhookReceiver(SECRET)
    seen = collect(receiver)
    body = b" " * (MAX_BODY + 1)
    async with receiving(receiver) as address:
        if chunked:  # no Content-Length to refuse it early: it is counted as it comes
            send = pieces(body, *range(1 << 20, len(body), 1 << 20), chunked=True)
            head = CHUNKED
        else:
            send, head = pieces(b""), fixed(body)  # refused on its Content-Length alone
        status, answer = await raw_post(address, head, send)
    assert status == 413 and b"over 4194304 bytes" in answer
    assert seen == [] and receiver.stats.rejected == 1


@pytest.mark.looptime
async def test_a_body_that_stops_arriving_is_408_after_the_read_timeout() -> None:
    receiver = WebhookReceiver(SECRET)  # the default read_timeout: 10 s (virtual here)
    seen = collect(receiver)
    body = status_update()
    async with receiving(receiver) as address:
        loop = asyncio.get_running_loop()
        start = loop.time()
        status, answer = await raw_post(address, fixed(body), pieces(body[:30]))
        waited = loop.time() - start
    assert status == 408 and b"after 30 bytes" in answer
    assert 10 <= waited < 11
    assert seen == [] and receiver.stats.rejected == 1


@pytest.mark.looptime
async def test_pieces_that_keep_coming_are_read_until_the_body_timeout() -> None:
    receiver = WebhookReceiver(SECRET)  # 10 s per piece, 60 s in all (virtual here)
    seen = collect(receiver)
    body = status_update()
    async with receiving(receiver) as address:
        slow = pieces(body, 10, 20, 30, 40, 50, pause=9.0)  # 45 s, 9 s between pieces
        assert (await raw_post(address, fixed(body), slow))[0] == 204
        loop = asyncio.get_running_loop()
        start = loop.time()
        slower = pieces(body, *range(2, 60, 2), pause=5.0)  # 145 s, 5 s between pieces
        status, _ = await raw_post(address, fixed(body), slower)
        waited = loop.time() - start
        await receiver.drain()
    assert status == 408 and 60 <= waited < 61
    assert len(seen) == 1 and receiver.stats.rejected == 1


async def test_a_sender_that_goes_away_mid_body_dispatches_nothing() -> None:
    receiver = WebhookReceiver(SECRET)
    seen = collect(receiver)
    body = status_update()
    async with receiving(receiver) as address:
        _reader, writer = await asyncio.open_connection(*address)
        head = f"POST {TARGET} HTTP/1.1\r\nHost: x\r\nContent-Length: 60\r\n\r\n"
        writer.write(head.encode() + body[:30])
        await writer.drain()
        writer.close()
        await writer.wait_closed()
        for _ in range(2000):  # the server notices the close on its next loop turns
            if receiver.stats.rejected:
                break
            await asyncio.sleep(0.005)
    assert seen == [] and receiver.stats.rejected == 1


def test_timeouts_are_checked() -> None:
    for bad in (0, -1, "5", True):
        with pytest.raises(ValueError, match="read_timeout"):
            WebhookReceiver(SECRET, read_timeout=bad)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="body_timeout"):
            WebhookReceiver(SECRET, body_timeout=bad)  # type: ignore[arg-type]
