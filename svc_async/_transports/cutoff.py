"""Cut many sends off at their deadlines with one loop timer, not one timer each.

``asyncio.timeout`` (and aiohttp's per-request ``total``) puts a ``TimerHandle`` on the
loop's heap for every use and leaves it there, cancelled, when the send ends first: at
32 calls in flight that bookkeeping cost about a tenth of a small call. ``Cutoffs``
keeps the armed cuts in a dict and one timer, never later than the earliest of them;
calls that end in time only add and remove a dict entry. When the timer fires it
cancels the tasks whose deadline passed, exactly as ``asyncio.timeout`` does, and sets
itself again for the earliest cut still armed (none: it stops). ``disarm`` tells the
caller whether the cancellation it is unwinding is the cut's (another one pending wins).

A special case for speed, kept for its figure: counted in instructions
(``bench_instructions``, a small ``jobs.get`` at concurrency 32, 2026-12-01), handing
aiohttp a per-request ``total`` instead costs 4.8 % more per call, and 7 % with the
``ClientTimeout`` cache that only a total-free timeout allows (a total bounded by each
call's deadline differs on every call). It is also the one mechanism: every exchange of
the SDK's transports, ``send`` and ``stream``, and any other transport's (``CutOff``),
is cut off by a ``Cutoffs``.

Deadlines are on the running loop's timeline, the one ``SystemClock.now()`` and the
test clock read, so virtual time (looptime) moves these cuts as it moves asyncio's.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from ..errors import TransportError
from .base import (
    Request,
    Response,
    StreamingTransport,
    StreamResponse,
    Transport,
    answer_of,
    timed_out,
)
from .proxy import Route

__all__ = ["Cut", "CutOff", "Cutoffs", "cut_off", "raised_instead"]

_RESOLUTION = time.get_clock_info("monotonic").resolution
"""What asyncio allows a timer to fire early by; a cut due within it is due."""


class Cut:
    """One armed deadline: the task to cancel, when, and whether it was."""

    __slots__ = ("cancelling", "fired", "task", "when")

    def __init__(self, task: asyncio.Task[object], when: float) -> None:
        self.task = task
        self.when = when
        self.cancelling = task.cancelling()
        self.fired = False


class Cutoffs:
    """The armed cuts of one transport (or pipeline), and the one timer behind them.

    ``arm(seconds)`` inside a task, then ``disarm(cut)`` when the guarded section ends,
    however it ends. Bound to the loop it is first used on; used on another loop (a
    second ``asyncio.run``) it starts afresh there.
    """

    __slots__ = ("_at", "_handle", "_loop", "_pending")

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pending: dict[Cut, None] = {}
        self._handle: asyncio.TimerHandle | None = None
        self._at = math.inf

    def __repr__(self) -> str:
        return f"<Cutoffs armed={len(self._pending)}>"

    def __len__(self) -> int:
        return len(self._pending)

    def arm(self, seconds: float, loop: asyncio.AbstractEventLoop | None = None) -> Cut | None:
        """Cancel the current task ``seconds`` from now unless disarmed first.

        ``loop`` is the running loop when the caller has it at hand. None outside a task
        (nothing to cancel; the caller's own bounds apply).
        """
        if loop is None:
            loop = asyncio.get_running_loop()
        if loop is not self._loop:
            self._rebind(loop)
        task = asyncio.current_task(loop)
        if task is None:
            return None
        cut = Cut(task, loop.time() + seconds)
        self._pending[cut] = None
        if cut.when < self._at:
            self._schedule(cut.when)
        return cut

    def disarm(self, cut: Cut | None) -> bool:
        """End ``cut``; True when it fired and its cancellation is the one under way.

        Call it exactly once per armed cut, in a ``finally`` or ``except`` of the guarded
        section. True means: raise your timeout error in place of the CancelledError (or
        of whatever the cancellation became). False after it fired means another
        cancellation is also pending: let the CancelledError go on.
        """
        if cut is None:
            return False
        # The timer stays even when nothing is left armed: one call after another then
        # costs no timer at all, and a timer that finds nothing due just stops.
        self._pending.pop(cut, None)
        if not cut.fired:
            return False
        return cut.task.uncancel() <= cut.cancelling

    def _rebind(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._handle is not None and self._loop is not None and not self._loop.is_closed():
            self._handle.cancel()
        self._loop, self._pending, self._handle, self._at = loop, {}, None, math.inf

    def _schedule(self, when: float) -> None:
        assert self._loop is not None
        if self._handle is not None:
            self._handle.cancel()
        self._at = when
        self._handle = self._loop.call_at(when, self._fire)

    def _fire(self) -> None:
        assert self._loop is not None
        self._handle, self._at = None, math.inf
        due = self._loop.time() + _RESOLUTION
        nearest = math.inf
        for cut in self._pending:
            if cut.fired:
                continue
            if cut.when <= due:
                cut.fired = True
                if not cut.task.done():
                    cut.task.cancel()
            elif cut.when < nearest:
                nearest = cut.when
        if nearest < math.inf:
            self._schedule(nearest)


def cut_off(transport: Transport) -> Transport:
    """``transport`` as the pipeline sends through it: one that ends each exchange at
    ``Request.timeout`` itself (``enforces_timeout = True``: the SDK's own) as it is,
    any other wrapped in a ``CutOff`` that does, so a call's deadline holds whatever the
    transport. Chosen once, where the client is built: one cut-off per attempt."""
    if getattr(transport, "enforces_timeout", False) is True:
        return transport
    if isinstance(transport, StreamingTransport):
        return _StreamingCutOff(transport)
    return CutOff(transport)


class CutOff:
    """A transport of someone else's, cut off at each request's ``Timeout.total``.

    A cut send raises ``RequestTimeout``, as the SDK's own transports do; a transport
    that honours the limit itself as well (the fake's in-process one) is cut by
    whichever comes first.
    """

    enforces_timeout = True

    def __init__(self, transport: Transport) -> None:
        self.inner = transport
        self._cutoffs = Cutoffs()
        self._who = f"{type(transport).__name__}.send"

    def __repr__(self) -> str:
        return f"<CutOff {self.inner!r}>"

    async def send(self, request: Request) -> Response:
        """``inner.send(request)``, cut off at ``request.timeout.total``."""
        total = None if request.timeout is None else request.timeout.total
        if total is None:  # no limit (0 is none at all: cut at once, as the SDK's are)
            return answer_of(await self.inner.send(request), self._who)
        cut = self._cutoffs.arm(total)
        try:
            response = await self.inner.send(request)
        except BaseException:
            if not self._cutoffs.disarm(cut):
                raise
            raise timed_out(request, total) from None
        self._cutoffs.disarm(cut)
        return answer_of(response, self._who)

    async def aclose(self) -> None:
        """Close the inner transport."""
        await self.inner.aclose()


class _StreamingCutOff(CutOff):
    """A ``CutOff`` of a transport that streams: the cut covers the body's reading too."""

    inner: StreamingTransport

    @asynccontextmanager
    async def stream(self, request: Request) -> AsyncIterator[StreamResponse]:
        """``inner.stream(request)``, cut off at ``request.timeout.total``."""
        total = None if request.timeout is None else request.timeout.total
        cut = None if total is None else self._cutoffs.arm(total)
        try:
            async with self.inner.stream(request) as stream:
                yield stream
        except BaseException:
            if not self._cutoffs.disarm(cut):
                raise
            raise timed_out(request, total) from None
        self._cutoffs.disarm(cut)


def raised_instead(
    cutoffs: Cutoffs,
    cut: Cut | None,
    exc: BaseException,
    request: Request,
    total: float | None,
    wrap: Callable[[BaseException, Request, Route | None], TransportError],
    route: Callable[[Request], Route | None],
    foreign: type[BaseException] | tuple[type[BaseException], ...] = Exception,
) -> BaseException | None:
    """What a send (or stream) that raised ``exc`` raises instead, both transports' rule:
    the timeout when its cut (at ``total`` seconds) fired, the cancellation being the
    cut's; the transport's ``wrap`` of a ``foreign`` (the HTTP library's) failure, through
    its proxy ``route``; None for ``exc`` itself (ours, a cancellation, the caller's own)."""
    if cutoffs.disarm(cut):
        return timed_out(request, total)
    if isinstance(exc, TransportError) or not isinstance(exc, foreign):
        return None
    return wrap(exc, request, route(request))
