"""The incremental path for big answers: same models as one-shot, same errors, loop kept free."""

from __future__ import annotations

import asyncio
import gc
import json
from collections.abc import AsyncIterator, Iterable
from typing import Any

import orjson
import pytest
from aiohttp import web
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from multidict import CIMultiDict, CIMultiDictProxy

from svc_async import AiohttpTransport, Client
from svc_async import models as m
from svc_async._pipeline import incremental as _incremental
from svc_async._pipeline.incremental import ArraySplitter, Sliced, StreamDecode, structure_chunks
from svc_async._pipeline.run import decode_json
from svc_async._transports.base import Response
from svc_async.converter import structure, unstructure
from svc_async.errors import ConnectionLostError, ResponseDecodeError, ResponseTooLargeError
from svc_async.resources.entries import parse_entries

from ..conftest import FIXTURES, serve_app
from ..test_converter_roundtrip import entries as entry_strategy

ARRAY_FIXTURES = {
    "get-event-entries.response-0.json": m.Entry,
    "get-event-entries.response-1.json": m.Entry,
    "get-event-entries.response-2.json": m.Entry,
    "get-season-entries.response-0.json": m.Entry,
    "get-season-entries.response-1.json": m.Entry,
    "get-events.response.json": m.Event,
    "get-seasons.response.json": m.Season,
    "get-my-organisations.response.json": m.Organisation,
}


async def chunked(body: bytes, size: int) -> AsyncIterator[bytes]:
    """``body`` in pieces of ``size`` bytes, never giving the loop a turn itself."""
    for start in range(0, len(body), size):
        yield body[start : start + size]


def big_body(count: int) -> list[dict[str, Any]]:
    """``count`` entries grown from the published example (distinct ids and names)."""
    sample = orjson.loads(FIXTURES.joinpath(_entries_fixture()).read_bytes())
    template = next(e for e in sample if e["soundRecording"])
    return [{**template, "id": i + 1, "name": f"Team {i}"} for i in range(count)]


def _entries_fixture() -> str:
    return "get-event-entries.response-0.json"


def test_every_array_fixture_is_listed() -> None:
    arrays = {
        p.name
        for p in FIXTURES.glob("*.response*.json")
        if p.read_bytes().lstrip().startswith(b"[")
    }
    assert arrays <= set(ARRAY_FIXTURES)


def _arrays() -> list[str]:
    """The fixtures that are arrays (one entries example is ``{}``, tested below)."""
    return sorted(n for n in ARRAY_FIXTURES if FIXTURES.joinpath(n).read_bytes().startswith(b"["))


@pytest.mark.parametrize("name", _arrays())
@pytest.mark.parametrize(("chunk", "slice_bytes"), [(1, 64), (7, 300), (4096, 1 << 20)])
async def test_fixtures_match_one_shot(name: str, chunk: int, slice_bytes: int) -> None:
    body = FIXTURES.joinpath(name).read_bytes()
    tp = ARRAY_FIXTURES[name]
    data = orjson.loads(body)
    got = await structure_chunks(chunked(body, chunk), tp, slice_bytes=slice_bytes)
    assert got == structure(data, list[tp])


class _Stream:
    """A streamed 2xx response, as the pipeline hands it to a ``stream_decode``."""

    def __init__(self, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.status = 200
        self.headers = CIMultiDictProxy(CIMultiDict(headers or {}))
        self._body = body

    def iter_chunks(self, chunk_size: int) -> AsyncIterator[bytes]:
        return chunked(self._body, min(chunk_size, 3))


async def test_the_empty_object_answer_stays_on_the_one_shot_path() -> None:
    decoder = StreamDecode(m.Entry, threshold=1)
    assert await decoder.read_stream(_Stream(b"{}")) == {}  # one-shot data, built after
    assert parse_entries({}) == []


async def test_small_answers_take_the_one_shot_path_by_length_or_bytes_read() -> None:
    body = orjson.dumps(big_body(3))
    decoder = StreamDecode(m.Entry, threshold=len(body) + 1)
    by_length = await decoder.read_stream(_Stream(body, {"Content-Length": str(len(body))}))
    by_bytes = await decoder.read_stream(
        _Stream(body)
    )  # no Content-Length: read up to the threshold
    assert by_length == by_bytes == orjson.loads(body)
    sliced = await StreamDecode(m.Entry, threshold=len(body) // 2).read_stream(_Stream(body))
    assert isinstance(sliced, Sliced)
    assert sliced.items == structure(orjson.loads(body), list[m.Entry])


@pytest.mark.parametrize("threshold", [1, 1 << 30])
async def test_a_body_over_the_cap_is_too_large_on_both_paths(
    threshold: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The transport's cap holds on the sliced and the one-shot path alike."""
    monkeypatch.setattr(_incremental, "STREAM_THRESHOLD", threshold)
    body = orjson.dumps(big_body(300))
    app, calls = _entries_app(body)
    transport = AiohttpTransport(max_body_size=len(body) - 1)
    async with serve_app(app) as base, Client(base, token="t", transport=transport) as svc:
        with pytest.raises(ResponseTooLargeError):
            await svc.entries.for_season(7)
        transport.max_body_size = len(body)
        assert len(await svc.entries.for_season(7)) == 300
    assert len(calls) == 2  # too large is not retried


def _encodings(data: Any) -> Iterable[bytes]:
    yield orjson.dumps(data)
    yield orjson.dumps(data, option=orjson.OPT_INDENT_2)
    yield json.dumps(data, ensure_ascii=True).encode()  # \uXXXX and \" escapes everywhere


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    entries=st.lists(entry_strategy, max_size=8),
    chunk=st.integers(min_value=1, max_value=700),
    slice_bytes=st.integers(min_value=1, max_value=3000),
)
def test_generated_answers_match_one_shot(
    entries: list[m.Entry], chunk: int, slice_bytes: int
) -> None:
    data = unstructure(entries)
    for body in _encodings(data):
        expected = structure(orjson.loads(body), list[m.Entry])
        got = asyncio.run(structure_chunks(chunked(body, chunk), m.Entry, slice_bytes=slice_bytes))
        assert got == expected


@settings(max_examples=40, deadline=None)
@given(
    strings=st.lists(st.text(alphabet='{}[]",\\ ab\n', max_size=12), max_size=6),
    chunk=st.integers(min_value=1, max_value=50),
)
def test_brackets_quotes_and_escapes_inside_strings(strings: list[str], chunk: int) -> None:
    data = [
        {"id": i + 1, "name": s, "fields": [], "soundRecording": None}
        for i, s in enumerate(strings)
    ]
    for body in _encodings(data):
        got = asyncio.run(structure_chunks(chunked(body, chunk), m.Entry, slice_bytes=16))
        assert [e.name for e in got] == strings


async def test_a_bad_value_deep_in_a_big_answer_has_the_one_shot_error_and_path() -> None:
    data = big_body(3000)
    data[2345] = orjson.loads(orjson.dumps(data[2345]))
    data[2345]["soundRecording"]["songs"][0]["startTime"] = "soon"
    body = orjson.dumps(data)
    with pytest.raises(ResponseDecodeError) as one_shot:
        structure(orjson.loads(body), list[m.Entry])
    with pytest.raises(ResponseDecodeError) as sliced:
        await structure_chunks(chunked(body, 65536), m.Entry, slice_bytes=32 * 1024)
    assert one_shot.value.path == "$[2345].soundRecording.songs[0].startTime"
    assert sliced.value.path == one_shot.value.path
    assert str(sliced.value) == str(one_shot.value)


async def test_integers_beyond_64_bits_are_exact_as_on_the_one_shot_path() -> None:
    """orjson reads them as floats; the slices holding one are read again exactly."""
    data = big_body(40)
    data[33] = {**data[33], "id": 123456789012345678901234}
    body = json.dumps(data, separators=(",", ":")).encode()
    got = await structure_chunks(chunked(body, 4096), m.Entry, slice_bytes=len(body) // 8)
    assert got[33].id == 123456789012345678901234
    assert got == structure(json.loads(body), list[m.Entry])


async def test_a_long_number_nested_too_deeply_raises_as_on_the_one_shot_path() -> None:
    deep = b"[" * 600 + b"12345678901234567890" + b"]" * 600
    body = b"[" + _OK + b"," + deep + b"]"
    with pytest.raises(ResponseDecodeError) as one_shot:
        decode_json(Response(200, CIMultiDictProxy(CIMultiDict()), body))
    with pytest.raises(ResponseDecodeError) as sliced:
        await structure_chunks(chunked(body, 64), m.Entry, status=200, slice_bytes=32)
    assert str(sliced.value) == str(one_shot.value)
    assert "nested too deeply" in str(sliced.value)


_OK = b'{"id": 1, "name": "a", "fields": [], "soundRecording": null}'


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (b"[" + _OK + b', {"id": 2,, }]', "not valid JSON"),
        (b"[" + _OK + b" " + _OK + b"]", "not valid JSON"),
        (b"[" + _OK, "not closed"),
        (b"[" + _OK + b"] x", "trailing data"),
        (_OK, "expected a JSON array"),
    ],
)
async def test_malformed_bodies_raise_decode_errors(body: bytes, why: str) -> None:
    with pytest.raises(ResponseDecodeError, match=why):
        await structure_chunks(chunked(body, 3), m.Entry, slice_bytes=4)


async def test_slices_give_the_loop_turns() -> None:
    body = orjson.dumps(big_body(400))
    turns = 0
    gc_seen: set[bool] = set()

    async def ticker() -> None:
        nonlocal turns
        while True:
            await asyncio.sleep(0)
            turns += 1
            gc_seen.add(gc.isenabled())

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0)
    start = turns
    # the chunk source never awaits: every turn the ticker gets comes from the slicing
    got = await structure_chunks(chunked(body, 1 << 24), m.Entry, slice_bytes=len(body) // 20)
    task.cancel()
    assert len(got) == 400
    assert turns - start >= 15
    assert gc_seen == {True}  # the GC is paused only inside a slice, never across a turn


async def test_calls_on_one_loop_take_turns_while_their_bytes_are_there(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two answers whose bytes are all there: one is structured whole, then the other.

    Interleaved, each answer's models stay alive (and are scanned by every young
    collection) until both are done; the loop still gets a turn after every slice.
    """
    first = orjson.dumps(big_body(200))
    second = orjson.dumps([{**e, "id": e["id"] + 1000} for e in big_body(200)])
    order: list[str] = []
    real = _incremental.structure_slice

    def noting(items: list[Any], *args: Any) -> Any:
        order.append("first" if items[0]["id"] < 1000 else "second")
        return real(items, *args)

    monkeypatch.setattr(_incremental, "structure_slice", noting)
    turns = 0

    async def ticker() -> None:
        nonlocal turns
        while True:
            await asyncio.sleep(0)
            turns += 1

    tick = asyncio.create_task(ticker())
    size = len(first) // 10
    got = await asyncio.gather(
        structure_chunks(chunked(first, 8192), m.Entry, slice_bytes=size),
        structure_chunks(chunked(second, 8192), m.Entry, slice_bytes=size),
    )
    tick.cancel()
    assert [len(g) for g in got] == [200, 200]
    assert got[1] == structure(orjson.loads(second), list[m.Entry])
    assert order == sorted(order) and len(order) >= 16  # all the first's slices, then
    assert turns >= len(order)
    assert _incremental._TURNS[asyncio.get_running_loop()].owner is None


async def test_a_call_waiting_for_its_bytes_holds_no_other_up() -> None:
    body = orjson.dumps(big_body(200))
    more = asyncio.Event()

    async def slow() -> AsyncIterator[bytes]:
        yield body[: len(body) // 2]  # several slices, then the network goes quiet
        await more.wait()
        yield body[len(body) // 2 :]

    size = len(body) // 10
    waiting = asyncio.create_task(structure_chunks(slow(), m.Entry, slice_bytes=size))
    await asyncio.sleep(0)
    other = asyncio.create_task(structure_chunks(chunked(body, 8192), m.Entry, slice_bytes=size))
    for _ in range(1000):  # loop turns, not time: it ends either way
        if other.done():
            break
        await asyncio.sleep(0)
    try:
        assert other.done() and not waiting.done()
    finally:
        more.set()
    assert await waiting == await other
    assert len(await other) == 200


async def test_turns_pass_on_past_cancelled_waiters() -> None:
    """A call cancelled while waiting, even once handed the turn, passes it on."""
    turns = _incremental._Turns()
    holder, gone, next_one, last = object(), object(), object(), object()
    await turns.take(holder)
    cancelled = asyncio.create_task(turns.take(gone))
    waiting = asyncio.create_task(turns.take(next_one))
    await asyncio.sleep(0)
    cancelled.cancel()  # while waiting
    await asyncio.gather(cancelled, return_exceptions=True)
    handed = asyncio.create_task(turns.take(last))
    await asyncio.sleep(0)
    turns.give(holder)
    await waiting
    assert turns.owner is next_one
    turns.give(next_one)  # handed to ``last``, which is cancelled before it runs
    handed.cancel()
    await asyncio.gather(handed, return_exceptions=True)
    assert turns.owner is None
    await turns.take(holder)  # free again, at once
    assert turns.owner is holder
    skipped = asyncio.create_task(turns.take(gone))
    await asyncio.sleep(0)
    skipped.cancel()  # cancelled, and the turn given up before it could run
    turns.give(holder)
    assert turns.owner is None
    await asyncio.gather(skipped, return_exceptions=True)
    await turns.take(holder)
    turns.give(object())  # only the owner gives it up
    assert turns.owner is holder


def test_the_splitter_holds_about_one_slice_of_bytes() -> None:
    body = orjson.dumps(big_body(500))
    splitter = ArraySplitter(8192)
    most = total = 0
    for start in range(0, len(body), 4096):
        splitter.feed(body[start : start + 4096])
        total += sum(len(items) for _, items in splitter.slices())
        most = max(most, len(splitter._buf))
    total += sum(len(items) for _, items in splitter.close())
    assert total == splitter.count == 500
    assert most <= 8192 + 4096


# ------------------------------------------------------------------ over a real socket


def _entries_app(body: bytes, *, cut_first: int = 0) -> tuple[web.Application, list[int]]:
    """An entries endpoint answering ``body``; the first ``cut_first`` answers stop halfway."""
    calls: list[int] = []

    async def handler(request: web.Request) -> web.StreamResponse:
        calls.append(1)
        if len(calls) <= cut_first:
            resp = web.StreamResponse(headers={"Content-Type": "application/json"})
            resp.content_length = len(body)
            await resp.prepare(request)
            await resp.write(body[: len(body) // 2])
            assert request.transport is not None
            request.transport.close()
            return resp
        return web.Response(body=body, content_type="application/json")

    app = web.Application()
    app.router.add_post("/api/public/v1/season/{id}/entries", handler)
    return app, calls


@pytest.fixture
def small_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    """Answers over 64 KiB take the incremental path, in slices of 16 KiB."""
    monkeypatch.setattr(_incremental, "STREAM_THRESHOLD", 64 * 1024)
    monkeypatch.setattr(_incremental, "SLICE_BYTES", 16 * 1024)


@pytest.mark.usefixtures("small_threshold")
async def test_for_season_streams_a_big_answer_to_the_same_models() -> None:
    data = big_body(300)
    body = orjson.dumps(data)
    assert len(body) > 64 * 1024
    app, calls = _entries_app(body)
    seen: list[Any] = []
    real = StreamDecode.read_stream

    async def spy(self: StreamDecode, stream: Any) -> Any:
        out = await real(self, stream)
        seen.append(out)
        return out

    async with serve_app(app) as base, Client(base, token="t", rate_limit=False) as svc:
        StreamDecode.read_stream = spy  # type: ignore[method-assign]
        try:
            got = await svc.entries.for_season(7)
        finally:
            StreamDecode.read_stream = real  # type: ignore[method-assign]
    assert got == structure(data, list[m.Entry])
    assert len(calls) == 1
    [returned] = seen
    assert isinstance(returned, Sliced)  # structured as it streamed, not read whole
    assert returned.items is got


@pytest.mark.usefixtures("small_threshold", "no_backoff")
async def test_a_cut_mid_body_is_connection_lost_and_retried() -> None:
    body = orjson.dumps(big_body(300))
    app, calls = _entries_app(body, cut_first=1)
    async with serve_app(app) as base, Client(base, token="t", rate_limit=False) as svc:
        got = await svc.entries.for_season(7)
    assert len(got) == 300
    assert len(calls) == 2

    app, calls = _entries_app(body, cut_first=99)
    async with serve_app(app) as base, Client(base, token="t", rate_limit=False) as svc:
        with pytest.raises(ConnectionLostError):
            await svc.entries.for_season(7)
    assert len(calls) >= 2


@pytest.mark.usefixtures("small_threshold")
async def test_cancelling_mid_parse_leaves_nothing_running() -> None:
    body = orjson.dumps(big_body(2000))
    started = asyncio.Event()
    real = _incremental.structure_slice

    def noting(*args: Any) -> Any:
        started.set()
        return real(*args)

    app, _ = _entries_app(body)
    async with serve_app(app) as base, Client(base, token="t", rate_limit=False) as svc:
        _incremental.structure_slice = noting  # type: ignore[assignment]
        try:
            task = asyncio.create_task(svc.entries.for_season(7))
            await started.wait()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        finally:
            _incremental.structure_slice = real
        await asyncio.sleep(0.01)
        ours = [
            t
            for t in asyncio.all_tasks()
            if t is not asyncio.current_task() and "svc_async" in _code_file(t)
        ]
        assert ours == []
        assert len(await svc.entries.for_season(8)) == 2000  # the client still works


def _code_file(task: asyncio.Task[Any]) -> str:
    code = getattr(task.get_coro(), "cr_code", None)
    return "" if code is None else str(code.co_filename)


async def test_calls_in_flight_on_one_loop_share_the_threshold() -> None:
    headers = {"Content-Length": str(300 * 1024)}
    with StreamDecode(m.Entry, threshold=1 << 20, slice_bytes=256 * 1024) as alone:
        assert not alone.plan(headers)  # 300 KiB, alone: one-shot
    with (
        StreamDecode(m.Entry, threshold=1 << 20, slice_bytes=256 * 1024) as first,
        StreamDecode(m.Entry, threshold=1 << 20, slice_bytes=256 * 1024),
        StreamDecode(m.Entry, threshold=1 << 20, slice_bytes=256 * 1024),
        StreamDecode(m.Entry, threshold=1 << 20, slice_bytes=256 * 1024),
    ):
        assert first.plan(headers)  # four at once: from 256 KiB on
        assert first.slice_bytes == 256 * 1024  # slices are not shrunk
    assert not _incremental._ACTIVE  # nothing left counted on the loop
    with StreamDecode(m.Entry) as other:
        assert other.plan({})  # no length: maybe large
        assert other.plan({"Content-Length": "9", "Content-Encoding": "gzip"})


def _answers_app(*bodies: bytes) -> tuple[web.Application, list[int]]:
    """An entries endpoint giving ``bodies`` in turn (the last one from then on)."""
    calls: list[int] = []

    async def handler(request: web.Request) -> web.Response:
        calls.append(1)
        body = bodies[min(len(calls), len(bodies)) - 1]
        return web.Response(body=body, content_type="application/json")

    app = web.Application()
    app.router.add_post("/api/public/v1/season/{id}/entries", handler)
    return app, calls


@pytest.mark.usefixtures("small_threshold", "no_backoff")
async def test_a_malformed_big_body_is_retried_like_a_one_shot_one() -> None:
    body = orjson.dumps(big_body(300))
    broken = body[: len(body) // 2] + b",, " + body[len(body) // 2 :]
    app, calls = _answers_app(broken, body)
    async with serve_app(app) as base, Client(base, token="t", rate_limit=False) as svc:
        assert len(await svc.entries.for_season(7)) == 300
    assert len(calls) == 2

    app, calls = _answers_app(broken)
    async with serve_app(app) as base, Client(base, token="t", rate_limit=False) as svc:
        with pytest.raises(ResponseDecodeError, match="not valid JSON"):
            await svc.entries.for_season(7)
    assert len(calls) >= 2


@pytest.mark.usefixtures("small_threshold", "no_backoff")
@pytest.mark.parametrize("count", [3, 300])  # one-shot, then incremental
async def test_a_bad_value_raises_once_with_its_path_on_either_path(count: int) -> None:
    data = big_body(count)
    data[count - 2] = {**data[count - 2], "id": "not a number"}
    app, calls = _answers_app(orjson.dumps(data))
    async with serve_app(app) as base, Client(base, token="t", rate_limit=False) as svc:
        with pytest.raises(ResponseDecodeError) as caught:
            await svc.entries.for_season(7)
    assert caught.value.path == f"$[{count - 2}].id"
    assert len(calls) == 1  # a bad value is not retried, on either path
