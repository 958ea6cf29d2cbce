"""``Cutoffs``: many sends cut off at their own deadlines by one loop timer.

Unit tests run on looptime's virtual loop clock; the transport's tests use a real
loopback server that stalls (marked ``slow``), since there the cut must end real I/O.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
import yarl

from svc_async import (
    AiohttpTransport,
    MockTransport,
    Request,
    RequestTimeout,
    Response,
    Timeout,
)
from svc_async._transports.base import StreamingTransport
from svc_async._transports.cutoff import Cutoffs, cut_off

from ..conftest import serve_app


def _now() -> float:
    return asyncio.get_running_loop().time()


async def _guarded(cutoffs: Cutoffs, seconds: float, work: float, at_hand: bool = False) -> str:
    """Sleep ``work`` seconds under a cut of ``seconds``; say how it ended.

    ``at_hand``: arm with the running loop given, as the transport does.
    """
    cut = cutoffs.arm(seconds, asyncio.get_running_loop() if at_hand else None)
    try:
        await asyncio.sleep(work)
    except asyncio.CancelledError:
        if cutoffs.disarm(cut):
            return f"cut at {_now():g}"
        raise
    cutoffs.disarm(cut)
    return f"done at {_now():g}"


def _timers_of(cutoffs: Cutoffs, monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The times the running loop's timers of ``cutoffs`` are set for, as they are set."""
    loop = asyncio.get_running_loop()
    scheduled: list[float] = []
    call_at = loop.call_at

    def counting(when: float, callback: Any, *args: Any, **kwargs: Any) -> asyncio.TimerHandle:
        if getattr(callback, "__self__", None) is cutoffs:
            scheduled.append(when)
        return call_at(when, callback, *args, **kwargs)

    monkeypatch.setattr(loop, "call_at", counting)
    return scheduled


@pytest.mark.looptime
@pytest.mark.parametrize("at_hand", [False, True])
async def test_each_cut_fires_at_its_own_deadline_and_the_rest_finish(at_hand: bool) -> None:
    cutoffs = Cutoffs()
    ends = await asyncio.gather(
        _guarded(cutoffs, 3.0, 10.0, at_hand),
        _guarded(cutoffs, 1.0, 10.0, at_hand),
        _guarded(cutoffs, 5.0, 2.0, at_hand),
        _guarded(cutoffs, 2.0, 10.0, at_hand),
    )
    assert ends == ["cut at 3", "cut at 1", "done at 2", "cut at 2"]
    assert len(cutoffs) == 0


@pytest.mark.looptime
async def test_a_later_shorter_cut_moves_the_timer_earlier() -> None:
    cutoffs = Cutoffs()
    long = asyncio.create_task(_guarded(cutoffs, 60.0, 100.0))
    await asyncio.sleep(1.0)
    assert await _guarded(cutoffs, 0.5, 100.0) == "cut at 1.5"
    assert await long == "cut at 60"


@pytest.mark.looptime
async def test_many_cuts_in_flight_share_one_loop_timer(monkeypatch: pytest.MonkeyPatch) -> None:
    cutoffs = Cutoffs()
    scheduled = _timers_of(cutoffs, monkeypatch)
    ends = await asyncio.gather(*(_guarded(cutoffs, 30.0, 0.01 * i) for i in range(1, 101)))
    assert all(end.startswith("done") for end in ends)
    assert scheduled == [pytest.approx(30.0)]  # one timer for the hundred
    assert len(cutoffs) == 0


@pytest.mark.looptime
async def test_calls_one_after_another_share_the_timer_too(monkeypatch: pytest.MonkeyPatch) -> None:
    cutoffs = Cutoffs()
    scheduled = _timers_of(cutoffs, monkeypatch)
    for _ in range(50):  # 50 calls of 1 s, each under a 30 s cut
        assert (await _guarded(cutoffs, 30.0, 1.0)).startswith("done")
    # One timer for the first 30 s; when it fires it sets itself for the call then armed.
    assert scheduled == [30.0, pytest.approx(59.0)]
    await asyncio.sleep(60.0)  # nothing armed when that one fires: it stops
    assert len(scheduled) == 2 and len(cutoffs) == 0


@pytest.mark.looptime
async def test_another_cancellation_wins_over_a_cut_that_fired_too() -> None:
    cutoffs = Cutoffs()
    seen = []

    async def guarded() -> None:
        cut = cutoffs.arm(1.0)
        asyncio.get_running_loop().call_at(_now() + 1.0, task.cancel)  # in the same step
        try:
            await asyncio.sleep(10.0)
        except asyncio.CancelledError:
            seen.append((cut is not None and cut.fired, cutoffs.disarm(cut)))
            raise

    task = asyncio.create_task(guarded())
    with pytest.raises(asyncio.CancelledError):
        await task
    assert seen == [(True, False)]  # it fired, yet the other cancellation goes on
    assert _now() == 1.0


@pytest.mark.looptime
async def test_an_earlier_cancellation_is_not_a_timeout() -> None:
    cutoffs = Cutoffs()
    task = asyncio.create_task(_guarded(cutoffs, 1.0, 10.0))
    await asyncio.sleep(0.5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(cutoffs) == 0


@pytest.mark.looptime
async def test_a_swallowed_cut_leaves_the_task_uncancelled() -> None:
    cutoffs = Cutoffs()
    cut = cutoffs.arm(1.0)
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.sleep(5.0)
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 1
    assert cutoffs.disarm(cut)
    assert task.cancelling() == 0
    await asyncio.sleep(0.1)  # and the task goes on normally


def test_outside_a_task_nothing_is_armed() -> None:
    loop = asyncio.new_event_loop()
    try:
        cutoffs = Cutoffs()

        def arm() -> object:
            return cutoffs.arm(1.0)

        assert loop.run_until_complete(_in_callback(loop, arm)) is None
        assert cutoffs.disarm(None) is False
    finally:
        loop.close()


async def _in_callback(loop: asyncio.AbstractEventLoop, fn: Any) -> Any:
    done: asyncio.Future[Any] = loop.create_future()
    loop.call_soon(lambda: done.set_result(fn()))
    return await done


def test_used_on_a_second_loop_it_starts_afresh() -> None:
    cutoffs = Cutoffs()

    async def once() -> str:
        return await _guarded(cutoffs, 0.05, 1.0)

    assert asyncio.run(once()).startswith("cut")
    assert asyncio.run(once()).startswith("cut")
    assert len(cutoffs) == 0


# ------------------------------------------------------------------ the aiohttp transport


@contextlib.asynccontextmanager
async def _stalling_server() -> AsyncIterator[tuple[str, AiohttpTransport]]:
    """``/stall`` never answers (until the test ends); ``/ok`` answers at once; ``/drip``
    sends its headers at once and its body slowly. Yields its URL and a transport to
    send with, closed at the end."""
    from aiohttp import web

    release = asyncio.Event()

    async def stall(_: web.Request) -> web.Response:
        await release.wait()
        return web.json_response([])

    async def ok(_: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    async def drip(request: web.Request) -> web.StreamResponse:
        """Headers at once, then the body a few bytes every 50 ms (about 4 s in all)."""
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        response.content_length = 4 + 80 * 3 + 1
        await response.prepare(request)
        await response.write(b'["x"')
        for _ in range(80):
            await asyncio.sleep(0.05)
            await response.write(b',""')
        await response.write(b"]")
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_get("/stall", stall)
    app.router.add_get("/ok", ok)
    app.router.add_get("/drip", drip)
    async with serve_app(app) as url:
        transport = AiohttpTransport()
        try:
            async with asyncio.timeout(20):  # a cut that never fires fails the test, not CI
                yield url, transport
        finally:
            await transport.aclose()
            release.set()


def _get(base: str, path: str, total: float | None) -> Request:
    query = "?token=s3cret-query"  # a signed-URL style secret: never in the error
    return Request("GET", yarl.URL(base + path + query), timeout=Timeout(total=total))


@pytest.mark.slow
async def test_the_transport_cuts_each_stalled_send_at_its_own_total() -> None:
    async with _stalling_server() as (base, transport):

        async def timed(path: str, total: float | None) -> tuple[str, float]:
            start = _now()
            try:
                response = await transport.send(_get(base, path, total))
            except RequestTimeout as exc:
                assert "s3cret" not in str(exc)
                return str(exc), _now() - start
            return f"HTTP {response.status}", _now() - start

        results = await asyncio.gather(
            timed("/stall", 0.6),
            timed("/stall", 0.2),
            timed("/ok", 0.2),
            timed("/ok", None),
        )
        (long, long_s), (short, short_s), (ok, _), (unbounded, _) = results
        assert short.startswith("timeout on GET") and short.endswith("after 0.2s")
        assert long.endswith("after 0.6s")
        assert 0.2 <= short_s < 1.5 and 0.6 <= long_s < 3.0  # the stall is endless
        assert ok == unbounded == "HTTP 200"
        assert len(transport._cutoffs) == 0


@pytest.mark.slow
async def test_cancelling_a_send_is_a_cancellation_not_a_timeout() -> None:
    async with _stalling_server() as (base, transport):
        task = asyncio.create_task(transport.send(_get(base, "/stall", 30.0)))
        await asyncio.sleep(0.1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert len(transport._cutoffs) == 0
        # The transport goes on working after a cut and after a cancellation.
        with pytest.raises(RequestTimeout):
            await transport.send(_get(base, "/stall", 0.05))
        assert (await transport.send(_get(base, "/ok", 5.0))).json() == {"ok": True}


@pytest.mark.slow
async def test_a_body_that_drips_is_cut_at_the_total_after_its_headers_came() -> None:
    async with _stalling_server() as (base, transport):
        start = _now()
        with pytest.raises(RequestTimeout, match=r"after 0\.3s"):
            await transport.send(_get(base, "/drip", 0.3))
        assert 0.3 <= _now() - start < 2.0  # not the body's 4 s
        assert len(transport._cutoffs) == 0


@pytest.mark.parametrize("stream", [False, True], ids=["send", "stream"])
async def test_a_zero_total_cuts_a_transport_of_ones_own_at_once(stream: bool) -> None:
    """``Timeout(total=0)`` is no time at all, as the SDK's transports and the fake read
    it, not "no limit" (None is that): a transport of one's own is cut at once too."""

    async def handler(request: Request) -> Response:
        await asyncio.sleep(5)
        return Response(200, {"Content-Type": "application/json"}, b"{}")

    transport = cut_off(MockTransport(handler))  # as a client sends through it
    request = Request(
        "GET", yarl.URL("https://api.example/x"), timeout=Timeout(total=0, connect=None)
    )
    async with asyncio.timeout(2):  # a hang fails the test, not CI
        with pytest.raises(RequestTimeout):
            if stream:
                assert isinstance(transport, StreamingTransport)
                async with transport.stream(request) as response:
                    [chunk async for chunk in response.iter_chunks(1024)]
            else:
                await transport.send(request)
