"""What every sub-client shares: its client, the callable that sends a call, the
wrapper that hands a call's ``Reply`` back, and the calling of its callbacks."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable
from typing import (
    TYPE_CHECKING,
    Any,
    Literal,
    ParamSpec,
    Protocol,
    Required,
    TypedDict,
    TypeVar,
    Unpack,
)

from .._pipeline.answers import REPLIES, Reply
from ..types import CallOptions

if TYPE_CHECKING:
    from .._pipeline.answers import Decoder
    from .._pipeline.run import Tracker
    from ..clock import Clock

P = ParamSpec("P")
T = TypeVar("T")


class SendFields(TypedDict, total=False):
    """What a sub-client itself tells ``Send`` of a call, beside the caller's options.

    The pipeline's ``Call`` has a field of each name (``host`` becomes its URL); what is
    left out takes the ``Call``'s default.
    """

    host: Literal["api", "account"]
    """Which base URL: the verification host (default) or the account host."""
    idempotent: Required[bool]
    """Whether the call is safe to repeat (retries may send it again)."""
    operation: str
    """The SDK call this is (``jobs.get``): traces name their spans after it."""
    authenticate: bool
    """Send the client's credentials (False: login and refresh)."""
    ambiguous: bool
    """Return ``pipeline.Ambiguous`` (the failure and the deadline) instead of raising
    when a call unsafe to repeat failed in a way that may have been processed."""


class Send(Protocol):
    """Run one call through the client's pipeline and return what its ``decode`` makes of
    the answer (``Decoder(VerificationJob)``: the model; by default the JSON).

    ``options`` are the caller's, passed on whole and checked there (``types.check_options``);
    ``fields`` are the sub-client's own.
    """

    def __call__(
        self,
        method: str,
        path: str,
        body: Any = None,
        options: CallOptions | None = None,
        /,
        *,
        decode: Decoder[T] = ...,
        **fields: Unpack[SendFields],
    ) -> Awaitable[T]: ...


def with_reply(
    method: Callable[P, Awaitable[T]], operation: str | None
) -> Callable[P, Awaitable[Reply[T]]]:
    """``method``, returning its data in the ``Reply`` of its call named ``operation``
    (the last one it made; None: the last call of any kind).

    The pipeline hands the replies of a task's calls to whoever listens; this listens
    around one call of ``method``, and passes what it heard on to a listener outside.
    """

    @functools.wraps(method)
    async def call(*args: P.args, **kwargs: P.kwargs) -> Reply[T]:
        outer = REPLIES.get()
        replies: list[tuple[str, Reply[Any]]] = []
        token = REPLIES.set(replies)
        try:
            data = await method(*args, **kwargs)
        finally:
            REPLIES.reset(token)
            if outer is not None:
                outer.extend(replies)
        mine = [r for op, r in replies if operation is None or op == operation]
        if not mine:
            return Reply(data)  # no single response carried it
        last = mine[-1]
        return Reply(
            data,
            last.status,
            last.headers,
            attempts=last.attempts,
            elapsed=last.elapsed,
            request_id=last.request_id,
        )

    return call


async def notify(callback: Callable[..., object] | None, *args: Any) -> None:
    """Call ``callback(*args)`` (None: no one to tell), awaiting what it returns when that
    is awaitable: a progress or status callback may be a plain or a coroutine function."""
    if callback is not None:
        result = callback(*args)
        if inspect.isawaitable(result):
            await result


class Owner(Protocol):
    """What a sub-client reads of the client that made it (a ``Client``, known by this
    shape so that the client imports its sub-clients and never the other way round)."""

    @property
    def clock(self) -> Clock: ...
    @property
    def webhooks(self) -> object: ...
    @property
    def creation_tags(self) -> bool: ...


class Resource:
    """Base of the sub-clients; sends through the ``send`` callable its client gives it.

    Work of several calls (a wait, a bulk fetch, a watch) is tracked whole by the
    client's ``tracker`` (``Tracker.operation`` and ``Tracker.stepwise``): a close's
    grace lets it finish, and a close ends it with ``ClientClosedError``.
    """

    def __init__(self, client: Owner, send: Send, tracker: Tracker) -> None:
        self._owner = client
        self._send = send
        self._tracker = tracker

    def __repr__(self) -> str:
        return f"<{type(self).__name__} of {self._owner!r}>"

    @property
    def clock(self) -> Clock:
        """The client's clock (deadlines, polls and sleeps of this sub-client's waits)."""
        return self._owner.clock
