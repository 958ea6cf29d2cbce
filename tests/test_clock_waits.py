"""Bounded waits on a clock (``clock.within``, ``until``, ``wait_tasks``) and ``_compat``.

A wait the SDK makes for its user follows the user's clock: with ``SystemClock`` it is
asyncio's own timer, and any other clock is waited on with its ``sleep``, so a clock that
is not the loop's moves it (here a hand-driven one: no real or loop time passes).
"""

from __future__ import annotations

import asyncio
import gc
import threading
import warnings
from collections.abc import Iterator

import pytest
import yarl
from aiohttp import web

from svc_async._transports.aiohttp import AiohttpTransport
from svc_async._transports.base import Request
from svc_async.clock import SYSTEM_CLOCK, until, wait_tasks, within


class HandClock:
    """A clock that moves only when the test says: ``advance(seconds)``."""

    def __init__(self) -> None:
        self.t = 1000.0
        self._moved = asyncio.Event()

    def now(self) -> float:
        return self.t

    def wall(self) -> float:
        return self.t

    async def sleep(self, seconds: float) -> None:
        end = self.t + seconds
        while self.t < end:
            await self._moved.wait()
            self._moved.clear()

    def advance(self, seconds: float) -> None:
        self.t += seconds
        self._moved.set()


async def _turns(n: int = 5) -> None:
    for _ in range(n):
        await asyncio.sleep(0)


async def test_within_follows_a_clock_that_is_not_the_loops() -> None:
    clock = HandClock()
    outcome: list[str] = []

    async def guarded() -> None:
        try:
            async with within(clock, 10) as timer:
                await asyncio.Event().wait()
        except TimeoutError:
            outcome.append(f"cut, expired={timer.expired()}")

    task = asyncio.create_task(guarded())
    await _turns()
    clock.advance(9.5)
    await _turns()
    assert outcome == []  # 9.5 of the clock's 10 seconds
    clock.advance(0.5)
    await asyncio.wait_for(task, 5)
    assert outcome == ["cut, expired=True"]


async def test_until_a_deadline_on_the_system_clock_is_the_loops_timer() -> None:
    deadline = SYSTEM_CLOCK.now() + 0.02
    with pytest.raises(TimeoutError):
        async with until(SYSTEM_CLOCK, deadline):
            await asyncio.sleep(5)
    assert SYSTEM_CLOCK.now() >= deadline


async def test_a_block_that_ends_in_time_is_not_cut_and_none_means_no_limit() -> None:
    clock = HandClock()
    async with within(clock, 10) as timer:
        await _turns()
    assert not timer.expired()
    async with within(clock, None):
        await _turns()
    clock.advance(20)
    await _turns()  # the alarm was cancelled: nothing fires late


async def test_wait_tasks_returns_the_stragglers_when_the_clock_says_so() -> None:
    clock = HandClock()
    quick = asyncio.create_task(_turns(1))
    slow = asyncio.create_task(asyncio.Event().wait())
    waiting = asyncio.create_task(wait_tasks(clock, [quick, slow], 3))
    await _turns()
    assert not waiting.done()
    clock.advance(3)
    done, pending = await asyncio.wait_for(waiting, 5)
    assert done == {quick} and pending == {slow} and not slow.cancelled()
    slow.cancel()
    assert await wait_tasks(clock, [], 1) == (set(), set())


async def test_wait_tasks_ends_when_the_tasks_do() -> None:
    clock = HandClock()
    tasks = [asyncio.create_task(_turns(2)) for _ in range(3)]
    done, pending = await asyncio.wait_for(wait_tasks(clock, tasks, 60), 5)
    assert done == set(tasks) and pending == set()


async def _ok(_: web.Request) -> web.Response:
    return web.Response(text="ok")


@pytest.fixture
def loopback() -> Iterator[yarl.URL]:
    """A server on its own thread and loop, alive across the test's ``asyncio.run``s."""
    ready = threading.Event()
    box: dict[str, object] = {}

    async def main() -> None:
        app = web.Application()
        app.router.add_get("/", _ok)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        stop = asyncio.Event()
        box.update(port=runner.addresses[0][1], stop=stop, loop=asyncio.get_running_loop())
        ready.set()
        await stop.wait()
        await runner.cleanup()

    thread = threading.Thread(target=asyncio.run, args=(main(),), daemon=True)
    thread.start()
    assert ready.wait(10)
    yield yarl.URL(f"http://127.0.0.1:{box['port']}/")
    loop, stop = box["loop"], box["stop"]
    assert isinstance(loop, asyncio.AbstractEventLoop) and isinstance(stop, asyncio.Event)
    loop.call_soon_threadsafe(stop.set)
    thread.join(10)


@pytest.mark.slow
def test_a_session_of_a_closed_loop_is_dropped_without_warnings(loopback: yarl.URL) -> None:
    """A second ``asyncio.run``: the first loop's keep-alive socket is closed through
    ``_compat.abandon`` (nothing left "unclosed" for the collector to warn about)."""
    transport = AiohttpTransport()

    async def once() -> int:
        return (await transport.send(Request("GET", loopback))).status

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert asyncio.run(once()) == 200
        assert asyncio.run(once()) == 200  # the first loop is closed: its session abandoned

        async def close() -> None:
            await transport.aclose()

        asyncio.run(close())
        gc.collect()
    assert [str(w.message) for w in caught if "nclosed" in str(w.message)] == []
