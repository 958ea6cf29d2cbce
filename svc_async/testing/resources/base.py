"""What every resource module builds on: routes, the routed call, and the core they read.

A handler is a function of (core, call) returning (status, JSON payload). It knows the
core by the ``Core`` protocol (``core.ServiceCore`` satisfies it), so the imports go one
way: the core gathers the resources' route tables, and no resource imports the core.

Rules where the interface is silent:

* Lists are ordered by id, ascending.
* A resource that exists but belongs to organisations the account cannot see answers
  404, exactly like an unknown one (no existence leak). An *organisation id given in a
  request body* (event filter, job creation, search) that the account cannot see answers
  403.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

import attrs
import orjson

from ..access import TokenBook
from ..files import FileStore
from ..flavour import Flavour
from ..state import Account, State
from ..wire import JSON, HTTPError, RawRequest

__all__ = [
    "V1",
    "Answer",
    "Call",
    "Core",
    "Route",
    "Settings",
    "int_param",
    "owned",
    "page",
    "read_body",
    "visible",
]

V1 = "/api/public/v1"
"""The prefix of the public API's routes."""

Answer = tuple[int, Any]
T = TypeVar("T")


@attrs.define(kw_only=True)
class Settings:
    """The fake's tunable behaviour; every field may be changed at runtime."""

    processing_delay: float = 2.0
    token_ttl: float | None = None
    rate_limit: tuple[int, float] | None = (1000, 60.0)
    search_lag: float = 0.0
    clock_skew: float = 0.0


class Core(Protocol):
    """What a handler reads of the service core."""

    @property
    def state(self) -> State: ...
    @property
    def tokens(self) -> TokenBook: ...
    @property
    def settings(self) -> Settings: ...
    @property
    def flavour(self) -> Flavour: ...
    @property
    def files(self) -> FileStore: ...
    @property
    def catalogue(self) -> list[JSON]: ...
    @property
    def on_job_created(self) -> Callable[[int], None] | None: ...


@attrs.frozen(kw_only=True)
class Call:
    """One routed API request: the raw request, path parameters, caller and time."""

    raw: RawRequest
    params: dict[str, str]
    account: Account | None
    now: float


Handler = Callable[[Core, Call], Answer]


@attrs.frozen
class Route:
    """One endpoint: method, path template (``{name}`` placeholders) and handler;
    ``auth=False`` lets it be called without a token."""

    method: str
    template: str
    handler: Handler
    auth: bool = True
    pattern: re.Pattern[str] = attrs.field(init=False)

    @pattern.default
    def _compile(self) -> re.Pattern[str]:
        regex = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(self.template))
        return re.compile(f"^{regex}$")


def read_body(call: Call) -> Any:
    """The decoded JSON body (``{}`` when empty), or a 400 when it is not JSON."""
    if not call.raw.body.strip():
        return {}
    try:
        return orjson.loads(call.raw.body)
    except orjson.JSONDecodeError:
        raise HTTPError(400, "Unexpected token in JSON body") from None


def int_param(call: Call, name: str) -> int:
    """The path parameter ``name`` as an id, or the 400 zod gives for a non-number."""
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


def visible(core: Core, call: Call, org_id: int | None = None) -> set[int]:
    """The organisations the caller sees; with ``org_id``, just that one, or a 403."""
    assert call.account is not None
    seen = core.state.visible_orgs(call.account)
    if org_id is None:
        return seen
    if org_id not in seen:
        raise HTTPError(403, "You do not have access to this organisation")
    return {org_id}


class _Owned(Protocol):
    """A record of one organisation (a season, an event, a job)."""

    @property
    def organisation_id(self) -> int: ...


R = TypeVar("R", bound=_Owned)


def owned(core: Core, call: Call, records: Mapping[int, R], param: str, what: str) -> R:
    """The record whose id is the path parameter ``param``; a 404 (``what`` not found)
    when there is none or the caller cannot see its organisation."""
    record = records.get(int_param(call, param))
    if record is None or record.organisation_id not in visible(core, call):
        raise HTTPError(404, f"{what} not found")
    return record


def page(items: Sequence[T], request: JSON) -> Sequence[T]:
    """The page a request's ``offset`` and ``limit`` (default 25) select."""
    start = request["offset"] or 0
    return items[start : start + (25 if request["limit"] is None else request["limit"])]
