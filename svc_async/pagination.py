"""Async iterators over limit/offset pages."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Protocol, TypeVar


class _HasId(Protocol):
    @property
    def id(self) -> int: ...


T = TypeVar("T", bound=_HasId)


async def iter_offset(
    fetch: Callable[[int, int], Awaitable[list[T]]], page_size: int
) -> AsyncIterator[T]:
    """Yield every item of ``fetch(limit, offset)`` pages until a short page.

    Items already yielded (same id) are skipped: when items are added while paging, an
    offset window can shift and show an item twice.
    """
    seen: set[int] = set()
    offset = 0
    while True:
        page = await fetch(page_size, offset)
        for item in page:
            if item.id not in seen:
                seen.add(item.id)
                yield item
        if len(page) < page_size:
            return
        offset += page_size
