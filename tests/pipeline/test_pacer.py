"""The pacer's own rules, without a network: admit (the fast path), acquire, release."""

from __future__ import annotations

import asyncio

import pytest
from multidict import CIMultiDict, CIMultiDictProxy

from svc_async import Pacer
from svc_async.errors import PacingExceedsDeadline


def _headers(limit: int, remaining: int, reset: float) -> CIMultiDictProxy[str]:
    return CIMultiDictProxy(
        CIMultiDict(
            {
                "x-ratelimit-limit": str(limit),
                "x-ratelimit-remaining": f" {remaining} ",  # whitespace is allowed
                "x-ratelimit-reset": str(reset),
            }
        )
    )


def test_the_first_call_probes_and_the_next_waits_for_its_answer() -> None:
    pacer = Pacer()
    assert pacer.admit() is True  # nothing known: the first call learns the budget
    assert pacer.admit() is False  # the others wait briefly for its answer
    pacer.release(_headers(10, 9, 60), 200)
    assert pacer.admit() is True  # known budget: calls go at once


def test_admit_counts_each_call_and_refuses_once_the_window_is_spent() -> None:
    pacer = Pacer()
    assert pacer.admit()
    pacer.release(_headers(3, 2, 60), 200)
    assert [pacer.admit(), pacer.admit(), pacer.admit()] == [True, True, False]
    assert "in_flight=2" in repr(pacer)
    pacer.release(None)  # a call that got no answer still ends
    assert "in_flight=1" in repr(pacer)


async def test_acquire_raises_at_once_when_the_window_ends_after_the_deadline() -> None:
    pacer = Pacer()
    assert pacer.admit()
    pacer.release(_headers(1, 0, 30), 200)
    assert pacer.admit() is False
    loop = asyncio.get_running_loop()
    started = loop.time()
    with pytest.raises(PacingExceedsDeadline) as info:
        await pacer.acquire(loop.time() + 1.0, loop)
    assert loop.time() - started < 0.5
    assert 29.0 < info.value.wait <= 30.1


async def test_acquire_lets_a_call_through_when_admit_would() -> None:
    pacer = Pacer()
    assert pacer.admit()
    pacer.release(_headers(5, 4, 60), 200)
    await asyncio.wait_for(pacer.acquire(), 0.5)
    assert "in_flight=1" in repr(pacer)


class _SteppedClock:
    """Time moves only when a task sleeps, in whole microseconds (a virtual or coarse clock)."""

    def __init__(self) -> None:
        self.t = 1000.0
        self.sleeps = 0

    def now(self) -> float:
        return self.t

    def wall(self) -> float:
        return 1_700_000_000.0 + self.t

    async def sleep(self, seconds: float) -> None:
        self.sleeps += 1
        self.t = round(self.t + seconds, 6)
        await asyncio.sleep(0)


async def test_spreading_calls_on_a_coarse_clock_never_spins() -> None:
    # A slot a rounding error away used to be slept for (a sleep that cannot move a
    # coarse clock), forever: spread calls must each cost one sleep at most.
    clock = _SteppedClock()
    pacer = Pacer(clock=clock)
    await pacer.acquire()
    pacer.release(_headers(30, 29, 1.0), 200)
    await pacer.acquire()
    pacer.release(_headers(30, 20, 1.0), 200)  # below its own count: someone else spends
    assert pacer.shared
    for _ in range(40):
        async with asyncio.timeout(5):
            await pacer.acquire()
        pacer.release(None)
    assert clock.sleeps <= 40 * 2


class _FrozenClock:
    """Time stands still and a sleep never ends: only an event can wake a waiter."""

    def now(self) -> float:
        return 100.0

    def wall(self) -> float:
        return 1.7e9

    async def sleep(self, seconds: float) -> None:
        await asyncio.get_running_loop().create_future()


def _answered_pacer(limit: int = 1000, reset: float = 60, clock: object = None) -> Pacer:
    """A pacer that has read its first answer: ``limit - 1`` left, none in flight (alone
    and, for a limit of 33 or more, far from the end)."""
    pacer = Pacer(clock=clock) if clock is not None else Pacer()  # type: ignore[arg-type]
    assert pacer.admit()
    pacer.release(_headers(limit, limit - 1, reset), 200)
    return pacer


def _shared_pacer(limit: int, remaining: int, clock: object = None) -> Pacer:
    """A pacer that has seen another client spend from its budget."""
    pacer = _answered_pacer(limit, clock=clock)
    assert pacer.admit()
    pacer.release(_headers(limit, remaining, 60), 200)  # far more spent than sent
    assert pacer.shared
    return pacer


def test_another_spender_does_not_cap_calls_while_the_budget_is_far_above_them() -> None:
    # The old rule held a shared budget to 2 calls in flight, polling every 5 ms, for
    # good: a client sharing 1,000 calls a minute with a dashboard ran 2 at a time.
    pacer = _shared_pacer(1000, 900)
    assert all(pacer.admit() for _ in range(64))
    assert "in_flight=64" in repr(pacer)


def test_near_the_windows_end_a_shared_budget_is_spread() -> None:
    pacer = _shared_pacer(30, 16)  # 2 calls of our own, 12 by others: 7 spenders' worth
    assert pacer.spenders == 7.0
    admitted = [pacer.admit() for _ in range(8)]
    assert admitted[0] and not all(admitted)  # this client's share, not a burst


def test_admit_goes_by_the_time_it_is_handed() -> None:
    pacer = Pacer(clock=_FrozenClock())  # its own clock says 100 s, for good
    assert pacer.admit()
    pacer.release(_headers(1, 0, 60), 200)  # spent until 160 s
    assert pacer.admit() is False
    assert pacer.admit(159.0) is False
    assert pacer.admit(161.0) is True  # handed a time past the window: the budget is back


class _CountedClock:
    """A clock the test moves, counting reads of ``now``."""

    def __init__(self) -> None:
        self.t, self.reads = 100.0, 0

    def now(self) -> float:
        self.reads += 1
        return self.t

    def wall(self) -> float:
        return 1.7e9

    async def sleep(self, seconds: float) -> None:
        raise AssertionError("not used")


def test_the_window_ends_at_the_earliest_end_its_answers_tell() -> None:
    # A budget of 30: near its end from the start, so every answer is read.
    clock = _CountedClock()
    pacer = _answered_pacer(30, clock=clock)  # ends at 160 s
    clock.t = 130.0
    for remaining in (28, 27):
        assert pacer.admit(clock.t)
        reads = clock.reads
        pacer.release(_headers(30, remaining, 60), 200)  # the same reset, said later
        assert clock.reads == reads  # it cannot end sooner: the clock is not read
    assert pacer.admit(160.0) and "remaining=26" in repr(pacer)
    pacer.release(_headers(30, 26, 60), 200)
    clock.t = 160.1
    assert pacer.admit(clock.t) and "remaining=29" in repr(pacer)  # a new window
    reads = clock.reads
    pacer.release(_headers(30, 29, 60), 200)  # ends at 220 s
    assert clock.reads == reads + 1  # the same reset, but a new window has no end yet
    assert pacer.admit(clock.t) and pacer.admit(clock.t)
    pacer.release(_headers(30, 28, 10), 200)  # fewer seconds: the end comes sooner
    assert pacer.admit(170.1) and "remaining=26" in repr(pacer)
    assert pacer.admit(170.2) and "remaining=27" in repr(pacer)  # new: 30, 2 in flight, 1


async def test_a_wait_ends_when_an_answer_comes_not_by_polling() -> None:
    pacer = Pacer(clock=_FrozenClock())
    assert pacer.admit()  # the first call learns the budget; the next waits for it
    waiter = asyncio.create_task(pacer.acquire())
    await asyncio.sleep(0)
    assert not waiter.done() and pacer.waits == 1
    pacer.release(_headers(10, 9, 60), 200)  # the answer wakes it (time stands still)
    await asyncio.wait_for(waiter, 1.0)
    assert pacer.waits == 1  # woken once, never polled


@pytest.mark.parametrize("limit", [32, 1000])
def test_alone_and_far_from_the_end_the_first_answer_that_tells_of_another_is_read(
    limit: int,
) -> None:
    pacer = _answered_pacer(limit)
    assert pacer.admit()
    pacer.release(_headers(limit, 10, 60), 200)  # someone else spent most of it
    assert pacer.shared  # every answer is read: the other spender is seen at once


def test_a_refusal_is_read_however_far_the_end_seemed() -> None:
    pacer = _answered_pacer()
    assert pacer.admit()
    pacer.release(_headers(1000, 0, 30), 429)
    assert pacer.shared and not pacer.admit()  # nothing left until the reset


def test_once_the_budget_is_shared_every_answer_is_read() -> None:
    pacer = _shared_pacer(1000, 900)
    before = pacer.spenders
    assert pacer.admit()
    pacer.release(_headers(1000, 700, 60), 200)  # 200 more spent by the others
    assert pacer.spenders > before


def test_the_first_answer_of_a_new_window_is_read_however_far_its_end() -> None:
    clock = _CountedClock()
    pacer = _answered_pacer(reset=10, clock=clock)  # ends at 110 s
    clock.t = 111.0
    assert pacer.admit(clock.t) and "remaining=999" in repr(pacer)  # a new window
    pacer.release(_headers(1000, 999, 60), 200)  # ends at 171 s: read, though far
    assert pacer.admit(171.2) and "remaining=999" in repr(pacer)  # the next one


def test_a_check_on_another_spender_ends_with_its_answer_however_far_the_end() -> None:
    pacer = Pacer()
    assert pacer.admit()
    pacer.release(_headers(1000, 500, 60), 200)  # 499 spent by someone else
    assert pacer.admit()  # one call goes alone to tell if they still spend
    assert not pacer.admit()  # the others wait for its answer
    pacer.release(_headers(1000, 499, 60), 200)  # they do not: read, though far
    assert pacer.admit() and pacer.admit()  # calls go together again


def test_without_a_limit_the_budget_is_learnt_again_from_the_next_answer() -> None:
    clock = _CountedClock()
    pacer = Pacer(clock=clock)
    no_limit = {"x-ratelimit-remaining": "999", "x-ratelimit-reset": "10"}
    assert pacer.admit(clock.t)
    pacer.release(CIMultiDictProxy(CIMultiDict(no_limit)), 200)  # far: ends at 110 s
    clock.t = 111.0
    assert pacer.admit(clock.t) and "remaining=None" in repr(pacer)  # nothing assumed
    pacer.release(CIMultiDictProxy(CIMultiDict(no_limit)), 200)
    assert "remaining=999" in repr(pacer)  # read at once, though it was far


def test_after_a_refusal_every_answer_is_read() -> None:
    pacer = _answered_pacer()
    assert pacer.admit() and pacer.admit()
    pacer.release(_headers(1000, 0, 30), 429)  # someone else spent it all
    pacer.release(_headers(1000, 500, 30), 200)  # their window came back: read at once
    assert pacer.admit()
