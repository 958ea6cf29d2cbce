"""Async iterators over limit/offset pages.

Two shapes of paging exist in the service:

* ``iter_offset``: pages without a total (events); read one page after another until a
  short page.
* ``iter_counted``: pages that report the total ``count`` of matches (job search); the
  first page tells how many pages remain, and those are fetched concurrently (bounded)
  and yielded in order.

Both deduplicate by id. The service promises no ordering, so an offset window can shift
while paging; see ``iter_counted`` for what that means for items added or removed.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Iterator
from contextlib import aclosing
from typing import Any, Protocol, TypeVar

logger = logging.getLogger(__name__)


class _HasId(Protocol):
    @property
    def id(self) -> int: ...


T = TypeVar("T", bound=_HasId)

CountedPage = tuple[list[T], int]
"""One page of a counted listing: its items and the total number of matches."""

RESCANS = 1
"""Full re-reads ``iter_counted`` makes at most when it saw fewer items than ``count``."""


async def iter_offset(
    fetch: Callable[[int, int], Awaitable[list[T]]], page_size: int
) -> AsyncGenerator[T, None]:
    """Yield every item of ``fetch(limit, offset)`` pages until a short page.

    Items already yielded (same id) are skipped: when items are added while paging, an
    offset window can shift and show an item twice.
    """
    seen: set[int] = set()
    offset = 0
    while True:
        page = await fetch(page_size, offset)
        for item in _fresh(page, seen):
            yield item
        if len(page) < page_size:
            return
        offset += page_size


async def iter_counted(
    fetch: Callable[[int, int], Awaitable[CountedPage[T]]],
    page_size: int,
    concurrency: int,
) -> AsyncGenerator[T, None]:
    """Yield every item of a counted listing once, reading pages concurrently.

    ``fetch(limit, offset)`` returns ``(items, count)``. The first page is read alone;
    its ``count`` says how many pages remain, and those are read with at most
    ``concurrency`` requests in flight and yielded in offset order. Items are
    deduplicated by id.

    Changes while paging (the service gives no ordering guarantee):

    * Items that exist from start to end and keep matching are yielded exactly once.
    * Items added while paging are yielded at most once: when they land on a page not
      read yet they appear; when they push older items to later offsets the duplicates
      are dropped, and pages past the first ``count`` are read (until a short page)
      while the latest ``count`` says more items exist than were read.
    * Items removed (or no longer matching) while paging shift later items to earlier
      offsets, which can hide an item from every page read. When a page reports a
      smaller ``count`` than an earlier one, or fewer distinct items were seen than the
      latest ``count``, the listing is read once more from the start (``RESCANS``) and
      only unseen items are yielded. A removal exactly balanced by an addition between
      two page reads leaves ``count`` unchanged and cannot be detected this way.
    """
    seen: set[int] = set()
    count, offset, last_full = 0, 0, True  # as the pages read so far tell
    shrunk = False  # a later page reported fewer matches than an earlier one

    async def listing() -> AsyncGenerator[CountedPage[T], None]:
        """The first page alone, the pages its count announces (read concurrently,
        yielded in order), then the tail: items added (or shifted) beyond those pages."""
        yield await fetch(page_size, 0)
        announced = range(page_size, _page_end(count, page_size), page_size)
        async with aclosing(_in_order(fetch, page_size, announced, concurrency)) as read:
            async for page in read:
                yield page
        while last_full and offset < count:
            yield await fetch(page_size, offset)

    async with aclosing(listing()) as read:
        async for items, latest in read:
            shrunk, count = shrunk or (offset > 0 and latest < count), latest
            for item in _fresh(items, seen):
                yield item
            last_full = len(items) == page_size
            offset += page_size
    for _ in range(RESCANS):
        if not shrunk and len(seen) >= count:
            return
        logger.info(
            "listing changed while paging (%d seen, %d reported); reading it again",
            len(seen),
            count,
        )
        shrunk = False
        offsets = range(0, _page_end(count, page_size), page_size)
        async with aclosing(_in_order(fetch, page_size, offsets, concurrency)) as pages:
            async for items, latest in pages:
                count = latest
                for item in _fresh(items, seen):
                    yield item


def _page_end(count: int, page_size: int) -> int:
    """The offset just past the last page holding ``count`` items."""
    pages = -(-max(count, 0) // page_size)
    return pages * page_size


def _fresh(items: Iterable[T], seen: set[int]) -> Iterator[T]:
    """The ``items`` whose ids are not in ``seen``, each added to it as it is yielded."""
    for item in items:
        if item.id not in seen:
            seen.add(item.id)
            yield item


async def _in_order(
    fetch: Callable[[int, int], Awaitable[CountedPage[T]]],
    page_size: int,
    offsets: Iterable[int],
    concurrency: int,
) -> AsyncGenerator[CountedPage[T], None]:
    """Fetch ``offsets`` with at most ``concurrency`` in flight; yield pages in order.

    The first failure is raised (in order); leaving early cancels the pages in flight.
    """

    async def page(offset: int) -> CountedPage[T]:
        return await fetch(page_size, offset)

    pending: deque[asyncio.Task[CountedPage[T]]] = deque()
    upcoming = iter(offsets)
    try:
        for offset in upcoming:
            pending.append(asyncio.create_task(page(offset)))
            if len(pending) >= concurrency:
                break
        while pending:
            # Await the head before removing it, so a cancellation here still reaps it.
            result = await pending[0]
            pending.popleft()
            following = next(upcoming, None)
            if following is not None:
                pending.append(asyncio.create_task(page(following)))
            yield result
    finally:
        await cancel_all(pending)


async def cancel_all(tasks: Iterable[asyncio.Task[Any]]) -> None:
    """Cancel ``tasks`` and wait for them, retrieving their outcomes (so none is left
    running, and no exception goes unretrieved)."""
    running = list(tasks)
    for task in running:
        task.cancel()
    if running:
        await asyncio.gather(*running, return_exceptions=True)
