"""The one clock: the system clock's timeline, the virtual clock, and who reads which."""

from __future__ import annotations

import asyncio
import time

import pytest

from svc_async import Client, Clock, MockTransport, Pacer, SystemClock, json_response
from svc_async.testing import FakeClock, FakeService, VirtualClock


async def test_the_system_clock_is_on_the_loops_timeline() -> None:
    clock = SystemClock()
    loop = asyncio.get_running_loop()
    before = loop.time()
    now = clock.now()
    assert before <= now <= loop.time()
    assert abs(clock.wall() - time.time()) < 1.0
    assert isinstance(clock, Clock)


def test_the_system_clock_reads_monotonic_time_outside_a_loop() -> None:
    before = time.monotonic()
    assert before <= SystemClock().now() <= time.monotonic()


class _Shifted(asyncio.SelectorEventLoop):
    """A loop whose timeline is an hour ahead of the monotonic clock."""

    def time(self) -> float:
        return super().time() + 3600.0


def test_the_system_clock_follows_the_loop_that_runs_now() -> None:
    clock = SystemClock()
    for factory in (asyncio.new_event_loop, _Shifted, asyncio.new_event_loop):
        with asyncio.Runner(loop_factory=factory) as runner:
            loop = runner.get_loop()

            async def read() -> float:
                return clock.now()

            before = loop.time()
            assert before <= runner.run(read()) <= loop.time()
    assert clock.now() < time.monotonic() + 1  # outside a loop again: monotonic time


@pytest.mark.looptime
async def test_a_virtual_hour_takes_no_real_time() -> None:
    clock = VirtualClock(start=1_700_000_000.0)
    started, real = clock.now(), time.monotonic()
    assert clock.wall() == 1_700_000_000.0
    await clock.sleep(3600)
    assert clock.now() - started == pytest.approx(3600)
    assert clock.wall() == pytest.approx(1_700_003_600.0)
    assert time.monotonic() - real < 5.0  # generous: a loaded machine still takes no hour


@pytest.mark.looptime
async def test_concurrent_sleepers_wake_in_the_order_of_their_deadlines() -> None:
    clock = VirtualClock()
    woke: list[tuple[str, float]] = []
    start = clock.now()

    async def sleeper(name: str, seconds: float) -> None:
        await clock.sleep(seconds)
        woke.append((name, round(clock.now() - start, 6)))

    await asyncio.gather(sleeper("c", 30), sleeper("a", 1), sleeper("b", 2.5), sleeper("a2", 1))
    assert woke == [("a", 1), ("a2", 1), ("b", 2.5), ("c", 30)]


@pytest.mark.looptime
async def test_asyncio_timeouts_and_the_virtual_clock_share_one_timeline() -> None:
    clock = VirtualClock()
    start = clock.now()
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(5):
            await clock.sleep(60)
    assert clock.now() - start == pytest.approx(5)


async def test_a_virtual_clock_refuses_a_loop_on_real_time() -> None:
    with pytest.raises(RuntimeError, match="looptime"):
        VirtualClock().now()


def test_a_client_takes_only_a_clock() -> None:
    with pytest.raises(TypeError, match="Clock"):
        Client("https://v.example", token="t", clock=time.monotonic)  # type: ignore[arg-type]


def test_the_clients_pacer_runs_on_the_clients_clock() -> None:
    clock = VirtualClock()
    svc = Client("https://v.example", token="t", clock=clock)
    assert svc.clock is clock and svc.jobs.clock is clock
    given = Pacer()
    Client("https://v.example", token="t", clock=clock, rate_limit=given)
    assert given.clock is clock  # a pacer on the default clock joins the client's
    own = Pacer(clock=SystemClock())
    Client("https://v.example", token="t", clock=clock, rate_limit=own)
    assert own.clock is not clock  # one given its own clock keeps it


class _HeardPacer(Pacer):
    """A pacer that keeps the time each ``admit`` was handed."""

    def __init__(self, clock: Clock | None = None) -> None:
        super().__init__(clock=clock)
        self.handed: list[float | None] = []

    def admit(self, now: float | None = None) -> bool:
        self.handed.append(now)
        return super().admit(now)


@pytest.mark.looptime
async def test_the_pipeline_hands_a_pacer_on_its_clock_the_time_it_read() -> None:
    # One clock read per call less: the pacer is told the time the call started at.
    clock = VirtualClock()
    for pacer, told in ((_HeardPacer(), True), (_HeardPacer(SystemClock()), False)):
        transport = MockTransport(lambda request: json_response([]))
        async with Client(
            "https://v.example", token="t", transport=transport, clock=clock, rate_limit=pacer
        ) as svc:
            await clock.sleep(5.0)
            at = clock.now()
            await svc.orgs.list()
        assert pacer.handed == ([at] if told else [None])  # another clock reads its own


@pytest.mark.looptime
async def test_the_fake_follows_the_clock_it_is_given() -> None:
    clock = VirtualClock(start=1_700_000_000.0)
    fake = FakeService(clock=clock)
    assert isinstance(fake.clock, FakeClock)
    before = fake.now()
    await clock.sleep(90)
    assert fake.now() - before == pytest.approx(90)


@pytest.mark.looptime
async def test_backoff_and_retry_after_dates_are_on_the_clients_clock() -> None:
    clock = VirtualClock(start=1_700_000_000.0)
    answers = iter(
        [
            json_response([], status=503, headers={"Retry-After": "Tue, 14 Nov 2023 22:14:20 GMT"}),
            json_response([]),
        ]
    )
    transport = MockTransport(lambda r: next(answers))
    async with Client("https://v.example", token="t", transport=transport, clock=clock) as svc:
        start = clock.now()
        await svc.seasons.list()
        # 1_700_000_060 is 22:14:20 GMT: the date is one virtual minute away; the retry
        # waits that plus its jittered backoff (at most 0.5 s after a first attempt).
        assert 60 - 0.01 <= clock.now() - start <= 60.5 + 0.01
    assert len(transport.requests) == 2
