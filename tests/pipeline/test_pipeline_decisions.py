"""The pipeline's decision function as a table: no transport, no clock, no sleeping."""

from __future__ import annotations

from typing import Any

import pytest

from svc_async._pipeline.run import Action, Decision, decide, outcome_of
from svc_async.errors import (
    APIError,
    ConnectError,
    ConnectionLostError,
    ConnectTimeout,
    LocalProtocolError,
    RequestTimeout,
    ResponseDecodeError,
    ResponseTooLargeError,
    SvcError,
    TransportError,
    error_class_for,
)
from svc_async.retry import RetryBudget, RetryPolicy

POLICY = RetryPolicy(attempts=4, max_server_wait=60.0)
BUDGET = RetryBudget()


def _api(status: int) -> APIError:
    return error_class_for(status)(status)


def _decide(
    status: int | None,
    failure: SvcError | None,
    *,
    headers: dict[str, str] | None = None,
    attempt: int = 1,
    idempotent: bool = True,
    now: float = 0.0,
    deadline: float | None = 10.0,
    backoff: float = 0.5,
    tokens: int = 500,
    can_renew: bool = True,
    can_resolve: bool = False,
    policy: RetryPolicy = POLICY,
) -> Decision:
    return decide(
        attempt=attempt,
        outcome=outcome_of(status, failure, headers or {}),
        policy=policy,
        idempotent=idempotent,
        now=now,
        deadline=deadline,
        backoff=backoff,
        budget_tokens=tokens,
        budget=BUDGET,
        can_renew=can_renew,
        can_resolve=can_resolve,
    )


# (status, failure, keyword overrides, expected action, expected wait or None)
TABLE: list[tuple[str, int | None, Any, dict[str, Any], Action, float | None]] = [
    ("2xx returns", 200, None, {}, Action.RETURN, None),
    ("204 returns", 204, None, {}, Action.RETURN, None),
    ("2xx with a bad body retries (GET)", 200, ResponseDecodeError("bad"), {}, Action.RETRY, 0.5),
    (
        "2xx bad body on a create resolves",
        200,
        ResponseDecodeError("bad"),
        {"idempotent": False, "can_resolve": True},
        Action.RESOLVE,
        None,
    ),
    ("401 renews once", 401, _api(401), {}, Action.RENEW, None),
    ("401 after a renewal raises", 401, _api(401), {"can_renew": False}, Action.RAISE, None),
    ("400 raises", 400, _api(400), {}, Action.RAISE, None),
    ("403 raises", 403, _api(403), {}, Action.RAISE, None),
    ("404 raises", 404, _api(404), {}, Action.RAISE, None),
    ("409 raises", 409, _api(409), {}, Action.RAISE, None),
    ("302 raises", 302, _api(302), {}, Action.RAISE, None),
    ("500 retries a GET", 500, _api(500), {}, Action.RETRY, 0.5),
    ("502 retries a GET", 502, _api(502), {}, Action.RETRY, 0.5),
    ("504 retries a GET", 504, _api(504), {}, Action.RETRY, 0.5),
    ("408 retries a GET", 408, _api(408), {}, Action.RETRY, 0.5),
    (
        "Retry-After plus the backoff",
        503,
        _api(503),
        {"headers": {"Retry-After": "3"}},
        Action.RETRY,
        3.5,
    ),
    (
        "Retry-After beyond max_server_wait raises",
        503,
        _api(503),
        {"headers": {"Retry-After": "61"}},
        Action.RAISE,
        None,
    ),
    (
        "500 on a create without resolver raises",
        500,
        _api(500),
        {"idempotent": False},
        Action.RAISE,
        None,
    ),
    (
        "500 on a create resolves",
        500,
        _api(500),
        {"idempotent": False, "can_resolve": True},
        Action.RESOLVE,
        None,
    ),
    (
        "502 on a create resolves",
        502,
        _api(502),
        {"idempotent": False, "can_resolve": True},
        Action.RESOLVE,
        None,
    ),
    (
        "503 on a create repeats (refused)",
        503,
        _api(503),
        {"idempotent": False, "can_resolve": True},
        Action.RETRY,
        0.5,
    ),
    (
        "429 on a create repeats (refused)",
        429,
        _api(429),
        {"idempotent": False, "headers": {"Retry-After": "1"}},
        Action.RETRY,
        1.5,
    ),
    (
        "429 counts against attempts",
        429,
        _api(429),
        {"attempt": 4, "headers": {"Retry-After": "1"}},
        Action.RAISE,
        None,
    ),
    (
        "429 learns the wait from x-ratelimit-reset",
        429,
        _api(429),
        {"headers": {"x-ratelimit-reset": "2"}},
        Action.RETRY,
        2.5,
    ),
    (
        "429 Retry-After 0 falls back to x-ratelimit-reset",
        429,
        _api(429),
        {"headers": {"Retry-After": "0", "x-ratelimit-reset": "2"}},
        Action.RETRY,
        2.5,
    ),
    *[
        (
            f"429 Retry-After {value!r}: no usable wait, backoff from the floor",
            status,
            _api(status),
            {"headers": {"Retry-After": value}, "backoff": 0.0},
            Action.RETRY,
            0.25,  # half the first ceiling (0.5), never 0
        )
        for value in ("0", "-5", "Thu, 01 Jan 1970 00:00:00 GMT", "soon", "", "nan", "inf")
        for status in (429, 503)
    ],
    (
        "503 without Retry-After: backoff from the floor",
        503,
        _api(503),
        {"backoff": 0.0},
        Action.RETRY,
        0.25,
    ),
    (
        "502 is no refusal: the backoff as drawn",
        502,
        _api(502),
        {"backoff": 0.0},
        Action.RETRY,
        0.0,
    ),
    *[
        (
            f"{header} {value} beyond max_server_wait raises",
            429,
            _api(429),
            {"headers": {header: value}},
            Action.RAISE,
            None,
        )
        for header in ("Retry-After", "x-ratelimit-reset")
        for value in ("100", "172800", "1e15")
    ],
    (
        "429 past the deadline raises",
        429,
        _api(429),
        {"now": 9.5, "headers": {"Retry-After": "1"}},
        Action.RAISE,
        None,
    ),
    ("429 spends the retry budget", 429, _api(429), {"tokens": 4}, Action.RAISE, None),
    ("a header refused locally raises", None, LocalProtocolError("CR"), {}, Action.RAISE, None),
    (
        "a header refused locally on a create raises, never resolves",
        None,
        LocalProtocolError("CR"),
        {"idempotent": False, "can_resolve": True},
        Action.RAISE,
        None,
    ),
    ("reset retries a GET", None, ConnectionLostError("reset"), {}, Action.RETRY, 0.5),
    ("read timeout retries a GET", None, RequestTimeout("slow"), {}, Action.RETRY, 0.5),
    (
        "reset on a create resolves",
        None,
        ConnectionLostError("reset"),
        {"idempotent": False, "can_resolve": True},
        Action.RESOLVE,
        None,
    ),
    (
        "timeout on a create resolves",
        None,
        RequestTimeout("slow"),
        {"idempotent": False, "can_resolve": True},
        Action.RESOLVE,
        None,
    ),
    (
        "refused connection repeats a create",
        None,
        ConnectError("refused"),
        {"idempotent": False},
        Action.RETRY,
        0.5,
    ),
    (
        "connect timeout repeats a create",
        None,
        ConnectTimeout("connect"),
        {"idempotent": False},
        Action.RETRY,
        0.5,
    ),
    (
        "unknown transport error on a create resolves",
        None,
        TransportError("?"),
        {"idempotent": False, "can_resolve": True},
        Action.RESOLVE,
        None,
    ),
    ("too large never retries", None, ResponseTooLargeError("big"), {}, Action.RAISE, None),
    ("attempts spent raises", 502, _api(502), {"attempt": 4}, Action.RAISE, None),
    ("last attempt but one retries", 502, _api(502), {"attempt": 3}, Action.RETRY, 0.5),
    (
        "wait reaching the deadline raises",
        502,
        _api(502),
        {"now": 9.5, "backoff": 0.5},
        Action.RAISE,
        None,
    ),
    (
        "wait just inside the deadline retries",
        502,
        _api(502),
        {"now": 9.4, "backoff": 0.5},
        Action.RETRY,
        0.5,
    ),
    ("no deadline: retries", 502, _api(502), {"deadline": None, "now": 1e9}, Action.RETRY, 0.5),
    ("empty retry budget raises", 502, _api(502), {"tokens": 4}, Action.RAISE, None),
    (
        "budget for a retry but not a timeout",
        None,
        RequestTimeout("slow"),
        {"tokens": 9},
        Action.RAISE,
        None,
    ),
    ("budget for a timeout retry", None, RequestTimeout("slow"), {"tokens": 10}, Action.RETRY, 0.5),
]


@pytest.mark.parametrize(
    ("status", "failure", "kwargs", "action", "wait"),
    [row[1:] for row in TABLE],
    ids=[row[0] for row in TABLE],
)
def test_decision_table(
    status: int | None,
    failure: SvcError | None,
    kwargs: dict[str, Any],
    action: Action,
    wait: float | None,
) -> None:
    decision = _decide(status, failure, **kwargs)
    assert decision.action is action, decision
    if wait is not None:
        assert decision.wait == pytest.approx(wait)


def test_retries_charge_the_budget_by_kind() -> None:
    assert _decide(502, _api(502)).spend == BUDGET.retry_cost
    assert _decide(None, RequestTimeout("slow")).spend == BUDGET.timeout_cost


def test_a_429_that_cannot_fit_is_raised_as_a_rate_limit() -> None:
    decision = _decide(429, _api(429), headers={"Retry-After": "30"})
    assert decision.action is Action.RAISE
    assert decision.rate_limited


@pytest.mark.parametrize("status", [*range(200, 300, 7), *range(300, 600, 3)])
@pytest.mark.parametrize("idempotent", [True, False])
def test_every_status_has_one_clear_answer(status: int, idempotent: bool) -> None:
    failure = None if status < 300 else _api(status)
    decision = _decide(status, failure, idempotent=idempotent, can_resolve=True)
    if status < 300:
        assert decision.action is Action.RETURN
    elif status == 401:
        assert decision.action is Action.RENEW
    elif status not in POLICY.statuses:
        assert decision.action is Action.RAISE
    elif idempotent or status in (429, 503):
        assert decision.action is Action.RETRY
    else:
        assert decision.action is Action.RESOLVE


def test_outcome_marks_only_refusals_unprocessed() -> None:
    assert outcome_of(None, ConnectError("x"), {}).unprocessed
    assert outcome_of(429, _api(429), {}).unprocessed
    assert outcome_of(503, _api(503), {}).unprocessed
    assert not outcome_of(None, ConnectionLostError("x"), {}).unprocessed
    assert not outcome_of(None, RequestTimeout("x"), {}).unprocessed
    assert not outcome_of(500, _api(500), {}).unprocessed
    assert not outcome_of(200, ResponseDecodeError("x"), {}).unprocessed


def test_a_429_is_not_retried_when_the_policy_turns_retries_off() -> None:
    off = RetryPolicy(attempts=1)
    assert _decide(429, _api(429), policy=off).action is Action.RAISE
    assert _decide(429, _api(429), attempt=3).action is Action.RETRY
    assert _decide(429, _api(429), attempt=4).action is Action.RAISE


@pytest.mark.parametrize("headers", [{"Retry-After": "5"}, {"Retry-After": "0"}, {}])
@pytest.mark.parametrize(("status", "rate_limited"), [(429, True), (503, False)])
def test_a_wait_past_the_deadline_raises_at_once_a_429_as_a_rate_limit(
    headers: dict[str, str], status: int, rate_limited: bool
) -> None:
    decision = _decide(status, _api(status), headers=headers, now=9.9, backoff=0.5)
    assert decision.action is Action.RAISE
    assert decision.reason == "deadline"
    assert decision.rate_limited is rate_limited


@pytest.mark.parametrize("attempt", [1, 2, 3])
@pytest.mark.parametrize("value", ["0", "-5", "soon", "Thu, 01 Jan 1970 00:00:00 GMT", None])
def test_a_refusal_without_a_usable_wait_is_never_retried_at_once(
    attempt: int, value: str | None
) -> None:
    headers = {} if value is None else {"Retry-After": value}
    policy = RetryPolicy(attempts=4)
    for draw in (0.0, 0.3, 1.0):  # the backoff's jitter anywhere in [0, ceiling]
        backoff = draw * policy.ceiling(attempt)
        decision = _decide(
            429, _api(429), headers=headers, attempt=attempt, backoff=backoff, policy=policy
        )
        assert decision.action is Action.RETRY
        assert policy.ceiling(attempt) / 2 <= decision.wait <= policy.ceiling(attempt)
