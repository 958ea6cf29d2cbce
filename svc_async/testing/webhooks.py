"""Webhook delivery: POST ``{"id", "status"}`` when a job finishes, with retries.

A ``WebhookDispatcher`` runs one background task while the fake is in use in an event
loop. It sleeps until the next job is due to finish on the fake clock (or until woken by
a new job or ``advance``), then delivers each finished job's status update to the
configured URL, retrying failures (non-2xx answers or connection errors) with
exponential backoff. Every delivery is recorded.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import aiohttp
import attrs
import orjson

from .clock import FakeClock
from .state import State

JSON = dict[str, Any]

__all__ = ["WebhookDelivery", "WebhookDispatcher"]


@attrs.define(kw_only=True)
class WebhookDelivery:
    """One webhook delivery: payload, the outcome of each attempt, and the verdict.

    ``attempts`` holds the HTTP status of each try, or the exception's class name when
    it got no answer; ``delivered`` is True once a 2xx came back.
    """

    url: str
    payload: JSON
    time: float
    attempts: list[int | str] = attrs.field(factory=list)
    delivered: bool = False

    @property
    def job_id(self) -> int:
        """The job the delivery is about (0 for test deliveries)."""
        return int(self.payload.get("id", 0))

    @property
    def status(self) -> str:
        """The status the delivery announced."""
        return str(self.payload.get("status", ""))


class WebhookDispatcher:
    """Watches for finished jobs and delivers their status updates."""

    def __init__(
        self,
        state: State,
        clock: FakeClock,
        now: Any,
        *,
        url: str | None = None,
        attempts: int = 4,
        backoff: float = 0.05,
        timeout: float = 5.0,
    ) -> None:
        self._state = state
        self._clock = clock
        self._now = now
        self.url = url
        self.attempts = attempts
        self.backoff = backoff
        self.timeout = timeout
        self.deliveries: list[WebhookDelivery] = []
        self._task: asyncio.Task[None] | None = None
        self._wake: asyncio.Event | None = None
        self._sends: set[asyncio.Task[WebhookDelivery]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None

    def start(self) -> None:
        """Start the watcher in the running loop (idempotent)."""
        loop = asyncio.get_running_loop()
        if self._task is not None and not self._task.done() and self._loop is loop:
            return
        self._loop = loop
        self._wake = asyncio.Event()
        self._task = loop.create_task(self._run(), name="fake-webhook-dispatcher")

    @property
    def running(self) -> bool:
        """True while the watcher task is alive."""
        return self._task is not None and not self._task.done()

    def wake(self) -> None:
        """Re-check jobs now (after a new job or a clock move)."""
        if self._wake is not None and self._loop is not None and not self._loop.is_closed():
            self._wake.set()

    def _due(self) -> float | None:
        now = self._now()
        upcoming: float | None = None
        for job in list(self._state.jobs.values()):
            if job.notified:
                continue
            if now >= job.finish_at:
                job.notified = True
                if self.url:
                    payload = {"id": job.id, "status": job.final_status}
                    self._spawn(self.url, payload)
            elif upcoming is None or job.finish_at < upcoming:
                upcoming = job.finish_at
        return None if upcoming is None else upcoming - now

    def _spawn(self, url: str, payload: JSON) -> asyncio.Task[WebhookDelivery]:
        task = asyncio.get_running_loop().create_task(self.deliver(url, payload))
        self._sends.add(task)
        task.add_done_callback(self._sends.discard)
        return task

    async def _run(self) -> None:
        assert self._wake is not None
        while True:
            self._wake.clear()
            wait = self._due()
            timeout = None if wait is None or self._clock.frozen else max(wait, 0.001)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout)

    async def deliver(self, url: str, payload: JSON) -> WebhookDelivery:
        """POST ``payload`` to ``url``, retrying; the delivery is recorded and returned."""
        delivery = WebhookDelivery(url=url, payload=payload, time=self._now())
        self.deliveries.append(delivery)
        body = orjson.dumps(payload)
        headers = {"Content-Type": "application/json", "User-Agent": "svc-fake-webhooks/1"}
        timeout = aiohttp.ClientTimeout(total=self.timeout)
        # One short-lived session per delivery: nothing is left open between deliveries.
        async with aiohttp.ClientSession(timeout=timeout) as session:
            for attempt in range(max(1, self.attempts)):
                try:
                    async with session.post(url, data=body, headers=headers) as resp:
                        await resp.read()
                        delivery.attempts.append(resp.status)
                        if 200 <= resp.status < 300:
                            delivery.delivered = True
                            return delivery
                except (aiohttp.ClientError, OSError, TimeoutError) as exc:
                    delivery.attempts.append(type(exc).__name__)
                if attempt + 1 < self.attempts:
                    await asyncio.sleep(self.backoff * 2**attempt)
        return delivery

    async def wait_idle(self, timeout: float = 5.0) -> None:
        """Wait until every due job was announced and every delivery has finished."""
        async with asyncio.timeout(timeout):
            while True:
                if self.running:
                    self.wake()
                await asyncio.sleep(0)
                due = self.url is not None and any(
                    not j.notified and self._now() >= j.finish_at for j in self._state.jobs.values()
                )
                if not self._sends and not (due and self.running):
                    return
                if self._sends:
                    await asyncio.wait(set(self._sends))
                else:
                    await asyncio.sleep(0.005)

    async def aclose(self) -> None:
        """Stop the watcher and cancel deliveries in progress."""
        tasks = [t for t in (self._task, *self._sends) if t is not None and not t.done()]
        try:
            same_loop = asyncio.get_running_loop() is self._loop
        except RuntimeError:
            same_loop = False
        if not same_loop:
            # Tasks of another (finished) loop cannot be awaited here; just forget them.
            self._task = None
            self._sends.clear()
            return
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._task = None
        self._sends.clear()
