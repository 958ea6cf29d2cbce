"""Bulk entry fetching: the entries of many events (or seasons), a bounded few at a time.

``fan_out`` runs a fetch per id with at most ``concurrency`` requests in flight (a fixed
pool of worker tasks pulling ids from one iterator, so a list of 100,000 ids never turns
into 100,000 tasks) and hands each outcome over as it completes. ``entry_batches`` wraps
that into ``EntryBatch`` values for ``Entries.for_events`` and ``Entries.for_seasons``.

Every task is owned by the generator that started it: leaving the ``async for`` early
(``break``, an exception, ``aclose()``) cancels the requests still in flight and waits
for them, so nothing outlives the loop. After a ``break``, Python finalises the
generator when it is garbage-collected; wrap it in ``contextlib.aclosing`` to make the
clean-up happen at once.
"""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import (
    AsyncGenerator,
    Awaitable,
    Callable,
    Iterable,
    Mapping,
    Sequence,
)
from typing import Any, Literal, TypeVar

import attrs

from .._core import validate as v
from ..errors import ClientClosedError, SvcError, WrongEventLoopError
from ..models import Entry
from ..types import Progress
from ._base import notify
from .pagination import cancel_all

R = TypeVar("R")

Source = Literal["event", "season"]
"""What a batch's id names: an event or a season."""

FetchEntries = Callable[[Source, int, "dict[str, Any] | None"], Awaitable["builtins.list[Entry]"]]
"""Fetch the entries of one event or season (by id) with an optional filter body."""


MAX_CONCURRENCY = 256
"""Largest ``concurrency`` accepted by the bulk calls."""


@attrs.frozen(kw_only=True)
class EntryBatch:
    """The outcome for one event (or season) of a bulk fetch.

    Exactly one of ``entries`` (the entries, possibly empty) and ``error`` (the
    ``SvcError`` that fetching them raised; ``entries`` is then empty) is meaningful:
    check ``ok``. ``event_id`` names the event of a ``for_events`` batch and
    ``season_id`` the season of a ``for_seasons`` batch; ``source_id`` is either.
    """

    source: Source
    source_id: int
    entries: list[Entry] = attrs.field(factory=list)
    error: SvcError | None = None

    @property
    def ok(self) -> bool:
        """True when the entries were fetched."""
        return self.error is None

    @property
    def event_id(self) -> int:
        """The event's id (AttributeError on a season batch)."""
        if self.source != "event":
            raise AttributeError("a season batch has season_id, not event_id")
        return self.source_id

    @property
    def season_id(self) -> int:
        """The season's id (AttributeError on an event batch)."""
        if self.source != "season":
            raise AttributeError("an event batch has event_id, not season_id")
        return self.source_id


def unique_ids(ids: Any, name: str) -> list[int]:
    """Validate ``ids`` (positive ints) and drop duplicates, keeping first-seen order."""
    if isinstance(ids, str | bytes | Mapping) or not isinstance(ids, Iterable):
        raise TypeError(f"{name} must be an iterable of ints, got {type(ids).__name__}")
    seen: dict[int, None] = {}
    for value in ids:
        seen.setdefault(v.positive_id(value, f"each of {name}"), None)
    return builtins.list(seen)


def check_concurrency(concurrency: Any) -> int:
    """A concurrency bound between 1 and ``MAX_CONCURRENCY``."""
    return v.count(concurrency, "concurrency", minimum=1, maximum=MAX_CONCURRENCY)


async def fan_out(
    ids: Sequence[int],
    fetch: Callable[[int], Awaitable[R]],
    concurrency: int,
    *,
    fatal: Callable[[Exception], bool] = lambda exc: False,
) -> AsyncGenerator[tuple[int, R | None, Exception | None], None]:
    """Yield ``(id, result, None)`` or ``(id, None, exception)`` per id as each completes.

    At most ``concurrency`` fetches run at once, and at most ``concurrency`` finished
    outcomes wait for the consumer: a worker takes a slot before it starts a fetch and
    the consumer frees it on receipt, so workers pause when it falls behind (and never
    block after a fetch). Exceptions are handed over, never lost inside a task; a
    worker stops after an exception ``fatal`` accepts. Closing the generator cancels
    and reaps the workers.
    """
    done: asyncio.Queue[tuple[int, R | None, Exception | None]] = asyncio.Queue()
    slots = asyncio.Semaphore(2 * concurrency)
    upcoming = iter(ids)

    async def worker() -> None:
        for key in upcoming:
            await slots.acquire()
            try:
                result = await fetch(key)
            except Exception as exc:  # handed to the consumer, which decides
                done.put_nowait((key, None, exc))
                if fatal(exc):
                    return
            else:
                done.put_nowait((key, result, None))

    workers = [asyncio.create_task(worker()) for _ in range(min(concurrency, len(ids)))]
    try:
        for _ in range(len(ids)):
            outcome = await done.get()
            slots.release()
            yield outcome
    finally:
        await cancel_all(workers)


async def batches(
    source: Source,
    ids: Sequence[int],
    fetch: Callable[[int], Awaitable[builtins.list[Entry]]],
    *,
    concurrency: int,
    raise_on_error: bool,
    progress: Progress | Callable[[int, int], object] | None,
) -> AsyncGenerator[EntryBatch, None]:
    """``EntryBatch`` per id as each completes (arguments already validated).

    An ``SvcError`` becomes the batch's ``error``, or is raised when ``raise_on_error``
    (cancelling the rest). A closed client (``ClientClosedError``) or the wrong event
    loop is no one event's fault and is always raised, as is any non-``SvcError``
    exception (a bug).
    """
    total = len(ids)
    finished = 0
    outcomes = fan_out(ids, fetch, concurrency, fatal=lambda exc: not _per_source(exc))
    try:
        async for key, entries, error in outcomes:
            finished += 1
            if error is not None and (raise_on_error or not _per_source(error)):
                raise error
            await notify(progress, finished, total)
            if isinstance(error, SvcError):
                yield EntryBatch(source=source, source_id=key, error=error)
            else:
                yield EntryBatch(source=source, source_id=key, entries=entries or [])
    finally:
        await outcomes.aclose()


def _per_source(error: Exception) -> bool:
    """Whether ``error`` belongs to one id's batch rather than to the whole run."""
    return isinstance(error, SvcError) and not isinstance(
        error, ClientClosedError | WrongEventLoopError
    )


def entry_batches(
    fetch: FetchEntries,
    source: Source,
    ids: Iterable[int],
    *,
    body: dict[str, Any] | None,
    concurrency: int = 8,
    raise_on_error: bool = False,
    progress: Progress | Callable[[int, int], object] | None = None,
) -> AsyncGenerator[EntryBatch, None]:
    """Validate everything now, then return the generator of batches for ``ids``, each
    fetched with the one filter ``body`` (built and checked by the caller, not per id)."""
    keys = unique_ids(ids, f"{source}_ids")
    limit = check_concurrency(concurrency)
    if progress is not None and not callable(progress):
        raise TypeError("progress must be a callable progress(done, total) or None")
    if not isinstance(raise_on_error, bool):
        raise TypeError("raise_on_error must be a bool")

    async def fetch_one(key: int) -> builtins.list[Entry]:
        return await fetch(source, key, body)

    return batches(
        source,
        keys,
        fetch_one,
        concurrency=limit,
        raise_on_error=raise_on_error,
        progress=progress,
    )


__all__ = [
    "MAX_CONCURRENCY",
    "EntryBatch",
    "Progress",
    "batches",
    "entry_batches",
    "fan_out",
    "unique_ids",
]
