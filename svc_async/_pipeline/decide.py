"""What happens after an attempt: a pure decision table (gidgethub's sans-I/O half).

``outcome_of`` classifies what an attempt produced (an ``Outcome``); ``decide`` says what
happens next from the attempt number, the outcome, the ``RetryPolicy``, the clock, the
deadline and the retry budget (a ``Decision``: return, renew auth, wait and retry, hand
an ambiguous outcome back, or raise). Neither does I/O; both are tested as tables.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

import attrs

from ..errors import (
    APIError,
    ConnectError,
    LocalProtocolError,
    ProxyError,
    RequestTimeout,
    ResponseTooLargeError,
    SvcError,
    TransportError,
)
from ..retry import RetryBudget, RetryPolicy, server_wait

__all__ = ["RENEW", "RETURN", "Action", "Decision", "Outcome", "decide", "outcome_of"]


class Action(enum.Enum):
    """What the pipeline does after an attempt."""

    RETURN = "return"
    RENEW = "renew"
    RETRY = "retry"
    RESOLVE = "resolve"
    RAISE = "raise"


@attrs.frozen(slots=True)
class Outcome:
    """What one attempt produced: a status (None: no response) and the failure, if any.

    ``server_wait`` is the positive wait the server named (Retry-After, or the reset on
    a 429), None when it named no usable one (see ``retry.server_wait``);
    ``unprocessed`` is True when the answer proves the request was not acted on.
    """

    status: int | None
    failure: SvcError | None = None
    server_wait: float | None = None
    unprocessed: bool = False


@attrs.frozen(slots=True)
class Decision:
    """The next step. ``wait`` applies to RETRY; ``spend`` is the retry-budget cost."""

    action: Action
    wait: float = 0.0
    spend: int = 0
    reason: str = ""
    rate_limited: bool = False


RETURN = Decision(Action.RETURN)
RENEW = Decision(Action.RENEW)


def outcome_of(
    status: int | None,
    failure: SvcError | None,
    headers: Mapping[str, str],
    wall: float | None = None,
) -> Outcome:
    """Classify an attempt: did the service certainly not process it?

    Unprocessed: a refused connection (``ConnectError``), a request refused before
    sending (``LocalProtocolError``), a 429 and a 503 (the service, or the gateway in
    front of it, refusing before anything starts). Everything else (a
    500, 502 or 504, a dropped connection, a timeout, a body cut off) may have been
    processed. ``wall`` is the epoch time a ``Retry-After`` date is read against.
    """
    if status is None:
        unprocessed = isinstance(failure, ConnectError) or (
            isinstance(failure, TransportError) and not failure.maybe_sent
        )
        return Outcome(None, failure, None, unprocessed)
    wait = server_wait(status, headers, wall) if status >= 300 else None
    unprocessed = status in (429, 503)
    return Outcome(status, failure, wait, unprocessed)


def decide(
    *,
    attempt: int,
    outcome: Outcome,
    policy: RetryPolicy,
    idempotent: bool,
    now: float,
    deadline: float | None,
    backoff: float,
    budget_tokens: int,
    budget: RetryBudget,
    can_renew: bool,
    can_resolve: bool,
) -> Decision:
    """The next step after attempt ``attempt`` (1-based) ended with ``outcome``.

    ``backoff`` is the jittered wait the policy draws for this attempt (drawn by the
    caller so this stays pure). Rules, in order: 2xx returns; a 401 renews auth once;
    an oversized body, a request refused locally, a request a proxy refused
    (``ProxyError.refused``: an unreachable proxy is a connect error like any other) or
    a status outside ``policy.statuses`` raises; a failure that may have been processed
    by a call unsafe to repeat is resolved (when a resolver exists) or raised; a server
    wait above ``policy.max_server_wait`` raises as a rate limit, however large; then
    every retry, 429s included, needs an attempt left, a wait (``policy.retry_wait``)
    that ends before the deadline (else it raises at once), and its cost in the retry
    budget.
    """
    final = _without_retry(outcome, policy, idempotent, can_renew, can_resolve)
    if final is not None:
        return final
    decision = _retry(attempt, outcome, policy, now, deadline, backoff)
    if decision.action is not Action.RETRY:
        return decision
    cost = budget.cost(timeout=isinstance(outcome.failure, RequestTimeout))
    if budget_tokens < cost:
        return Decision(Action.RAISE, reason="retry budget exhausted")
    return attrs.evolve(decision, spend=cost)


def _without_retry(
    outcome: Outcome, policy: RetryPolicy, idempotent: bool, can_renew: bool, can_resolve: bool
) -> Decision | None:
    """The decisions that need no retry arithmetic (None: a retry is worth weighing)."""
    status, failure = outcome.status, outcome.failure
    if failure is None and status is not None and 200 <= status < 300:
        return RETURN
    if status == 401 and can_renew:
        return RENEW
    final = _never_retried(failure, status, policy)
    if final is not None:
        return final
    if not idempotent and not outcome.unprocessed:
        if can_resolve:
            return Decision(Action.RESOLVE, reason="ambiguous")
        return Decision(Action.RAISE, reason="not safe to repeat")
    server = outcome.server_wait
    if server is not None and server > policy.max_server_wait:
        return Decision(Action.RAISE, reason="server wait too long", rate_limited=True)
    return None


def _never_retried(
    failure: SvcError | None, status: int | None, policy: RetryPolicy
) -> Decision | None:
    """The failures no retry can mend: a body too large, a request refused before it
    was sent (by this side or a proxy), a status the policy does not retry."""
    if isinstance(failure, ResponseTooLargeError):
        return Decision(Action.RAISE, reason="too large")
    if isinstance(failure, LocalProtocolError):
        return Decision(Action.RAISE, reason="refused locally")
    if isinstance(failure, ProxyError) and failure.refused:
        return Decision(Action.RAISE, reason="proxy refused")
    if isinstance(failure, APIError) and status not in policy.statuses:
        return Decision(Action.RAISE, reason=f"HTTP {status}")
    return None


def _retry(
    attempt: int,
    outcome: Outcome,
    policy: RetryPolicy,
    now: float,
    deadline: float | None,
    backoff: float,
) -> Decision:
    """A retry (its cost in the retry budget weighed after), if an attempt is left and
    its wait ends before the deadline; else why not."""
    status, failure = outcome.status, outcome.failure
    if attempt >= policy.attempts:
        return Decision(Action.RAISE, reason="attempts spent")
    wait = policy.retry_wait(attempt, backoff, outcome.server_wait, refused=status in (429, 503))
    if deadline is not None and now + wait >= deadline:
        return Decision(Action.RAISE, reason="deadline", rate_limited=status == 429)
    reason = f"HTTP {status}" if status is not None else type(failure).__name__
    return Decision(Action.RETRY, wait=wait, reason=reason)
