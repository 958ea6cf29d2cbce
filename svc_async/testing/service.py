"""``FakeService``: the whole Licence Verification Service, in memory.

One object owns the state, the clock, the settings and the fault injector; it runs on a
loopback port (``serve``, with the files origin on a second port), inside the process
(``transport``) or mounted in your own aiohttp server (``app`` and ``files_app``) - all
share the same data. Adding and changing data is in ``builders``, reading it back in
``observe``.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from types import TracebackType
from typing import Any

from aiohttp import web
from multidict import CIMultiDict

from .._transports.base import DEFAULT_MAX_BODY
from ..clock import Clock
from .app import InProcessTransport, make_app
from .clock import FakeClock
from .core import ServiceCore
from .drivers import Drivers
from .faults import FaultConfig
from .files import FILES_ORIGIN, FileStore
from .flavour import Flavour
from .knobs import Knobs
from .licensing import build_catalogue
from .lifecycle import due_notices
from .observe import Observers
from .resources.base import Settings
from .resources.jobs import render_output_file
from .seed import (
    DEFAULT_API_KEY,
    DEFAULT_TOKEN,
    REGION_API_KEY,
    REGION_TOKEN,
    default_accounts,
    seed_demo,
    seed_jobs,
    seed_root,
)
from .state import Account, State
from .today import dress_state
from .webhooks import WebhookDispatcher
from .wire import Outcome, RawRequest

JSON = dict[str, Any]

__all__ = ["FakeService"]


class FakeService(Drivers, Observers, Knobs):
    """A stateful in-memory fake of the service, for demos, end-to-end tests and yours.

    ``seed`` makes the demo data, tokens and fault draws deterministic. Times are on
    ``clock`` (default: wall time; pass ``FakeClock(start=...)`` to freeze it, or the
    ``VirtualClock`` your client runs on to share its virtual time) plus
    ``clock_skew``; move it with ``advance``. ``legacy=True`` speaks the published
    examples' older shapes instead of today's (see ``flavour.Flavour``). The rules each
    endpoint follows are in its module's docstring under ``resources``.
    """

    DEFAULT_TOKEN = DEFAULT_TOKEN
    """Static bearer token of the default account (sees the whole demo federation)."""
    DEFAULT_API_KEY = DEFAULT_API_KEY
    """(key id, secret) of the default account."""
    REGION_TOKEN = REGION_TOKEN
    """Static bearer token of the demo's one-region account (org 2 and its clubs)."""
    REGION_API_KEY = REGION_API_KEY
    """(key id, secret) of the one-region account."""

    def __init__(
        self,
        seed: int = 0,
        *,
        accounts: Sequence[Account] | None = None,
        processing_delay: float = 2.0,
        token_ttl: float | None = None,
        rate_limit: tuple[int, float] | None = (1000, 60.0),
        search_lag: float = 0.0,
        clock_skew: float = 0.0,
        webhook_url: str | None = None,
        faults: FaultConfig | None = None,
        demo_data: bool = True,
        clock: FakeClock | Clock | None = None,
        file_size: int = 64 * 1024,
        url_ttl: int = 216000,
        webhook_attempts: int = 4,
        webhook_backoff: float = 0.05,
        legacy: bool = False,
    ) -> None:
        self.seed = seed
        self.legacy = legacy
        """True: the published examples' shapes (Completed, ``{jobs, count}``, 12 checks)."""
        if clock is None or isinstance(clock, FakeClock):
            self.clock = clock or FakeClock()
        else:
            self.clock = FakeClock(source=clock)
        self.state = State()
        self.catalogue = build_catalogue(seed)
        secret = hashlib.sha256(f"fake-files-{seed}".encode()).digest()
        self.files = FileStore(secret=secret, file_size=file_size, url_ttl=url_ttl)
        self.settings = Settings(
            processing_delay=processing_delay,
            token_ttl=token_ttl,
            rate_limit=rate_limit,
            search_lag=search_lag,
            clock_skew=clock_skew,
        )
        self.core = ServiceCore(
            seed=seed,
            state=self.state,
            files=self.files,
            clock=self.clock,
            settings=self.settings,
            catalogue=self.catalogue,
            faults=faults,
            flavour=Flavour(legacy),
        )
        if demo_data:
            seed_demo(self.state, self.files, self.catalogue, seed)
            seed_jobs(self.state, self.files, self.catalogue, legacy=legacy)
            if not legacy:
                dress_state(self.state, self.files)
        else:
            seed_root(self.state)
        self.state.accounts.extend(
            accounts if accounts is not None else default_accounts(demo_data)
        )
        self._webhooks = WebhookDispatcher(
            self._due_notices,
            self.clock,
            self.core.now,
            url=webhook_url,
            attempts=webhook_attempts,
            backoff=webhook_backoff,
        )
        self.core.on_job_created = lambda _id: self._webhooks.wake()
        self.in_flight = 0
        """Requests being handled right now (injected latency included)."""
        self.max_in_flight = 0
        """Peak of ``in_flight`` since creation or ``reset_counters``."""
        self.base_url: str | None = None
        """The URL ``serve`` is listening on, while it runs."""
        self._app: web.Application | None = None
        self._files_app: web.Application | None = None

    def __repr__(self) -> str:
        return f"<FakeService seed={self.seed} jobs={len(self.state.jobs)} url={self.base_url}>"

    @property
    def files_url(self) -> str:
        """The files origin (signed links point here): a second loopback port while
        ``serve`` runs, else ``http://files.fake.invalid`` (in-process)."""
        return self.files.origin

    # ----------------------------------------------------------------- time

    def now(self) -> float:
        """Server time (fake clock plus skew), epoch seconds."""
        return self.core.now()

    def advance(self, seconds: float) -> None:
        """Move the fake clock forward (jobs progress, tokens and links expire)."""
        self.clock.advance(seconds)
        self._webhooks.wake()

    # ----------------------------------------------------------------- running

    async def _execute(self, raw: RawRequest) -> Outcome:
        self._webhooks.start()
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            pending = self.core.begin(raw)
            if pending.delay > 0:
                await self.clock.sleep(pending.delay)
            outcome = self.core.finish(pending)
            if outcome.stall > 0:
                await self.clock.sleep(outcome.stall)
            return outcome
        finally:
            self.in_flight -= 1

    async def handle(
        self,
        method: str,
        path: str,
        *,
        headers: Mapping[str, str] | None = None,
        body: bytes = b"",
        query: Mapping[str, str] | None = None,
        base: str = "http://fake.invalid",
        origin: str = "api",
    ) -> Outcome:
        """Answer one request directly (the sans-I/O entry point, faults included);
        ``origin="files"`` asks the files origin."""
        raw = RawRequest(
            method=method,
            path=path,
            query=dict(query or {}),
            headers=CIMultiDict(headers or {}),
            body=body,
            base=base,
            origin=origin,
        )
        return await self._execute(raw)

    @property
    def app(self) -> web.Application:
        """An aiohttp Application serving the fake, to mount or run yourself."""
        if self._app is None:
            self._app = make_app(self._execute)
        return self._app

    @property
    def files_app(self) -> web.Application:
        """An aiohttp Application serving the files origin (set ``files.origin`` to
        where you mount it)."""
        if self._files_app is None:
            self._files_app = make_app(self._execute, origin="files")
        return self._files_app

    @asynccontextmanager
    async def serve(self, host: str = "127.0.0.1", port: int = 0) -> AsyncIterator[str]:
        """Serve on ``host:port`` (default a free loopback port); yields the base URL.

        The files origin listens on another free port of ``host`` (``files_url``). On
        exit an answer still in flight gets 0.1 s to finish, then is cut (an injected
        stall or latency would otherwise hold the stop).
        """
        runner = web.AppRunner(make_app(self._execute), access_log=None, shutdown_timeout=0.1)
        files_runner = web.AppRunner(
            make_app(self._execute, origin="files"), access_log=None, shutdown_timeout=0.1
        )
        await runner.setup()
        await files_runner.setup()
        try:
            site = web.TCPSite(runner, host, port)
            await site.start()
            files_site = web.TCPSite(files_runner, host, 0)
            await files_site.start()
            self.base_url = f"http://{host}:{runner.addresses[0][1]}"
            self.files.origin = f"http://{host}:{files_runner.addresses[0][1]}"
            self._webhooks.start()
            yield self.base_url
        finally:
            self.base_url = None
            self.files.origin = FILES_ORIGIN
            await files_runner.cleanup()
            await runner.cleanup()
            await self._webhooks.aclose()

    def transport(
        self, base_url: str = "http://fake.invalid", *, max_body_size: int = DEFAULT_MAX_BODY
    ) -> InProcessTransport:
        """An SDK transport answering from this fake without sockets.

        Closing it stops the fake's background webhook task (it restarts on the next
        request); the data stays. A body over ``max_body_size`` raises
        ``ResponseTooLargeError``, as ``AiohttpTransport(max_body_size=...)`` does.
        """

        async def on_close() -> None:
            if self.base_url is None:
                await self._webhooks.aclose()

        return InProcessTransport(
            self._execute,
            base_url=base_url,
            on_close=on_close,
            files_origin=lambda: self.files.origin,
            max_body_size=max_body_size,
        )

    def _due_notices(self, now: float) -> tuple[list[tuple[str, JSON]], float | None]:
        """Deliveries due on the clock: final status updates and output-file callbacks."""
        due: list[tuple[str, JSON]] = []
        upcoming: float | None = None
        for job in list(self.state.jobs.values()):
            kinds, later = due_notices(job, now)
            if later is not None and (upcoming is None or later < upcoming):
                upcoming = later
            if "final" in kinds and self.webhook_url:
                status = "Errored" if job.final_status == "Errored" else self.core.flavour.processed
                due.append((self.webhook_url, {"id": job.id, "status": status}))
            if "output" in kinds and job.output is not None and job.output.callback_url:
                body = render_output_file(job, job.output, now=now, files=self.files)
                due.append((job.output.callback_url, body))
        return due, upcoming

    async def aclose(self) -> None:
        """Stop background work (webhook watcher and deliveries)."""
        await self._webhooks.aclose()

    async def __aenter__(self) -> FakeService:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
