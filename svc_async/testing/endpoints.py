"""Every API endpoint: a function of (core, call) returning (status, JSON payload).

Rules where the interface is silent:

* Lists are ordered by id, ascending.
* A resource that exists but belongs to organisations the account cannot see answers
  404, exactly like an unknown one (no existence leak). An *organisation id given in a
  request body* (event filter, job creation, search) that the account cannot see answers
  403.
* ``updatedAfter`` filters on the recording's ``updatedAt`` (strictly after); entries
  without a recording are left out when it is given.
* ``fields`` filters are ``{key, value}``; an entry must match every filter (a field with
  that key whose value equals ``value``, or contains it when the value is a list),
  ignoring case.
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Callable
from typing import Any, Protocol

import attrs
import orjson

from .access import TokenBook
from .files import FileStore
from .flavour import Flavour
from .jobs import create_job, render_job
from .lifecycle import job_status
from .render import render_event, render_org, render_season
from .rules import read_create, read_entries_filter, read_events, read_search
from .state import Account, Entry, State
from .validation import Validator
from .wire import HTTPError, RawRequest

JSON = dict[str, Any]
Answer = tuple[int, Any]

__all__ = ["Call", "Core"]


class _Settings(Protocol):
    """The settings an endpoint reads (``core.Settings``)."""

    @property
    def processing_delay(self) -> float: ...
    @property
    def token_ttl(self) -> float | None: ...
    @property
    def search_lag(self) -> float: ...


class Core(Protocol):
    """What an endpoint reads of the service core (``core.ServiceCore``, which routes
    to the endpoints: they know it by this shape, so the import goes one way)."""

    @property
    def state(self) -> State: ...
    @property
    def tokens(self) -> TokenBook: ...
    @property
    def settings(self) -> _Settings: ...
    @property
    def flavour(self) -> Flavour: ...
    @property
    def files(self) -> FileStore: ...
    @property
    def catalogue(self) -> list[JSON]: ...
    @property
    def on_job_created(self) -> Callable[[int], None] | None: ...
    def render_entry(self, entry: Entry, base: str, now: float) -> JSON: ...


@attrs.frozen(kw_only=True)
class Call:
    """One routed API request: the raw request, path parameters, caller and time."""

    raw: RawRequest
    params: dict[str, str]
    account: Account | None
    now: float


def _body(call: Call) -> Any:
    if not call.raw.body.strip():
        return {}
    try:
        return orjson.loads(call.raw.body)
    except orjson.JSONDecodeError:
        raise HTTPError(400, "Unexpected token in JSON body") from None


def _int_param(call: Call, name: str) -> int:
    value = call.params[name]
    if not re.fullmatch(r"\d{1,15}", value):
        issue = {
            "code": "invalid_type",
            "expected": "number",
            "received": "nan",
            "path": [name],
            "message": "Expected number, received nan",
        }
        raise HTTPError(400, [issue])
    return int(value)


def _visible(core: Core, call: Call, org_id: int | None = None) -> set[int]:
    assert call.account is not None
    visible = core.state.visible_orgs(call.account)
    if org_id is None:
        return visible
    if org_id not in visible:
        raise HTTPError(403, "You do not have access to this organisation")
    return {org_id}


# ----------------------------------------------------------------- auth


def login(core: Core, call: Call) -> Answer:
    """``POST /api/auth/api-key/login`` ``{key, secret}``."""
    v = Validator(_body(call))
    key = v.string("key", required=True)
    secret = v.string("secret", required=True)
    if v.issues:
        raise HTTPError(400, v.issues)
    for account in core.state.accounts:
        stored = account.api_keys.get(key or "")
        if stored is not None and hmac.compare_digest(stored, secret or ""):
            return 200, core.tokens.issue(account, call.now, core.settings.token_ttl)
    raise HTTPError(401, "Invalid API key")


def refresh(core: Core, call: Call) -> Answer:
    """``POST /api/auth/access-token/refresh`` ``{refreshToken}`` (each works once)."""
    v = Validator(_body(call))
    token = v.string("refreshToken", required=True)
    if v.issues:
        raise HTTPError(400, v.issues)
    account = core.tokens.redeem(token or "")
    if account is None:
        raise HTTPError(401, "Invalid refresh token")
    return 200, core.tokens.issue(account, call.now, core.settings.token_ttl)


# ----------------------------------------------------------------- organisations


def orgs(core: Core, call: Call) -> Answer:
    """``GET /api/orgs/me``."""
    return 200, [render_org(core.state.orgs[i]) for i in sorted(_visible(core, call))]


def seasons(core: Core, call: Call) -> Answer:
    """``GET /api/public/v1/season``."""
    visible = _visible(core, call)
    found = sorted(core.state.seasons.values(), key=lambda s: s.id)
    legacy = core.flavour.legacy
    return 200, [render_season(s, legacy=legacy) for s in found if s.organisation_id in visible]


def events(core: Core, call: Call) -> Answer:
    """``POST /api/public/v1/event`` (paged)."""
    req = read_events(_body(call))
    visible = _visible(core, call, req["organisationId"])
    found = sorted(
        (e for e in core.state.events.values() if e.organisation_id in visible),
        key=lambda e: e.id,
    )
    start = req["offset"] or 0
    limit = 25 if req["limit"] is None else req["limit"]
    return 200, [render_event(e, call.raw.base) for e in found[start : start + limit]]


# ----------------------------------------------------------------- entries


def _field_matches(entry: Entry, wanted: JSON) -> bool:
    key, target = str(wanted["key"]).casefold(), str(wanted["value"]).casefold()
    for field in entry.fields:
        if str(field.get("key") or "").casefold() != key:
            continue
        value = field.get("value")
        values = value if isinstance(value, list) else [value]
        if any(str(v).casefold() == target for v in values):
            return True
    return False


def _entries(core: Core, call: Call, entries: list[Entry]) -> Answer:
    after, filters = read_entries_filter(_body(call))
    out = []
    for entry in sorted(entries, key=lambda e: e.id):
        if after is not None and (entry.recording is None or entry.recording.updated_at <= after):
            continue
        if all(_field_matches(entry, f) for f in filters):
            out.append(core.render_entry(entry, call.raw.base, call.now))
    return 200, out


def event_entries(core: Core, call: Call) -> Answer:
    """``POST /api/public/v1/event/{id}/entries``."""
    event = core.state.events.get(_int_param(call, "id"))
    if event is None or event.organisation_id not in _visible(core, call):
        raise HTTPError(404, "Event not found")
    return _entries(core, call, [e for e in core.state.entries.values() if e.event_id == event.id])


def season_entries(core: Core, call: Call) -> Answer:
    """``POST /api/public/v1/season/{seasonId}/entries``."""
    season = core.state.seasons.get(_int_param(call, "seasonId"))
    if season is None or season.organisation_id not in _visible(core, call):
        raise HTTPError(404, "Season not found")
    return _entries(core, call, core.state.season_entries(season.id))


# ----------------------------------------------------------------- jobs


def create(core: Core, call: Call) -> Answer:
    """``POST /api/public/v1/verification-job``: the job as created (status Created)."""
    request = read_create(_body(call))
    _visible(core, call, request["organisationId"])
    job = create_job(
        core.state,
        core.files,
        request,
        now=call.now,
        delay=core.settings.processing_delay,
        catalogue=core.catalogue,
        legacy=core.flavour.legacy,
    )
    if core.on_job_created is not None:
        core.on_job_created(job.id)
    rendered = render_job(
        job, now=job.created_at, base=call.raw.base, files=core.files, flavour=core.flavour
    )
    # The create answer always shows the job before any processing.
    rendered.update(status="Created", soundRecordingId=None, errorMessage="", recording=None)
    return 200, rendered


def get_job(core: Core, call: Call) -> Answer:
    """``GET /api/public/v1/verification-job/{verificationJobId}``."""
    job = core.state.jobs.get(_int_param(call, "verificationJobId"))
    if job is None or job.organisation_id not in _visible(core, call):
        raise HTTPError(404, "Verification job not found")
    return 200, render_job(
        job, now=call.now, base=call.raw.base, files=core.files, flavour=core.flavour
    )


def search(core: Core, call: Call) -> Answer:
    """``POST /api/public/v1/verification-job/search``: ``{results, count}`` (legacy jobs)."""
    req = read_search(_body(call), core.flavour.statuses)
    visible = _visible(core, call, req["orgId"])
    lag, tags, statuses = core.settings.search_lag, set(req["tags"]), req["statuses"]
    matches = [
        job
        for job in sorted(core.state.jobs.values(), key=lambda j: j.id)
        if job.organisation_id in visible
        and call.now >= job.created_at + lag
        and tags <= set(job.request.get("tags") or [])
        and (not statuses or job_status(job, call.now, core.flavour) in statuses)
    ]
    start = req["offset"] or 0
    page = matches[start : start + (25 if req["limit"] is None else req["limit"])]
    rendered = [
        render_job(j, now=call.now, base=call.raw.base, files=core.files, flavour=core.flavour)
        for j in page
    ]
    return 200, {core.flavour.results_key: rendered, "count": len(matches)}
