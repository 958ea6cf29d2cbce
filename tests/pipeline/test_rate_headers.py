"""The pacer reads rate-limit headers as ``parse_rate_limit`` does, answer after answer."""

from __future__ import annotations

import pytest
from multidict import CIMultiDict, CIMultiDictProxy

from svc_async._pipeline.ratelimit import Pacer, parse_rate_limit

DATE = "Mon, 23 Nov 2026 12:00:00 GMT"
DATE_EPOCH = 1_795_435_200.0  # DATE as an epoch time


class _Wall:
    """A clock whose wall time the test sets (nothing else is read)."""

    def __init__(self, wall: float) -> None:
        self.time = wall

    def now(self) -> float:
        return 0.0

    def wall(self) -> float:
        return self.time

    async def sleep(self, seconds: float) -> None:
        raise AssertionError("not used")


def _headers(**fields: str) -> CIMultiDictProxy[str]:
    return CIMultiDictProxy(CIMultiDict({k.replace("_", "-"): v for k, v in fields.items()}))


ANSWERS = [
    _headers(x_ratelimit_limit="100", x_ratelimit_remaining="99", x_ratelimit_reset="60"),
    _headers(x_ratelimit_limit="100", x_ratelimit_remaining="99", x_ratelimit_reset="60"),
    _headers(x_ratelimit_limit="100", x_ratelimit_remaining="98", x_ratelimit_reset="60"),
    _headers(x_ratelimit_limit="100", x_ratelimit_remaining="97", x_ratelimit_reset="59"),
    _headers(x_ratelimit_limit="200", x_ratelimit_remaining="97", x_ratelimit_reset="59"),
    _headers(x_ratelimit_remaining="97", x_ratelimit_reset="59"),
    _headers(x_ratelimit_limit="200"),
    _headers(Content_Type="application/json"),
    _headers(x_ratelimit_limit="-1", x_ratelimit_remaining="junk", x_ratelimit_reset="junk"),
    _headers(x_ratelimit_limit="-1", x_ratelimit_remaining="junk", x_ratelimit_reset="junk"),
    _headers(x_ratelimit_remaining="5", x_ratelimit_reset=" 30 "),
    _headers(x_ratelimit_remaining="5", x_ratelimit_reset="nan"),
    _headers(x_ratelimit_remaining="5", x_ratelimit_reset=str(int(DATE_EPOCH) + 90)),
    _headers(x_ratelimit_remaining="5", x_ratelimit_reset=str(int(DATE_EPOCH) + 90), Date=DATE),
    _headers(x_ratelimit_remaining="5", x_ratelimit_reset=str(int(DATE_EPOCH) + 90)),
    _headers(x_ratelimit_remaining="5", x_ratelimit_reset="60"),
]


@pytest.mark.parametrize("step", [0.0, 7.0])
def test_each_answer_reads_as_parse_rate_limit_reads_it(
    step: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the pacer learns from each answer is ``parse_rate_limit``'s reading of it: an
    epoch reset against the wall time of that answer, junk and absent values as None."""
    clock = _Wall(DATE_EPOCH)
    pacer = Pacer(clock=clock)
    learned: list[tuple[int | None, int, float | None]] = []
    monkeypatch.setattr(pacer, "_learn", lambda *read: learned.append(read))
    expected = []
    for _ in range(2):
        for headers in ANSWERS:
            clock.time += step
            pacer.count_sent()
            pacer.release(headers)
            rate = parse_rate_limit(headers, clock.time)
            if rate is not None and rate.remaining is not None:
                expected.append((rate.limit, rate.remaining, rate.reset))
    assert learned == expected


def test_an_epoch_reset_is_read_again_on_every_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = _Wall(DATE_EPOCH)
    pacer = Pacer(clock=clock)
    resets: list[float | None] = []
    monkeypatch.setattr(pacer, "_learn", lambda limit, remaining, reset: resets.append(reset))
    epoch = _headers(x_ratelimit_remaining="5", x_ratelimit_reset=str(int(DATE_EPOCH) + 90))
    for _ in range(2):
        pacer.count_sent()
        pacer.release(epoch)
        clock.time += 30
    assert resets == [90.0, 60.0]
