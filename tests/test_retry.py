"""RetryPolicy in the pipeline: what is retried, how often, how long it waits."""

from __future__ import annotations

import asyncio
import email.utils
import logging
import random
from typing import Any

import attrs
import pytest

from svc_async import (
    APIError,
    Client,
    ConnectError,
    ConnectionLostError,
    MockTransport,
    RateLimitError,
    Request,
    RequestTimeout,
    Response,
    ResponseDecodeError,
    RetryBudget,
    RetryPolicy,
    ServerError,
    json_response,
)
from svc_async.retry import (
    MAX_SERVER_WAIT,
    RETRYABLE_STATUSES,
    parse_reset,
    parse_retry_after,
    server_wait,
)

from .conftest import load
from .test_examples import example_request

FAST = RetryPolicy(attempts=4, wait_initial=0.0, wait_max=0.0)
NOW = 1_700_000_000.0


class _Failing:
    """Answers ``failures`` times with ``status`` (or raises ``exc``), then succeeds."""

    def __init__(
        self,
        failures: int,
        *,
        status: int = 503,
        exc: Exception | None = None,
        headers: dict[str, str] | None = None,
        answer: Any = None,
    ) -> None:
        self.failures = failures
        self.status = status
        self.exc = exc
        self.headers = headers or {}
        self.answer = [] if answer is None else answer
        self.calls = 0

    def __call__(self, request: Request) -> Response:
        self.calls += 1
        if self.calls <= self.failures:
            if self.exc is not None:
                raise self.exc
            return Response(status=self.status, headers=self.headers, content=b"<html>oops</html>")
        return json_response(self.answer)


def _client(handler: Any, retry: RetryPolicy = FAST, **kw: Any) -> Client:
    return Client(
        "https://v.example", token="t", transport=MockTransport(handler), retry=retry, **kw
    )


@pytest.mark.parametrize("status", range(100, 600))
async def test_status_matrix_reads(status: int) -> None:
    handler = _Failing(1, status=status)
    async with _client(handler) as svc:
        if 200 <= status < 300:
            # A 2xx with an HTML body is "not JSON": retried like a cut-off body.
            assert await svc.seasons.list() == []
            assert handler.calls == 2
            return
        if status in RETRYABLE_STATUSES:
            assert await svc.seasons.list() == []
            assert handler.calls == 2
        else:
            with pytest.raises(APIError) as info:
                await svc.seasons.list()
            assert info.value.status == status
            assert handler.calls == 1


@pytest.mark.parametrize("status", [s for s in range(300, 600) if s not in (429, 503)])
async def test_status_matrix_creates_never_blindly_repost(status: int) -> None:
    handler = _Failing(1, status=status)
    async with _client(handler, creation_tags=False) as svc:
        with pytest.raises(APIError):
            await svc.jobs.create(example_request())
    assert handler.calls == 1


@pytest.mark.parametrize("status", [429, 503])
async def test_creates_repost_after_a_refusal_before_processing(status: int) -> None:
    # 429 and 503 mean the service (or its gateway) refused before doing anything.
    handler = _Failing(1, status=status, answer=load("create-verification-job.response.json"))
    async with _client(handler, creation_tags=False) as svc:
        await svc.jobs.create(example_request())
    assert handler.calls == 2


@pytest.mark.parametrize("k", [0, 1, 2, 3])
@pytest.mark.parametrize(
    "failure",
    [
        {"status": 502},
        {"status": 429},
        {"exc": ConnectionLostError("reset")},
        {"exc": ConnectError("refused")},
        {"exc": RequestTimeout("slow")},
    ],
)
async def test_k_failures_give_k_plus_one_requests(k: int, failure: dict[str, Any]) -> None:
    handler = _Failing(k, **failure)
    async with _client(handler) as svc:
        assert await svc.seasons.list() == []
    assert handler.calls == k + 1


async def test_attempts_are_bounded() -> None:
    handler = _Failing(10, status=503)
    async with _client(handler) as svc:
        with pytest.raises(ServerError):
            await svc.seasons.list()
    assert handler.calls == FAST.attempts


async def test_retries_off() -> None:
    handler = _Failing(1, exc=ConnectionLostError("reset"))
    async with _client(handler, retry=RetryPolicy(attempts=1)) as svc:
        with pytest.raises(ConnectionLostError):
            await svc.seasons.list()
    assert handler.calls == 1


async def test_per_call_policy_overrides_client_policy() -> None:
    handler = _Failing(2, status=503)
    async with _client(handler, retry=RetryPolicy(attempts=1)) as svc:
        assert await svc.seasons.list(retry=FAST) == []
    assert handler.calls == 3


async def test_malformed_json_is_retried_for_reads_but_not_forever() -> None:
    def handler(request: Request) -> Response:
        return Response(status=200, content=b'[{"id": 1,')

    async with _client(handler) as svc:
        with pytest.raises(ResponseDecodeError):
            await svc.seasons.list()


def test_backoff_schedule_with_pinned_jitter() -> None:
    policy = RetryPolicy(wait_initial=0.5, wait_max=8.0)
    rng = random.Random(42)
    got = [round(policy.backoff(n, rng), 6) for n in range(1, 7)]
    check = random.Random(42)
    ceilings = [0.5, 1.0, 2.0, 4.0, 8.0, 8.0]
    assert got == [round(check.uniform(0, c), 6) for c in ceilings]
    assert all(0 <= g <= c for g, c in zip(got, ceilings, strict=True))
    no_jitter = RetryPolicy(wait_initial=0.5, wait_max=8.0, wait_jitter=0.0)
    assert [no_jitter.backoff(n) for n in range(1, 7)] == ceilings


def test_partial_jitter_draws_only_the_top_fraction_of_each_ceiling() -> None:
    policy = RetryPolicy(wait_initial=1.0, wait_max=4.0, wait_jitter=0.25)
    rng = random.Random(7)
    for attempt, ceiling in [(1, 1.0), (2, 2.0), (3, 4.0), (9, 4.0)]:
        draws = [policy.backoff(attempt, rng) for _ in range(200)]
        assert min(draws) >= ceiling * 0.75
        assert max(draws) <= ceiling
        assert max(draws) - min(draws) > ceiling * 0.2  # it does vary


def test_retry_and_poll_policies_speak_the_same_backoff_words() -> None:
    from svc_async.resources.polling import PollPolicy

    words = {"wait_initial", "wait_exp_base", "wait_max", "wait_jitter"}
    assert words <= {f.name for f in attrs.fields(RetryPolicy)}
    assert words | {"timeout"} <= {f.name for f in attrs.fields(PollPolicy)}
    # A call's bound is the call's (or the client's) timeout, never the retry policy's.
    assert "timeout" not in {f.name for f in attrs.fields(RetryPolicy)}


@pytest.mark.parametrize(
    ("old", "new"), [("jitter", "wait_jitter"), ("max_attempts", "attempts"), ("timeout", "")]
)
def test_the_removed_spellings_are_type_errors_naming_them(old: str, new: str) -> None:
    """Removed before 0.1.0 (CHANGELOG.md says what to write instead): a clear TypeError."""
    with pytest.raises(TypeError, match=rf"unexpected keyword argument '{old}'"):
        RetryPolicy(**{old: 1})
    policy = RetryPolicy()
    with pytest.raises(AttributeError):
        getattr(policy, old)
    if new:
        assert getattr(policy, new) is not None


@pytest.mark.parametrize("bad", [-0.1, 1.5, True])
def test_wait_jitter_outside_zero_to_one_is_refused(bad: float) -> None:
    with pytest.raises(ValueError, match="wait_jitter"):
        RetryPolicy(wait_jitter=bad)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("3", 3.0),
        ("0", 0.0),
        ("1.5", 1.5),
        ("-5", 0.0),
        ("86400", 86400.0),
        (email.utils.formatdate(NOW + 30, usegmt=True), 30.0),
        (email.utils.formatdate(NOW - 30, usegmt=True), 0.0),
        (str(int(NOW + 12)), 12.0),  # an epoch time
        ("soon", None),
        ("", None),
        (None, None),
        ("nan", None),
    ],
)
def test_retry_after_parsing(value: str | None, expected: float | None) -> None:
    got = parse_retry_after(value, now=NOW)
    assert got == pytest.approx(expected, abs=1.0) if expected is not None else got is None


@pytest.mark.parametrize(
    ("value", "expected"),
    [("60", 60.0), ("0", 0.0), ("-1", None), ("x", None), (str(int(NOW + 45)), 45.0), (None, None)],
)
def test_reset_parsing(value: str | None, expected: float | None) -> None:
    got = parse_reset(value, now=NOW)
    assert got == pytest.approx(expected, abs=1.0) if expected is not None else got is None


def _date(at: float) -> str:
    return email.utils.formatdate(at, usegmt=True)


@pytest.mark.parametrize("skew", [-3600.0, 0.0, 3600.0])
def test_a_date_is_read_against_the_answers_own_clock(skew: float) -> None:
    # The server's Date and its Retry-After come from one clock: the wait is right
    # however far the client's clock is off.
    headers = {"Date": _date(NOW), "Retry-After": _date(NOW + 30)}
    assert server_wait(429, headers, now=NOW + skew) == pytest.approx(30)
    assert parse_retry_after(headers["Retry-After"], now=NOW + skew, date=headers["Date"]) == (
        pytest.approx(30)
    )
    epoch = {"Date": _date(NOW), "x-ratelimit-reset": str(int(NOW + 45))}
    assert server_wait(429, epoch, now=NOW + skew) == pytest.approx(45)
    assert parse_reset(epoch["x-ratelimit-reset"], now=NOW + skew, date=epoch["Date"]) == (
        pytest.approx(45)
    )


def test_without_a_date_header_the_clients_clock_is_used() -> None:
    assert server_wait(429, {"Retry-After": _date(NOW + 30)}, now=NOW) == pytest.approx(30)
    # The client's clock an hour fast and no Date: the date looks past, no usable wait.
    assert server_wait(429, {"Retry-After": _date(NOW + 30)}, now=NOW + 3600) is None


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"Retry-After": "3"}, 3.0),
        ({"Retry-After": "0"}, None),
        ({"Retry-After": "-5"}, None),
        ({"Retry-After": _date(NOW - 30)}, None),
        ({"Retry-After": "soon"}, None),
        ({"Retry-After": "1e999"}, None),
        ({}, None),
        ({"Retry-After": "100"}, 100.0),
        ({"Retry-After": "172800"}, 172800.0),  # believed: the decision raises it at once
        ({"x-ratelimit-reset": "172800"}, 172800.0),
        ({"x-ratelimit-reset": str(int(NOW + 2 * 86400))}, 172800.0),
        ({"Retry-After": "0", "x-ratelimit-reset": "7"}, 7.0),
        ({"x-ratelimit-reset": "-1"}, None),
        ({"x-ratelimit-reset": _date(NOW + 30)}, None),  # the reset is a number, never a date
    ],
)
def test_server_wait_names_only_a_positive_wait_and_caps_nothing(
    headers: dict[str, str], expected: float | None
) -> None:
    got = server_wait(429, headers, now=NOW)
    assert got == pytest.approx(expected, abs=1.0) if expected is not None else got is None


def test_only_a_429_falls_back_to_the_rate_limit_reset() -> None:
    assert server_wait(503, {"x-ratelimit-reset": "7"}, now=NOW) is None


@pytest.mark.parametrize("bad", [-1.0, MAX_SERVER_WAIT + 1, float("inf"), float("nan")])
def test_max_server_wait_is_between_zero_and_a_day(bad: float) -> None:
    with pytest.raises(ValueError, match="max_server_wait"):
        RetryPolicy(max_server_wait=bad)


def test_retry_wait_is_the_one_rule() -> None:
    policy = RetryPolicy(wait_initial=1.0, wait_max=8.0)
    # A named wait: that plus the backoff drawn (wake-ups spread).
    assert policy.retry_wait(1, 0.3, 10.0, refused=True) == pytest.approx(10.3)
    # A refusal naming nothing: the draw mapped into [ceiling / 2, ceiling].
    assert policy.retry_wait(3, 0.0, None, refused=True) == pytest.approx(2.0)
    assert policy.retry_wait(3, 4.0, None, refused=True) == pytest.approx(4.0)
    # Anything else: the backoff as drawn.
    assert policy.retry_wait(3, 0.0, None, refused=False) == 0.0


@pytest.mark.looptime
async def test_retry_after_is_honoured() -> None:
    handler = _Failing(1, status=503, headers={"Retry-After": "0.2"})
    async with _client(handler) as svc:
        start = svc.clock.now()
        await svc.seasons.list()
        assert svc.clock.now() - start == pytest.approx(0.2)


@pytest.mark.looptime
async def test_429_waits_for_the_rate_limit_reset() -> None:
    handler = _Failing(
        1, status=429, headers={"x-ratelimit-reset": "0.2", "x-ratelimit-remaining": "0"}
    )
    async with _client(handler, rate_limit=False) as svc:
        start = svc.clock.now()
        await svc.seasons.list()
        assert 0.2 <= svc.clock.now() - start <= 0.2 + 1.0  # the reset, plus its spread


@pytest.mark.looptime
async def test_server_wait_beyond_the_cap_is_raised_not_slept() -> None:
    handler = _Failing(1, status=429, headers={"Retry-After": "3600"})
    async with _client(handler, retry=RetryPolicy(max_server_wait=10)) as svc:
        start = svc.clock.now()
        with pytest.raises(RateLimitError) as info:
            await svc.seasons.list()
        assert svc.clock.now() == start  # raised at once, no wait at all
    assert info.value.retry_after == pytest.approx(3600)
    assert handler.calls == 1


@pytest.mark.looptime
async def test_deadline_is_not_overshot_by_more_than_one_attempt_timeout() -> None:
    async def slow(request: Request) -> Response:
        assert request.timeout is not None and request.timeout.total is not None
        await asyncio.sleep(min(request.timeout.total, 0.15))
        raise RequestTimeout("read timeout")

    policy = RetryPolicy(attempts=100, wait_initial=0.05, wait_max=0.05)
    async with _client(slow, retry=policy) as svc:
        start = svc.clock.now()
        with pytest.raises(RequestTimeout):
            await svc.seasons.list(timeout=0.5)
        elapsed = svc.clock.now() - start
    assert 0.3 <= elapsed <= 0.5 + 0.15 + 0.05


async def test_retry_budget_exhaustion_stops_retries() -> None:
    budget = RetryBudget(capacity=10, retry_cost=5, refill=1)
    handler = _Failing(100, status=503)
    async with _client(handler, retry_budget=budget) as svc:
        for _ in range(3):
            with pytest.raises(ServerError):
                await svc.seasons.list()
    # 10 tokens pay for two retries in all: 3 calls give 3 + 2 requests, not 3 * 4.
    assert handler.calls == 5
    assert budget.tokens == 0


async def test_successes_refill_the_budget() -> None:
    budget = RetryBudget(capacity=10, retry_cost=5, refill=5)
    assert budget.try_spend()
    assert budget.tokens == 5
    budget.record_success()
    assert budget.tokens == 10
    budget.record_success()
    assert budget.tokens == 10


async def test_retries_are_logged_without_secrets(caplog: pytest.LogCaptureFixture) -> None:
    handler = _Failing(2, status=502, answer=load("get-verification-job.response.json"))
    caplog.set_level(logging.DEBUG, logger="svc_async")
    async with Client(
        "https://v.example",
        token="super-secret-token",
        transport=MockTransport(handler),
        retry=FAST,
    ) as svc:
        await svc.jobs.get(7)
    retries = [r for r in caplog.records if "retrying" in r.getMessage()]
    assert len(retries) == 2
    assert "GET /api/public/v1/verification-job/7" in retries[0].getMessage()
    assert "HTTP 502" in retries[0].getMessage()
    assert all("super-secret-token" not in r.getMessage() for r in caplog.records)


async def test_a_steep_backoff_stays_at_wait_max_instead_of_overflowing() -> None:
    """A ceiling past any float (wait_exp_base ** n overflows) is just wait_max: the
    call goes on retrying, and ends as its last failure, not as an OverflowError."""
    steep = RetryPolicy(attempts=40, wait_initial=1e-9, wait_exp_base=1e12, wait_max=0.0001)
    assert steep.ceiling(39) == 0.0001
    assert RetryPolicy(attempts=2000, wait_exp_base=2).ceiling(1500) == 8.0
    assert RetryPolicy(attempts=2000, wait_initial=0, wait_exp_base=2).ceiling(1500) == 0.0
    handler = _Failing(100, status=503)
    async with _client(handler, retry=steep) as svc:
        with pytest.raises(ServerError):
            await svc.seasons.list(timeout=10)
    assert handler.calls == 40


@pytest.mark.parametrize("field", ["wait_initial", "wait_max", "wait_exp_base"])
@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_a_wait_that_is_no_finite_number_is_refused(field: str, bad: float) -> None:
    """A NaN wait would sleep forever (a NaN timer never fires): refused when made."""
    with pytest.raises(ValueError, match=field):
        RetryPolicy(**{field: bad})


@pytest.mark.parametrize("field", ["wait_initial", "wait_max", "wait_exp_base", "max_server_wait"])
@pytest.mark.parametrize("bad", ["1", None, True])
def test_a_wait_that_is_no_number_is_a_type_error_naming_it(field: str, bad: object) -> None:
    with pytest.raises(TypeError, match=field):
        RetryPolicy(**{field: bad})


@pytest.mark.parametrize("bad", [503, "503", [503, "429"], [True]])
def test_statuses_must_be_a_collection_of_ints(bad: object) -> None:
    """Refused when the policy is made, not when the first failure is checked against it."""
    with pytest.raises(TypeError, match="statuses"):
        RetryPolicy(statuses=bad)  # type: ignore[arg-type]
    assert 503 in RetryPolicy(statuses=frozenset({503})).statuses


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"capacity": "500"}, TypeError),
        ({"retry_cost": 1.5}, TypeError),
        ({"timeout_cost": True}, TypeError),
        ({"capacity": -1}, ValueError),
        ({"refill": -1}, ValueError),
    ],
)
def test_a_retry_budget_takes_non_negative_ints(kwargs: dict[str, Any], error: type) -> None:
    with pytest.raises(error, match=next(iter(kwargs))):
        RetryBudget(**kwargs)


@pytest.mark.parametrize("name", ["Retry-After", "x-ratelimit-reset"])
async def test_a_wait_header_that_is_no_string_is_read_not_crashed_on(name: str) -> None:
    """A transport of your own may hand a header's value as a number: it is read as its
    text; what is no wait at all (bytes, here) is no usable wait. Never a bare error."""
    for value, retry_after in ((2, 2.0), (b"2", None)):
        handler = _Failing(100, status=429, headers={name: value})  # type: ignore[dict-item]
        async with _client(handler, retry=RetryPolicy(attempts=1)) as svc:
            with pytest.raises(RateLimitError) as info:
                await svc.seasons.list()
        assert info.value.retry_after == retry_after
