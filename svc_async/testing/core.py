"""The sans-I/O core: one request in, one answer out, no sockets and no awaits.

``ServiceCore.begin`` records a request and decides its faults; after the adapter has
waited the injected latency, ``ServiceCore.finish`` answers it: storage requests (the
files origin, and licence links on the API origin, which redirect there) are neither
authenticated nor rate limited; API requests are routed, rate limited (a fixed window per
bearer token, ``anonymous`` without one; every answer carries ``x-ratelimit-*``),
authenticated and handed to the handler a resource module declares (``resources``;
the core only gathers their route tables).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import orjson

from .access import RateWindows, TokenBook, bearer
from .clock import FakeClock, http_date
from .faults import FaultConfig, FaultDecision, FaultInjector
from .files import FileStore
from .flavour import Flavour
from .resources import auth, entries, events, jobs, orgs, seasons
from .resources.base import Call, Route, Settings
from .state import State
from .wire import (
    JSON,
    HTTPError,
    Outcome,
    Pending,
    RawRequest,
    RecordedRequest,
    error_body,
    nginx_page,
    seconds_text,
)

__all__ = ["ROUTE_TEMPLATES", "ServiceCore"]

FILES_ROUTE = "/files/{kind}/{key}"
"""The route template recorded for storage requests (both origins)."""


_ROUTES: tuple[Route, ...] = (
    *auth.ROUTES,
    *orgs.ROUTES,
    *seasons.ROUTES,
    *events.ROUTES,
    *entries.ROUTES,
    *jobs.ROUTES,
)

ROUTE_TEMPLATES: tuple[str, ...] = tuple(r.template for r in _ROUTES)
"""Every API route template (for ``FakeService.count`` and ``FaultConfig.paths``)."""


def _route_for(method: str, path: str) -> tuple[Route | None, dict[str, str], bool]:
    path_exists = False
    for route in _ROUTES:
        match = route.pattern.match(path)
        if match is None:
            continue
        path_exists = True
        if route.method == method.upper():
            return route, match.groupdict(), True
    return None, {}, path_exists


class ServiceCore:
    """Records requests, injects faults, and answers storage and API requests."""

    def __init__(
        self,
        *,
        seed: int,
        state: State,
        files: FileStore,
        clock: FakeClock,
        settings: Settings,
        catalogue: list[JSON],
        faults: FaultConfig | None = None,
        flavour: Flavour | None = None,
    ) -> None:
        self.seed = seed
        self.state = state
        self.files = files
        self.clock = clock
        self.settings = settings
        self.catalogue = catalogue
        self.flavour = flavour or Flavour()
        self.injector = FaultInjector(faults, seed)
        self.tokens = TokenBook(state, seed)
        self.windows = RateWindows()
        self.requests: list[RecordedRequest] = []
        self.calls: Counter[tuple[str, str]] = Counter()
        self.rate_limited = 0
        self.on_job_created: Callable[[int], None] | None = None

    def now(self) -> float:
        """Server time: the fake clock plus ``clock_skew``."""
        return self.clock.now() + self.settings.clock_skew

    def expire_tokens(self) -> None:
        """Expire every access token issued by login/refresh (refresh tokens stay valid)."""
        self.tokens.expire_all(self.now())

    # ----------------------------------------------------------------- the two steps

    def begin(self, raw: RawRequest) -> Pending:
        """Record ``raw`` and decide its faults (call ``finish`` after ``delay``)."""
        route, _, _ = _route_for(raw.method, raw.path)
        template = route.template if route and raw.origin == "api" else None
        if template is None and raw.path.startswith("/files/"):
            template = FILES_ROUTE
        try:
            parsed = orjson.loads(raw.body) if raw.body else None
        except orjson.JSONDecodeError:
            parsed = None
        record = RecordedRequest(
            method=raw.method.upper(),
            path=raw.path,
            route=template,
            query=dict(raw.query),
            headers=dict(raw.headers),
            body=raw.body,
            json=parsed,
            time=self.now(),
            origin=raw.origin,
        )
        self.requests.append(record)
        self.calls[(record.method, template or raw.path)] += 1
        decision = self.injector.decide(raw.method, raw.path, template)
        record.fault = decision.kind or decision.after
        return Pending(raw=raw, record=record, decision=decision, delay=decision.delay)

    def finish(self, pending: Pending) -> Outcome:
        """Produce the answer to a request accepted by ``begin``."""
        outcome = self._answer(pending.raw, pending.decision)
        pending.record.status = 0 if outcome.action == "reset" else outcome.status
        if outcome.status == 429:
            self.rate_limited += 1
        return outcome

    # ----------------------------------------------------------------- answers

    def _answer(self, raw: RawRequest, decision: FaultDecision) -> Outcome:
        now = self.now()
        base_headers = {"Date": http_date(now)}
        injected = self._injected(decision, base_headers)
        if injected is not None:
            return injected
        if raw.origin == "files" or raw.path.startswith("/files/"):
            return self._storage(raw, decision, now, base_headers)
        status, payload, extra = self._dispatch(raw, now)
        headers = {
            **base_headers,
            "Content-Type": "application/json; charset=utf-8",
            "X-Content-Type-Options": "nosniff",
            "vary": "Origin",
            **extra,
        }
        body = orjson.dumps(payload)
        action, stall = "respond", 0.0
        if status < 300:
            if decision.after == "malformed_json":
                body = body[: max(1, len(body) // 2)]
            elif decision.after == "create_cut_off":
                action = "reset"
            elif decision.after == "create_stall":
                stall = decision.stall
        return Outcome(status=status, headers=headers, body=body, action=action, stall=stall)

    def _injected(self, decision: FaultDecision, base: dict[str, str]) -> Outcome | None:
        cfg = self.injector.config
        if decision.kind == "reset":
            return Outcome(status=0, headers=base, body=b"", action="reset")
        if decision.kind in ("error_5xx", "create_503_before"):
            headers = {**base, "Content-Type": "text/html", "Server": "nginx"}
            if cfg is not None and cfg.retry_after is not None:
                headers["Retry-After"] = seconds_text(cfg.retry_after)
            return Outcome(
                status=decision.status, headers=headers, body=nginx_page(decision.status)
            )
        if decision.kind == "burst_429":
            wait = cfg.burst_retry_after if cfg is not None else 1.0
            limit = self.settings.rate_limit[0] if self.settings.rate_limit else 1000
            headers = {
                **base,
                "Content-Type": "application/json; charset=utf-8",
                "Retry-After": seconds_text(wait),
                "x-ratelimit-limit": str(limit),
                "x-ratelimit-remaining": "0",
                "x-ratelimit-reset": seconds_text(wait),
            }
            body = orjson.dumps(error_body(429, "ThrottlerException: Too Many Requests"))
            return Outcome(status=429, headers=headers, body=body)
        return None

    def _storage(
        self, raw: RawRequest, decision: FaultDecision, now: float, base: dict[str, str]
    ) -> Outcome:
        method = raw.method.upper()
        if method not in ("GET", "HEAD"):
            return Outcome(status=405, headers={**base, "Allow": "GET, HEAD"}, body=b"")
        if raw.origin == "files":
            answer = self.files.serve(raw.path, raw.query, raw.headers, now)
        else:
            answer = self.files.redirect_licence(raw.path, raw.query, now)
        body = b"" if method == "HEAD" else answer.body
        cut = decision.after == "cut_body" and answer.status < 300
        return Outcome(
            status=answer.status,
            headers={**base, **answer.headers},
            body=body,
            action="cut_body" if cut else "respond",
        )

    def _dispatch(self, raw: RawRequest, now: float) -> tuple[int, Any, dict[str, str]]:
        route, params, path_exists = _route_for(raw.method, raw.path)
        token = bearer(raw.headers)
        rate_headers, exceeded = self.windows.take(
            token or "anonymous", now, self.settings.rate_limit
        )
        if exceeded:
            return 429, error_body(429, "ThrottlerException: Too Many Requests"), rate_headers
        if route is None:
            if path_exists:
                allowed = ", ".join(
                    sorted({r.method for r in _ROUTES if r.pattern.match(raw.path)})
                )
                return (
                    405,
                    error_body(405, "Method Not Allowed"),
                    {**rate_headers, "Allow": allowed},
                )
            return 404, error_body(404, f"Cannot {raw.method.upper()} {raw.path}"), rate_headers
        account = self.tokens.account_for(token, now)
        if route.auth and account is None:
            return 401, error_body(401, "Unauthorized"), rate_headers
        try:
            status, payload = route.handler(
                self, Call(raw=raw, params=params, account=account, now=now)
            )
        except HTTPError as exc:
            return exc.status, error_body(exc.status, exc.message), rate_headers
        return status, payload, rate_headers
