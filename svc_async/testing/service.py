"""``FakeService``: the whole Licence Verification Service, in memory.

One object owns the state, the clock, the settings and the fault injector; it runs on a
loopback port (``serve``), inside the process (``transport``) or mounted in your own
aiohttp server (``app``) - all three share the same data.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import Counter
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from types import TracebackType
from typing import Any

from aiohttp import web
from multidict import CIMultiDict

from .app import InProcessTransport, make_app
from .clock import FakeClock, format_timestamp, parse_timestamp
from .faults import FaultConfig
from .files import FileStore
from .handlers import Outcome, RawRequest, RecordedRequest, ServiceCore, Settings
from .jobs import finish_job, render_job
from .licensing import build_catalogue
from .render import render_entry
from .seed import (
    BASE_TIME,
    DEFAULT_API_KEY,
    DEFAULT_TOKEN,
    REGION_API_KEY,
    REGION_TOKEN,
    add_service_licence,
    default_accounts,
    make_recording,
    seed_demo,
    seed_jobs,
    seed_root,
    standard_fields,
)
from .state import Account, Entry, Event, Org, Season, SignupField, State
from .webhooks import WebhookDelivery, WebhookDispatcher

JSON = dict[str, Any]

__all__ = ["FakeService"]

_YEAR = 365 * 86400.0


def _ts(value: float | str | None, default: float) -> float:
    if value is None:
        return default
    if isinstance(value, str):
        parsed = parse_timestamp(value)
        if parsed is None:
            raise ValueError(f"not a timestamp: {value!r}")
        return parsed
    return float(value)


class FakeService:
    """A stateful in-memory fake of the service, for demos, end-to-end tests and yours.

    ``seed`` makes the demo data, tokens and fault draws deterministic. Times are on
    ``clock`` (default: wall time; pass ``FakeClock(start=...)`` to freeze it) plus
    ``clock_skew``; move it with ``advance``. See the package docstring for the rules.
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
        clock: FakeClock | None = None,
        file_size: int = 64 * 1024,
        url_ttl: int = 216000,
        webhook_attempts: int = 4,
        webhook_backoff: float = 0.05,
    ) -> None:
        self.seed = seed
        self.clock = clock or FakeClock()
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
        )
        if demo_data:
            seed_demo(self.state, self.files, self.catalogue, seed)
            seed_jobs(self.state, self.files, self.catalogue)
        else:
            seed_root(self.state)
        self.state.accounts.extend(
            accounts if accounts is not None else default_accounts(demo_data)
        )
        self._webhooks = WebhookDispatcher(
            self.state,
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

    def __repr__(self) -> str:
        return f"<FakeService seed={self.seed} jobs={len(self.state.jobs)} url={self.base_url}>"

    # ----------------------------------------------------------------- settings

    @property
    def processing_delay(self) -> float:
        """Seconds from job creation to its final status (new jobs only)."""
        return self.settings.processing_delay

    @processing_delay.setter
    def processing_delay(self, value: float) -> None:
        self.settings.processing_delay = value

    @property
    def token_ttl(self) -> float | None:
        """Lifetime in seconds of access tokens issued from now on (None: forever)."""
        return self.settings.token_ttl

    @token_ttl.setter
    def token_ttl(self, value: float | None) -> None:
        self.settings.token_ttl = value

    @property
    def rate_limit(self) -> tuple[int, float] | None:
        """(requests, window seconds) per token, fixed window; None disables it."""
        return self.settings.rate_limit

    @rate_limit.setter
    def rate_limit(self, value: tuple[int, float] | None) -> None:
        self.settings.rate_limit = value

    @property
    def search_lag(self) -> float:
        """Seconds after creation before a job shows up in search."""
        return self.settings.search_lag

    @search_lag.setter
    def search_lag(self, value: float) -> None:
        self.settings.search_lag = value

    @property
    def clock_skew(self) -> float:
        """Seconds added to the clock for everything the server says (Date, timestamps)."""
        return self.settings.clock_skew

    @clock_skew.setter
    def clock_skew(self, value: float) -> None:
        self.settings.clock_skew = value

    @property
    def faults(self) -> FaultConfig | None:
        """The active fault configuration; assigning one restarts its random sequence."""
        return self.core.injector.config

    @faults.setter
    def faults(self, value: FaultConfig | None) -> None:
        self.core.injector.config = value

    @property
    def webhook_url(self) -> str | None:
        """Where job status updates are POSTed (None: nowhere)."""
        return self._webhooks.url

    @webhook_url.setter
    def webhook_url(self, value: str | None) -> None:
        self._webhooks.url = value

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
                await asyncio.sleep(pending.delay)
            outcome = self.core.finish(pending)
            if outcome.stall > 0:
                await asyncio.sleep(outcome.stall)
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
    ) -> Outcome:
        """Answer one request directly (the sans-I/O entry point, faults included)."""
        raw = RawRequest(
            method=method,
            path=path,
            query=dict(query or {}),
            headers=CIMultiDict(headers or {}),
            body=body,
            base=base,
        )
        return await self._execute(raw)

    @property
    def app(self) -> web.Application:
        """An aiohttp Application serving the fake, to mount or run yourself."""
        if self._app is None:
            self._app = make_app(self._execute)
        return self._app

    @asynccontextmanager
    async def serve(self, host: str = "127.0.0.1", port: int = 0) -> AsyncIterator[str]:
        """Serve on ``host:port`` (default a free loopback port); yields the base URL."""
        runner = web.AppRunner(make_app(self._execute), access_log=None, shutdown_timeout=0.5)
        await runner.setup()
        try:
            site = web.TCPSite(runner, host, port)
            await site.start()
            bound = runner.addresses[0][1]
            self.base_url = f"http://{host}:{bound}"
            self._webhooks.start()
            yield self.base_url
        finally:
            self.base_url = None
            await runner.cleanup()
            await self._webhooks.aclose()

    def transport(self, base_url: str = "http://fake.invalid") -> InProcessTransport:
        """An SDK transport answering from this fake without sockets.

        Closing it stops the fake's background webhook task (it restarts on the next
        request); the data stays.
        """

        async def on_close() -> None:
            if self.base_url is None:
                await self._webhooks.aclose()

        return InProcessTransport(self._execute, base_url=base_url, on_close=on_close)

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

    # ----------------------------------------------------------------- recording

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received, in arrival order."""
        return self.core.requests

    @property
    def calls(self) -> Counter[tuple[str, str]]:
        """Request counts keyed by (METHOD, route template), e.g.
        ``("GET", "/api/public/v1/verification-job/{verificationJobId}")``."""
        return self.core.calls

    def count(self, method: str, route: str) -> int:
        """How many ``method`` requests hit ``route`` (a template, or a literal path)."""
        method = method.upper()
        hits = self.core.calls.get((method, route), 0)
        if hits:
            return hits
        return sum(1 for r in self.core.requests if r.method == method and r.path == route)

    @property
    def rate_limited(self) -> int:
        """How many 429 answers were sent (enforced limit and injected bursts)."""
        return self.core.rate_limited

    @property
    def faults_injected(self) -> int:
        """How many faults (other than plain latency) the current config injected."""
        return self.core.injector.injected

    def reset_counters(self) -> None:
        """Forget recorded requests, call counts, 429 count and the in-flight peak."""
        self.core.requests.clear()
        self.core.calls.clear()
        self.core.rate_limited = 0
        self.max_in_flight = self.in_flight

    @property
    def webhook_deliveries(self) -> list[WebhookDelivery]:
        """Every webhook delivery made (job status updates and test deliveries)."""
        return self._webhooks.deliveries

    async def wait_webhooks(self, timeout: float = 5.0) -> None:
        """Wait until every finished job was announced and all deliveries are done."""
        self._webhooks.start()
        await self._webhooks.wait_idle(timeout)

    async def send_test_webhook(self, url: str | None = None) -> WebhookDelivery:
        """POST ``{"id": 0, "status": "Completed", "isTest": true}`` to the webhook URL."""
        target = url or self.webhook_url
        if target is None:
            raise ValueError("no webhook_url configured")
        payload = {"id": 0, "status": "Completed", "isTest": True}
        return await self._webhooks.deliver(target, payload)

    # ----------------------------------------------------------------- reading

    @property
    def jobs(self) -> dict[int, JSON]:
        """Every job as the service would return it now (id -> wire-format dict)."""
        return {jid: self.job(jid) for jid in sorted(self.state.jobs)}

    def job(self, job_id: int, base: str | None = None) -> JSON:
        """One job as the service would return it now."""
        return render_job(
            self.state.jobs[job_id],
            now=self.now(),
            base=base or self.base_url or "http://fake.invalid",
            files=self.files,
        )

    def entry(self, entry_id: int, base: str | None = None) -> JSON:
        """One entry as the service would return it now."""
        return render_entry(
            self.state.entries[entry_id],
            base=base or self.base_url or "http://fake.invalid",
            files=self.files,
            now=self.now(),
        )

    # ----------------------------------------------------------------- writing

    def add_account(
        self,
        name: str,
        org_ids: Sequence[int],
        *,
        token: str | None = None,
        api_key: tuple[str, str] | None = None,
    ) -> Account:
        """Add an account acting for ``org_ids`` (and their descendants)."""
        account = Account(
            name=name,
            org_ids=tuple(org_ids),
            tokens=(token,) if token else (),
            api_keys=dict([api_key]) if api_key else {},
        )
        self.state.accounts.append(account)
        return account

    def add_org(
        self,
        name: str,
        parent_id: int | None = None,
        *,
        is_event_producer: bool = True,
        logo: JSON | None = None,
    ) -> int:
        """Add an organisation under ``parent_id`` (None: a new root); returns its id."""
        if parent_id is not None and parent_id not in self.state.orgs:
            raise ValueError(f"no organisation {parent_id}")
        now = self.now()
        org = Org(
            id=self.state.next_id("org"),
            name=name,
            parent_id=parent_id,
            created_at=now,
            updated_at=now,
            is_event_producer=is_event_producer,
            logo=logo,
        )
        self.state.orgs[org.id] = org
        return org.id

    def add_season(
        self,
        org_id: int,
        title: str,
        *,
        start: float | str | None = None,
        end: float | str | None = None,
        signup_fields: bool = True,
        invite_url: str | None = None,
    ) -> int:
        """Add a season (with the standard signup questions by default); returns its id."""
        if org_id not in self.state.orgs:
            raise ValueError(f"no organisation {org_id}")
        begin = _ts(start, BASE_TIME)
        season = Season(
            id=self.state.next_id("season"),
            organisation_id=org_id,
            title=title,
            start=begin,
            end=_ts(end, begin + 180 * 86400),
            invite_url=invite_url,
            signup_fields=standard_fields(self.state) if signup_fields else [],
        )
        self.state.seasons[season.id] = season
        return season.id

    def add_event(
        self,
        org_id: int,
        title: str,
        *,
        territory: str = "GB",
        season_id: int | None = None,
        start: float | str | None = None,
        end: float | str | None = None,
        signup_fields: bool = True,
    ) -> int:
        """Add an event (division/externalId/ageGroup questions by default); returns its id."""
        if org_id not in self.state.orgs:
            raise ValueError(f"no organisation {org_id}")
        if season_id is not None and season_id not in self.state.seasons:
            raise ValueError(f"no season {season_id}")
        begin = _ts(start, BASE_TIME)
        event_id = self.state.next_id("event")
        event = Event(
            id=event_id,
            organisation_id=org_id,
            title=title,
            territory=territory,
            start=begin,
            end=_ts(end, begin),
            invite_token=hashlib.sha256(f"{self.seed}:event:{event_id}".encode()).hexdigest()[:32],
            season_id=season_id,
            signup_fields=standard_fields(self.state) if signup_fields else [],
        )
        self.state.events[event.id] = event
        return event.id

    def add_entry(
        self,
        event_id: int | None = None,
        *,
        season_id: int | None = None,
        name: str = "Test Team",
        email: str | None = "coach@team.example",
        fields: Mapping[str, str | list[str]] | None = None,
        recording: str | Sequence[str] | None = None,
    ) -> int:
        """Add an entry to an event (or directly to a season); returns its id.

        ``fields`` maps signup-field keys (division, externalId, ageGroup) to answers.
        ``recording`` is a scenario (see ``seed``: licensed, other, bespoke,
        pending_license, rejected, territory, partial, failed), a list of per-song
        scenarios, or None for no recording; it is stamped ``updatedAt`` = now.
        """
        if (event_id is None) == (season_id is None):
            raise ValueError("give exactly one of event_id and season_id")
        questions: list[SignupField]
        if event_id is not None:
            event = self.state.events[event_id]
            questions, territories = event.signup_fields, [event.territory]
        else:
            assert season_id is not None
            questions, territories = self.state.seasons[season_id].signup_fields, ["GB"]
        by_key = {q.key: q for q in questions if q.key}
        entry_fields: list[JSON] = []
        for key, value in (fields or {}).items():
            if key not in by_key:
                raise ValueError(f"no signup field with key {key!r}; known: {sorted(by_key)}")
            entry_fields.append({"value": value, "signupFieldId": by_key[key].id, "key": key})
        now = self.now()
        rec = None
        if recording is not None:
            rec = make_recording(
                self.state,
                self.files,
                self.catalogue,
                recording,
                territories=territories,
                email=email or "unknown@team.example",
                created=now,
                updated=now,
                name=name,
            )
        entry = Entry(
            id=self.state.next_id("entry", 200),
            name=name,
            email=email,
            fields=entry_fields,
            recording=rec,
            event_id=event_id,
            season_id=season_id,
        )
        self.state.entries[entry.id] = entry
        return entry.id

    def touch_recording(self, entry_id: int) -> str:
        """Bump an entry's recording ``updatedAt`` to now; returns the new timestamp."""
        rec = self.state.entries[entry_id].recording
        if rec is None:
            raise ValueError(f"entry {entry_id} has no recording")
        rec.updated_at = max(self.now(), rec.updated_at + 0.001)
        return format_timestamp(rec.updated_at)

    def add_service_licence(
        self,
        email: str,
        *,
        svc_ids: Sequence[str] | None = None,
        territories: Sequence[str] = ("GB", "US", "IE", "CA", "AU", "NZ"),
        valid_to: float | str | None = None,
    ) -> str:
        """Make the service hold a licence for ``email`` (None ``svc_ids``: every song).

        Jobs created afterwards with that email get those songs licensed by the service;
        returns the licence ref.
        """
        now = self.now()
        licence = add_service_licence(
            self.state,
            email=email,
            svc_ids=svc_ids,
            territories=territories,
            date_purchased=now - 30 * 86400,
            valid_to=_ts(valid_to, now + _YEAR),
        )
        return licence.ref

    def finish_job(self, job_id: int, *, error: str | None = None) -> None:
        """Make a job finish now (Errored with ``error`` when given)."""
        finish_job(self.state.jobs[job_id], self.now(), error)
        self._webhooks.wake()

    def expire_tokens(self) -> None:
        """Expire every access token issued so far (static tokens are unaffected)."""
        self.core.expire_tokens()

    def set_file(self, key: str, content: bytes) -> None:
        """Store the bytes served for file ``key`` (a recording's ``file_key``)."""
        self.files.contents[key] = content
