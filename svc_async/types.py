"""The SDK's shared type aliases, each stated once: what a callback or an option may be.

Also ``Timeout``, the limits of one HTTP exchange, which those options name: it lives here,
below the transport (which re-exports it), so a sub-client naming an option's type never
reaches the transport.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Literal, TypeAlias, TypedDict

import attrs

from .retry import RetryPolicy

__all__ = ["AttemptTimeoutArg", "CallOptions", "Progress", "Timeout", "TimeoutArg"]


@attrs.frozen(slots=True, kw_only=True, cache_hash=True)
class Timeout:
    """Time limits for one HTTP exchange, in seconds (None: no limit).

    ``connect`` covers opening the connection, ``read`` each wait for data, ``total``
    the whole exchange including reading the body.
    """

    total: float | None = 30.0
    connect: float | None = 10.0
    read: float | None = None


Progress: TypeAlias = Callable[[int, "int | None"], object]
"""``progress(done, total)``, sync or async (an awaitable result is awaited).

Downloads count bytes and pass ``total=None`` when the size is unknown; bulk reads
count events or seasons and always know the total, so they also take a callback whose
``total`` is typed ``int``.
"""

TimeoutArg: TypeAlias = float | None
"""A call's ``timeout=``: seconds for the **whole call** (every attempt, pacing hold,
auth renewal, backoff and tag search), or None for no bound. (The limits of each HTTP
exchange, a ``Timeout``, are ``attempt_timeout=``.) Per-call options write
``TimeoutArg | Literal["default"]``: ``"default"`` is the client's.
"""

AttemptTimeoutArg: TypeAlias = float | Timeout | None
"""An ``attempt_timeout=``: the limit of each HTTP exchange within a call: seconds (its
total), a ``Timeout`` with connect and read parts, or None for none but the call's."""


class CallOptions(TypedDict, total=False):
    """The five options every call of a sub-client takes, declared once.

    Each method writes ``**options: Unpack[CallOptions]``: a type checker knows the names
    and their types, and the client checks both at run time, before anything is sent (a
    misspelt name is a ``TypeError`` naming it). An option left out, or ``"default"``
    for the two timeouts, takes the client's setting (or its ``with_options`` view's).
    """

    timeout: TimeoutArg | Literal["default"]
    """Bound of the whole call, in seconds (None: none)."""
    attempt_timeout: AttemptTimeoutArg | Literal["default"]
    """Limit of each HTTP exchange within the call: seconds or a ``Timeout``."""
    retry: RetryPolicy | None
    """How this call's failures are retried (None: the client's policy)."""
    extra_headers: Mapping[str, str] | None
    """Headers of this call's own, over the client's (never its authentication)."""
    extra_query: Mapping[str, str] | None
    """Query parameters added to this call's URL."""


OPTION_NAMES = CallOptions.__optional_keys__
"""The names a caller may give a call (``timeout``, ``attempt_timeout``, ``retry``,
``extra_headers``, ``extra_query``)."""

_NO_LIMIT = Timeout(total=None, connect=None, read=None)


def check_options(operation: str, options: Mapping[str, object]) -> None:
    """``TypeError`` naming a caller's option that is not one of ``CallOptions``, or a
    ``retry`` that is no ``RetryPolicy``: a misspelt name must not pass unnoticed (the
    timeouts' values are checked by ``split``, the extras' where they are read)."""
    if not options.keys() <= OPTION_NAMES:
        unknown = sorted(options.keys() - OPTION_NAMES)[0]
        raise TypeError(
            f"{operation or 'the call'}() got an unexpected keyword argument {unknown!r};"
            f" a call's options are {', '.join(sorted(OPTION_NAMES))}"
        )
    retry = options.get("retry")
    if retry is not None and not isinstance(retry, RetryPolicy):
        got = type(retry).__name__
        if retry is RetryPolicy:
            got = "the class RetryPolicy itself: give RetryPolicy(...)"
        raise TypeError(f"retry must be a RetryPolicy or None, got {got}")


def split(
    timeout: TimeoutArg | Literal["default"],
    attempt_timeout: AttemptTimeoutArg | Literal["default"],
) -> tuple[float | Literal["default"] | None, Timeout | Literal["default"]]:
    """``timeout=`` and ``attempt_timeout=`` checked and normalised once, into the
    whole call's seconds and each attempt's ``Timeout`` (``"default"`` kept as it is):
    the two values the pipeline's deadline and attempt limits come from."""
    whole = timeout if timeout == "default" else _seconds(timeout)
    per = attempt_timeout if attempt_timeout == "default" else _attempt(attempt_timeout)
    return whole, per


def _seconds(value: float | None, what: str = "timeout") -> float | None:
    """A whole-call bound: positive seconds, or None for none."""
    if value is None:
        return None
    if isinstance(value, Timeout):
        raise TypeError(
            f"{what} must be a number of seconds or None: it bounds the whole call; the"
            " limits of each exchange, a Timeout, are attempt_timeout="
        )
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{what} must be a number of seconds or None, got {type(value).__name__}")
    if not value > 0:
        raise ValueError(f"{what} must be positive")
    return float(value)


def _attempt(value: AttemptTimeoutArg, what: str = "attempt_timeout") -> Timeout:
    """A per-attempt limit: seconds (its total; connect at most 10 s), a Timeout, or None."""
    if value is None:
        return _NO_LIMIT
    if isinstance(value, Timeout):
        for part in ("total", "connect", "read"):  # each positive seconds, or None
            _seconds(getattr(value, part), f"{what}.{part}")
        return value
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(
            f"{what} must be a number of seconds, a Timeout or None, got {type(value).__name__}"
        )
    seconds = _seconds(value, what)
    assert seconds is not None
    return Timeout(total=seconds, connect=min(seconds, 10.0))
