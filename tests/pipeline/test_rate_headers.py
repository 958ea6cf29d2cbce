"""The pacer reads rate-limit headers as ``parse_rate_limit`` does, parsing only what changed."""

from __future__ import annotations

import pytest
from multidict import CIMultiDict, CIMultiDictProxy

from svc_async._pipeline import ratelimit
from svc_async._pipeline.ratelimit import _RateHeaders, parse_rate_limit

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
def test_each_answer_reads_as_parse_rate_limit_reads_it(step: float) -> None:
    clock, reader = _Wall(DATE_EPOCH), _RateHeaders()
    for _ in range(2):
        for headers in ANSWERS:
            clock.time += step  # an epoch reset is read against the time of each answer
            read = (reader.limit(headers), reader.reset(headers, clock))
            expected = parse_rate_limit(headers, clock.time)
            assert read == ((None, None) if expected is None else (expected.limit, expected.reset))


def test_an_unchanged_limit_or_reset_is_not_parsed_again(monkeypatch: pytest.MonkeyPatch) -> None:
    reader, clock = _RateHeaders(), _Wall(DATE_EPOCH)
    parsed: list[str | None] = []
    monkeypatch.setattr(ratelimit, "header_count", lambda raw: parsed.append(raw) or int(raw or 0))
    monkeypatch.setattr(
        ratelimit, "parse_reset", lambda raw, now, date=None: parsed.append(raw) or float(raw)
    )
    for headers in ANSWERS[:4]:
        reader.limit(headers), reader.reset(headers, clock)
    assert parsed == ["100", "60", "59"]  # the limit once, each reset once


def test_an_epoch_reset_is_read_again_on_every_answer() -> None:
    reader, clock = _RateHeaders(), _Wall(DATE_EPOCH)
    epoch = _headers(x_ratelimit_remaining="5", x_ratelimit_reset=str(int(DATE_EPOCH) + 90))
    first = reader.reset(epoch, clock)
    clock.time += 30
    assert (first, reader.reset(epoch, clock)) == (90.0, 60.0)
