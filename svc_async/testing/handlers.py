"""The sans-I/O core: one request in, one answer out, no sockets and no awaits.

``ServiceCore.begin`` records a request and decides its faults; after the adapter has
waited the injected latency, ``ServiceCore.finish`` routes it, checks the bearer token
and the rate limit, runs the endpoint and returns an ``Outcome`` (status, headers, body
and what the adapter must do: answer, drop the connection, cut the body, stall first).

Rules where the interface is silent:

* Lists are ordered by id, ascending.
* A resource that exists but belongs to organisations the account cannot see answers
  404, exactly like an unknown one (no existence leak). An *organisation id given in a
  request body* (event filter, job creation, search) that the account cannot see answers
  403.
* ``updatedAfter`` filters on the recording's ``updatedAt`` (strictly after); entries
  without a recording are left out when it is given.
* ``fields`` filters are objects with ``signupFieldId`` or ``key`` plus ``value``; an
  entry must match every filter (a field with that id/key whose value equals ``value``,
  or contains it when the entry's value is a list).
* The rate limit is a fixed window per bearer token (``anonymous`` without one); every
  API answer carries ``x-ratelimit-*`` headers, 429 when the window's budget is spent.
  ``/files/...`` (the storage host) is neither authenticated nor rate limited.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import re
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

import attrs
import orjson

from .clock import FakeClock, http_date
from .faults import FaultConfig, FaultDecision, FaultInjector
from .files import FileStore
from .jobs import create_job, job_status, render_job
from .render import render_entry, render_event, render_org, render_season
from .state import Account, Entry, State
from .validation import Validator

JSON = dict[str, Any]

__all__ = ["Outcome", "Pending", "RawRequest", "RecordedRequest", "ServiceCore", "Settings"]

_REASONS = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Time-out",
}


@attrs.define(kw_only=True)
class Settings:
    """The fake's tunable behaviour; every field may be changed at runtime."""

    processing_delay: float = 2.0
    token_ttl: float | None = None
    rate_limit: tuple[int, float] | None = (1000, 60.0)
    search_lag: float = 0.0
    clock_skew: float = 0.0


@attrs.frozen(kw_only=True)
class RawRequest:
    """An HTTP request as the core sees it; ``base`` is the scheme://host it came to."""

    method: str
    path: str
    query: Mapping[str, str] = attrs.field(factory=dict)
    headers: Mapping[str, str] = attrs.field(factory=dict)
    body: bytes = b""
    base: str = "http://fake.invalid"


@attrs.define(kw_only=True)
class RecordedRequest:
    """One received request, kept for assertions (``Authorization`` included).

    ``json`` is the parsed body (None when empty or not JSON), ``time`` the fake clock
    at arrival, ``status`` the status answered (0 when the connection was dropped),
    ``fault`` the injected fault's name, if any.
    """

    method: str
    path: str
    route: str | None
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes
    json: Any
    time: float
    status: int | None = None
    fault: str | None = None


@attrs.frozen(kw_only=True)
class Outcome:
    """The core's answer. ``action``: ``respond``, ``reset`` (drop) or ``cut_body``."""

    status: int
    headers: dict[str, str]
    body: bytes
    action: str = "respond"
    stall: float = 0.0


@attrs.frozen(kw_only=True)
class Pending:
    """A request accepted by ``begin``: wait ``delay`` seconds, then call ``finish``."""

    raw: RawRequest
    record: RecordedRequest
    decision: FaultDecision
    delay: float


@attrs.frozen
class _Route:
    method: str
    template: str
    pattern: re.Pattern[str]
    handler: Callable[[ServiceCore, _Call], tuple[int, Any]]
    auth: bool = True


@attrs.frozen(kw_only=True)
class _Call:
    raw: RawRequest
    params: dict[str, str]
    account: Account | None
    now: float


class _HTTPError(Exception):
    def __init__(self, status: int, message: str | list[JSON]) -> None:
        super().__init__(status)
        self.status = status
        self.message = message if isinstance(message, str) else orjson.dumps(message).decode()


def error_body(status: int, message: str) -> JSON:
    """The service's error body."""
    return {"statusCode": status, "error": _REASONS.get(status, "Error"), "message": message}


def _nginx_page(status: int) -> bytes:
    title = f"{status} {_REASONS.get(status, 'Error')}"
    return (
        f"<html>\r\n<head><title>{title}</title></head>\r\n<body>\r\n"
        f"<center><h1>{title}</h1></center>\r\n<hr><center>nginx</center>\r\n"
        "</body>\r\n</html>\r\n"
    ).encode()


def _compile(template: str) -> re.Pattern[str]:
    regex = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(template))
    return re.compile(f"^{regex}$")


def _seconds(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


class ServiceCore:
    """State, settings, auth, rate limits, faults and every endpoint; pure request logic."""

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
    ) -> None:
        self.seed = seed
        self.state = state
        self.files = files
        self.clock = clock
        self.settings = settings
        self.catalogue = catalogue
        self.injector = FaultInjector(faults, seed)
        self.requests: list[RecordedRequest] = []
        self.calls: Counter[tuple[str, str]] = Counter()
        self.rate_limited = 0
        self.on_job_created: Callable[[int], None] | None = None
        self._secret = hashlib.sha256(f"fake-secret-{seed}".encode()).digest()
        self._access: dict[str, tuple[Account, float | None]] = {}
        self._refresh: dict[str, Account] = {}
        self._windows: dict[str, tuple[float, int]] = {}
        self._token_counter = 0

    # ----------------------------------------------------------------- plumbing

    def now(self) -> float:
        """Server time: the fake clock plus ``clock_skew``."""
        return self.clock.now() + self.settings.clock_skew

    def route_for(self, method: str, path: str) -> tuple[_Route | None, dict[str, str], bool]:
        """The matching route, its path parameters, and whether the path exists at all."""
        path_exists = False
        for route in _ROUTES:
            match = route.pattern.match(path)
            if match is None:
                continue
            path_exists = True
            if route.method == method.upper():
                return route, match.groupdict(), True
        return None, {}, path_exists

    def begin(self, raw: RawRequest) -> Pending:
        """Record ``raw`` and decide its faults (call ``finish`` after ``delay``)."""
        route, _, _ = self.route_for(raw.method, raw.path)
        template = route.template if route else None
        if template is None and raw.path.startswith("/files/"):
            template = "/files/{key}"
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
        )
        self.requests.append(record)
        self.calls[(record.method, template or raw.path)] += 1
        decision = self.injector.decide(raw.method, raw.path, template)
        record.fault = decision.kind or decision.after
        return Pending(raw=raw, record=record, decision=decision, delay=decision.delay)

    def finish(self, pending: Pending) -> Outcome:
        """Produce the answer to a request accepted by ``begin``."""
        outcome = self._answer(pending)
        pending.record.status = 0 if outcome.action == "reset" else outcome.status
        if outcome.status == 429:
            self.rate_limited += 1
        return outcome

    def _answer(self, pending: Pending) -> Outcome:
        raw, decision = pending.raw, pending.decision
        now = self.now()
        base_headers = {"Date": http_date(now)}
        if decision.kind == "reset":
            return Outcome(status=0, headers=base_headers, body=b"", action="reset")
        if decision.kind in ("error_5xx", "create_503_before"):
            headers = {**base_headers, "Content-Type": "text/html", "Server": "nginx"}
            cfg = self.injector.config
            if cfg is not None and cfg.retry_after is not None:
                headers["Retry-After"] = _seconds(cfg.retry_after)
            return Outcome(
                status=decision.status, headers=headers, body=_nginx_page(decision.status)
            )
        if decision.kind == "burst_429":
            cfg = self.injector.config
            wait = cfg.burst_retry_after if cfg is not None else 1.0
            limit = self.settings.rate_limit[0] if self.settings.rate_limit else 1000
            headers = {
                **base_headers,
                "Content-Type": "application/json; charset=utf-8",
                "Retry-After": _seconds(wait),
                "x-ratelimit-limit": str(limit),
                "x-ratelimit-remaining": "0",
                "x-ratelimit-reset": _seconds(wait),
            }
            body = orjson.dumps(error_body(429, "ThrottlerException: Too Many Requests"))
            return Outcome(status=429, headers=headers, body=body)

        if raw.path.startswith("/files/") and raw.method.upper() in ("GET", "HEAD"):
            answer = self.files.serve(raw.path, raw.query, raw.headers, now)
            headers = {**base_headers, **answer.headers}
            body = b"" if raw.method.upper() == "HEAD" else answer.body
            action = (
                "cut_body" if decision.after == "cut_body" and answer.status < 300 else "respond"
            )
            return Outcome(status=answer.status, headers=headers, body=body, action=action)

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

    def _rate_headers(self, key: str, now: float) -> tuple[dict[str, str], bool]:
        limit = self.settings.rate_limit
        if limit is None:
            return {}, False
        budget, period = limit
        start, used = self._windows.get(key, (now, 0))
        if now >= start + period:
            start, used = now, 0
        exceeded = used >= budget
        if not exceeded:
            used += 1
        self._windows[key] = (start, used)
        reset = max(0, math.ceil(start + period - now))
        headers = {
            "x-ratelimit-limit": str(budget),
            "x-ratelimit-remaining": str(max(0, budget - used)),
            "x-ratelimit-reset": str(reset),
        }
        if exceeded:
            headers["Retry-After"] = str(reset)
        return headers, exceeded

    def _bearer(self, headers: Mapping[str, str]) -> str | None:
        value = headers.get("Authorization") or headers.get("authorization") or ""
        scheme, _, token = value.partition(" ")
        return token.strip() or None if scheme.lower() == "bearer" else None

    def account_for(self, token: str | None, now: float) -> Account | None:
        """The account a bearer token acts for (None: unknown or expired)."""
        if token is None:
            return None
        for account in self.state.accounts:
            if token in account.tokens:
                return account
        issued = self._access.get(token)
        if issued is None:
            return None
        account, expires = issued
        if expires is not None and now >= expires:
            return None
        return account

    def _dispatch(self, raw: RawRequest, now: float) -> tuple[int, Any, dict[str, str]]:
        route, params, path_exists = self.route_for(raw.method, raw.path)
        token = self._bearer(raw.headers)
        rate_headers, exceeded = self._rate_headers(token or "anonymous", now)
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
            message = f"Cannot {raw.method.upper()} {raw.path}"
            return 404, error_body(404, message), rate_headers
        account = self.account_for(token, now)
        if route.auth and account is None:
            return 401, error_body(401, "Unauthorized"), rate_headers
        try:
            status, payload = route.handler(
                self, _Call(raw=raw, params=params, account=account, now=now)
            )
        except _HTTPError as exc:
            return exc.status, error_body(exc.status, exc.message), rate_headers
        return status, payload, rate_headers

    # ----------------------------------------------------------------- helpers

    def _body(self, call: _Call) -> Any:
        if not call.raw.body.strip():
            return {}
        try:
            return orjson.loads(call.raw.body)
        except orjson.JSONDecodeError:
            raise _HTTPError(400, "Unexpected token in JSON body") from None

    def _check(self, v: Validator) -> None:
        if v.issues:
            raise _HTTPError(400, v.issues)

    def _int_param(self, call: _Call, name: str) -> int:
        value = call.params[name]
        if not re.fullmatch(r"\d{1,15}", value):
            raise _HTTPError(
                400,
                [
                    {
                        "code": "invalid_type",
                        "expected": "number",
                        "received": "nan",
                        "path": [name],
                        "message": "Expected number, received nan",
                    }
                ],
            )
        return int(value)

    def _visible(self, call: _Call) -> set[int]:
        assert call.account is not None
        return self.state.visible_orgs(call.account)

    def _new_token(self, kind: str) -> str:
        self._token_counter += 1
        digest = hmac.new(
            self._secret, f"{kind}:{self._token_counter}".encode(), hashlib.sha256
        ).hexdigest()
        return f"{kind}_{self._token_counter}_{digest[:32]}"

    def issue_tokens(self, account: Account, now: float) -> JSON:
        """Issue a new access/refresh token pair for ``account``."""
        ttl = self.settings.token_ttl
        access = self._new_token("at")
        refresh = self._new_token("rt")
        self._access[access] = (account, None if ttl is None else now + ttl)
        self._refresh[refresh] = account
        return {"accessToken": access, "refreshToken": refresh}

    def expire_tokens(self) -> None:
        """Expire every access token issued by login/refresh (refresh tokens stay valid)."""
        now = self.now()
        self._access = {t: (a, now) for t, (a, _) in self._access.items()}

    # ----------------------------------------------------------------- endpoints

    def _login(self, call: _Call) -> tuple[int, Any]:
        v = Validator(self._body(call))
        key = v.string("key", required=True)
        secret = v.string("secret", required=True)
        self._check(v)
        for account in self.state.accounts:
            stored = account.api_keys.get(key or "")
            if stored is not None and hmac.compare_digest(stored, secret or ""):
                return 200, self.issue_tokens(account, call.now)
        raise _HTTPError(401, "Invalid API key")

    def _refresh_token(self, call: _Call) -> tuple[int, Any]:
        v = Validator(self._body(call))
        token = v.string("refreshToken", required=True)
        self._check(v)
        account = self._refresh.pop(token or "", None)
        if account is None:
            raise _HTTPError(401, "Invalid refresh token")
        return 200, self.issue_tokens(account, call.now)

    def _orgs(self, call: _Call) -> tuple[int, Any]:
        visible = self._visible(call)
        return 200, [render_org(self.state.orgs[i]) for i in sorted(visible)]

    def _seasons(self, call: _Call) -> tuple[int, Any]:
        visible = self._visible(call)
        seasons = sorted(self.state.seasons.values(), key=lambda s: s.id)
        return 200, [render_season(s) for s in seasons if s.organisation_id in visible]

    def _events(self, call: _Call) -> tuple[int, Any]:
        v = Validator(self._body(call))
        limit = v.integer("limit", minimum=0, maximum=100)
        offset = v.integer("offset", minimum=0)
        org_id = v.integer("organisationId")
        self._check(v)
        visible = self._visible(call)
        if org_id is not None:
            if org_id not in visible:
                raise _HTTPError(403, "You do not have access to this organisation")
            visible = {org_id}
        events = sorted(
            (e for e in self.state.events.values() if e.organisation_id in visible),
            key=lambda e: e.id,
        )
        start = offset or 0
        page = events[start : start + (25 if limit is None else limit)]
        return 200, [render_event(e, call.raw.base) for e in page]

    def _entries_filter(self, call: _Call, entries: list[Entry]) -> tuple[int, Any]:
        v = Validator(self._body(call))
        after = v.datetime("updatedAfter")
        filters = v.objects("fields") or []
        for i, f in enumerate(filters):
            if "signupFieldId" not in f and "key" not in f:
                v.custom(["fields", i], "Expected signupFieldId or key")
            if not isinstance(f.get("value"), str | list):
                v.type_issue(["fields", i, "value"], "string", f.get("value"))
        self._check(v)
        out = []
        for entry in sorted(entries, key=lambda e: e.id):
            if after is not None and (
                entry.recording is None or entry.recording.updated_at <= after
            ):
                continue
            if all(_field_matches(entry, f) for f in filters):
                out.append(render_entry(entry, base=call.raw.base, files=self.files, now=call.now))
        return 200, out

    def _event_entries(self, call: _Call) -> tuple[int, Any]:
        event = self.state.events.get(self._int_param(call, "id"))
        if event is None or event.organisation_id not in self._visible(call):
            raise _HTTPError(404, "Event not found")
        entries = [e for e in self.state.entries.values() if e.event_id == event.id]
        return self._entries_filter(call, entries)

    def _season_entries(self, call: _Call) -> tuple[int, Any]:
        season = self.state.seasons.get(self._int_param(call, "seasonId"))
        if season is None or season.organisation_id not in self._visible(call):
            raise _HTTPError(404, "Season not found")
        return self._entries_filter(call, self.state.season_entries(season.id))

    def _create_job(self, call: _Call) -> tuple[int, Any]:
        v = Validator(self._body(call))
        request: JSON = {
            "name": v.string("name", required=True),
            "email": v.email("email"),
            "requiredTerritories": v.countries("requiredTerritories"),
            "startDate": v.date("startDate"),
            "endDate": v.date("endDate"),
            "externalId": v.string("externalId", nullable=True),
            "organisationId": v.integer("organisationId", required=True),
            "audioFileURL": v.url("audioFileURL"),
            "tags": v.string_list("tags") or [],
            "licenseDetails": [],
        }
        for i, detail in enumerate(v.objects("licenseDetails") or []):
            path: list[str | int] = ["licenseDetails", i]
            source = v.field_in(detail, path, "licenseSource", "string")
            name = v.field_in(detail, path, "licenseSourceName", "string")
            urls = v.field_in(detail, path, "licenseFileURLs", "array")
            for j, url in enumerate(urls or []):
                v.url_at([*path, "licenseFileURLs", j], url)
            request["licenseDetails"].append(
                {"licenseSource": source, "licenseSourceName": name, "licenseFileURLs": urls}
            )
        start, end = request["startDate"], request["endDate"]
        if start and end and end < start:
            v.custom(["endDate"], "endDate must not be before startDate")
        self._check(v)
        if request["organisationId"] not in self._visible(call):
            raise _HTTPError(403, "You do not have access to this organisation")
        job = create_job(
            self.state,
            self.files,
            request,
            now=call.now,
            delay=self.settings.processing_delay,
            catalogue=self.catalogue,
        )
        if self.on_job_created is not None:
            self.on_job_created(job.id)
        rendered = render_job(job, now=job.created_at, base=call.raw.base, files=self.files)
        # The create answer always shows the job before any processing.
        rendered.update(status="Created", soundRecordingId=None, errorMessage="", recording=None)
        return 200, rendered

    def _get_job(self, call: _Call) -> tuple[int, Any]:
        job = self.state.jobs.get(self._int_param(call, "verificationJobId"))
        if job is None or job.organisation_id not in self._visible(call):
            raise _HTTPError(404, "Verification job not found")
        return 200, render_job(job, now=call.now, base=call.raw.base, files=self.files)

    def _search(self, call: _Call) -> tuple[int, Any]:
        v = Validator(self._body(call))
        tags = v.string_list("tags") or []
        statuses = v.string_list("statuses") or []
        org_id = v.integer("orgId")
        limit = v.integer("limit", minimum=0, maximum=100)
        offset = v.integer("offset", minimum=0)
        self._check(v)
        visible = self._visible(call)
        if org_id is not None:
            if org_id not in visible:
                raise _HTTPError(403, "You do not have access to this organisation")
            visible = {org_id}
        lag = self.settings.search_lag
        matches = [
            job
            for job in sorted(self.state.jobs.values(), key=lambda j: j.id)
            if job.organisation_id in visible
            and call.now >= job.created_at + lag
            and set(tags) <= set(job.request.get("tags") or [])
            and (not statuses or job_status(job, call.now) in statuses)
        ]
        start = offset or 0
        page = matches[start : start + (25 if limit is None else limit)]
        return 200, {
            "jobs": [
                render_job(j, now=call.now, base=call.raw.base, files=self.files) for j in page
            ],
            "count": len(matches),
        }


def _field_matches(entry: Entry, wanted: JSON) -> bool:
    for field in entry.fields:
        if "signupFieldId" in wanted and field.get("signupFieldId") != wanted["signupFieldId"]:
            continue
        if "key" in wanted and field.get("key") != wanted["key"]:
            continue
        value, target = field.get("value"), wanted.get("value")
        if value == target or (isinstance(value, list) and target in value):
            return True
    return False


def _r(
    method: str,
    template: str,
    handler: Callable[[ServiceCore, _Call], tuple[int, Any]],
    *,
    auth: bool = True,
) -> _Route:
    return _Route(method, template, _compile(template), handler, auth)


_ROUTES: tuple[_Route, ...] = (
    _r("POST", "/api/auth/api-key/login", ServiceCore._login, auth=False),
    _r("POST", "/api/auth/access-token/refresh", ServiceCore._refresh_token, auth=False),
    _r("GET", "/api/orgs/me", ServiceCore._orgs),
    _r("GET", "/api/public/v1/season", ServiceCore._seasons),
    _r("POST", "/api/public/v1/event", ServiceCore._events),
    _r("POST", "/api/public/v1/event/{id}/entries", ServiceCore._event_entries),
    _r("POST", "/api/public/v1/season/{seasonId}/entries", ServiceCore._season_entries),
    _r("POST", "/api/public/v1/verification-job", ServiceCore._create_job),
    _r("POST", "/api/public/v1/verification-job/search", ServiceCore._search),
    _r(
        "GET",
        "/api/public/v1/verification-job/{verificationJobId}",
        ServiceCore._get_job,
    ),
)

ROUTE_TEMPLATES: tuple[str, ...] = tuple(r.template for r in _ROUTES)
"""Every API route template (for ``FakeService.count`` and ``FaultConfig.paths``)."""
