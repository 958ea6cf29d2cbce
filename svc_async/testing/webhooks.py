"""Webhook delivery with retries: status updates, entry updates, output-file callbacks.

A ``WebhookDispatcher`` runs one background task while the fake is in use in an event
loop. It asks its ``source`` for the deliveries due on the fake clock (a job reaching
its final status, a VOD output file becoming ready) and when to look again, sleeping
until then (or until woken by a new job or ``advance``); deliveries made on the spot
(submission, entry changes) go through ``post``. Failures (non-2xx answers or connection
errors) are retried with exponential backoff. Every delivery is recorded.

A job's notices arrive in the order they happen. The API shows a final status from the
moment it falls due, while the watcher may wake a little later (a busy loop), so a
client can read Processed and have the job submitted before Processed was announced:
``post`` announces what is due first. And each delivery about a job (or an entry) waits
for the one before it to finish, delivered or given up, so two connections cannot swap
them on the way.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

import aiohttp
import attrs
import orjson

from .clock import FakeClock

JSON = dict[str, Any]
Source = Callable[[float], tuple[list[tuple[str, JSON]], float | None]]
"""Given now: the (url, payload) deliveries due, and when the next one falls due."""

__all__ = ["Source", "WebhookDelivery", "WebhookDispatcher"]


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
    def kind(self) -> str:
        """``test``, ``status`` (``{id, status}``), ``entry`` or ``output_file``."""
        if self.payload.get("isTest"):
            return "test"
        if "entry" in self.payload:
            return "entry"
        if "verificationJobId" in self.payload:
            return "output_file"
        return "status"

    @property
    def job_id(self) -> int:
        """The job the delivery is about (0 for test deliveries and entry updates)."""
        if self.kind == "output_file":
            return int(self.payload["verificationJobId"])
        return int(self.payload.get("id", 0)) if self.kind != "entry" else 0

    @property
    def status(self) -> str:
        """The status the delivery announced."""
        return str(self.payload.get("status", ""))


class WebhookDispatcher:
    """Delivers what ``source`` says is due, and what ``post`` is given, with retries."""

    def __init__(
        self,
        source: Source,
        clock: FakeClock,
        now: Callable[[], float],
        *,
        url: str | None = None,
        attempts: int = 4,
        backoff: float = 0.05,
        timeout: float = 5.0,
    ) -> None:
        self._source = source
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
        self._last: dict[tuple[str, str, Any], asyncio.Task[WebhookDelivery]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._held: list[tuple[str, JSON]] = []

    def start(self) -> None:
        """Start the watcher in the running loop (idempotent); send what ``post`` held."""
        loop = asyncio.get_running_loop()
        if self._task is None or self._task.done() or self._loop is not loop:
            self._loop = loop
            self._wake = asyncio.Event()
            self._task = loop.create_task(self._run(), name="fake-webhook-dispatcher")
        if self._held:
            held, self._held = self._held, []
            self._due()
            for url, payload in held:
                self._spawn(url, payload)

    @property
    def running(self) -> bool:
        """True while the watcher task is alive."""
        return self._task is not None and not self._task.done()

    def wake(self) -> None:
        """Re-check jobs now (after a new job or a clock move)."""
        if self._wake is not None and self._loop is not None and not self._loop.is_closed():
            self._wake.set()

    def _due(self) -> float | None:
        due, upcoming = self._source(self._now())
        for url, payload in due:
            self._spawn(url, payload)
        return None if upcoming is None else upcoming - self._now()

    def post(self, url: str, payload: JSON) -> None:
        """Deliver ``payload`` to ``url`` now, in the background, after whatever fell due
        before it (a submission never overtakes Processed). Outside a running loop (data
        built before the test's loop runs) it is held until the fake is first used in one.
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            self._held.append((url, payload))
            return
        self.start()
        self._due()
        self._spawn(url, payload)

    def _spawn(self, url: str, payload: JSON) -> asyncio.Task[WebhookDelivery]:
        key = _order_key(url, payload)
        before = None if key is None else self._last.get(key)
        task = asyncio.get_running_loop().create_task(self._deliver_after(before, url, payload))
        self._sends.add(task)
        task.add_done_callback(self._sends.discard)
        if key is not None:
            self._last[key] = task
            task.add_done_callback(lambda done: self._forget(key, done))
        return task

    def _forget(self, key: tuple[str, str, Any], done: asyncio.Task[WebhookDelivery]) -> None:
        if self._last.get(key) is done:
            del self._last[key]

    async def _deliver_after(
        self, before: asyncio.Task[WebhookDelivery] | None, url: str, payload: JSON
    ) -> WebhookDelivery:
        if before is not None:
            await asyncio.wait([before])  # its outcome does not matter, only that it ended
        return await self.deliver(url, payload)

    async def _run(self) -> None:
        assert self._wake is not None
        while True:
            self._wake.clear()
            wait = self._due()
            timeout = None if wait is None or self._clock.frozen else max(wait, 0.001)
            # A timeout block, not wait_for: on 3.11 wait_for drops a cancellation that
            # lands just after a wake, and the watcher would then never stop.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):  # the loop's timer: see TIMERS_ALLOWED
                    await self._wake.wait()

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
                    await self._clock.sleep(self.backoff * 2**attempt)
        return delivery

    async def wait_idle(self, timeout: float = 5.0) -> None:
        """Wait until everything due was sent and every delivery has finished."""
        async with asyncio.timeout(timeout):
            while True:
                if self.running:
                    self._due()
                if not self._sends:
                    return
                await asyncio.wait(set(self._sends))

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
            self._last.clear()
            return
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._task = None
        self._sends.clear()
        self._last.clear()


def _order_key(url: str, payload: JSON) -> tuple[str, str, Any] | None:
    """What a delivery must stay in order with: the same job's or entry's notices to the
    same URL (None for test deliveries, which follow nothing)."""
    if payload.get("isTest"):
        return None
    if "verificationJobId" in payload:
        return url, "job", payload["verificationJobId"]
    entry = payload.get("entry")
    if isinstance(entry, dict):
        return url, "entry", entry.get("id")
    return url, "job", payload.get("id")
