"""Static type test: one ``Progress`` and one ``TimeoutArg`` fit every call that takes them.

Nothing here runs under pytest; ``mypy --strict tests/typing`` fails if a signature drifts.
"""

from __future__ import annotations

import io

from svc_async import AttemptTimeoutArg, Client, Progress, Timeout, TimeoutArg


def _bytes(done: int, total: int | None) -> None:
    print(done, total)


async def _events(done: int, total: int) -> None:  # bulk reads always know the total
    print(done, total)


async def check(svc: Client) -> None:
    progress: Progress = _bytes
    await svc.download("https://storage.example/x", io.BytesIO(), progress=progress)
    async for _ in svc.entries.for_events([1], progress=progress):
        pass
    async for _ in svc.entries.for_seasons([1], progress=progress):
        pass
    async for _ in svc.entries.for_events([1], progress=_events):
        pass
    for timeout in (1.5, None):
        limit: TimeoutArg = timeout
        await svc.jobs.get(1, timeout=limit)
        await svc.seasons.list(timeout=limit)
        await svc.events.list(timeout=limit)
    Client("https://x.example", token="t", timeout=limit)
    for each in (2.0, Timeout(total=3.0, connect=1.0), None):
        per: AttemptTimeoutArg = each
        await svc.jobs.get(1, timeout=5, attempt_timeout=per)
        await svc.entries.for_event(1, attempt_timeout=per)
        await svc.request("GET", "/x", timeout=None, attempt_timeout=per)
        svc.with_options(timeout=5, attempt_timeout=per)
    Client("https://x.example", token="t", timeout=120, attempt_timeout=per)
