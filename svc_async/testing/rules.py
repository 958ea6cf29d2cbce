"""What each endpoint accepts, as the service's published request rules state it, and nothing more.

Each ``read_*`` function takes a decoded body and returns the accepted request with
unknown keys dropped, or raises ``HTTPError(400, issues)``. The rules:

* create job: ``name`` string; ``email`` a valid address or null (key required);
  ``requiredTerritories`` strings of length 2 (any case); ``startDate``/``endDate``
  ``YYYY-MM-DD``; ``externalId`` string or null (key required); ``organisationId``
  number; ``audioFileURL`` an http(s) URL; ``tags`` required, each 2-255 characters;
  ``licenseDetails`` required, each ``{licenseSource (one of six), licenseSourceName,
  licenseFileURLs}``; optional ``type`` VOD/Routine, ``outputFile {operation: "Mute",
  fileType?: "Audio", callbackURL?: string}``, ``outputFileType`` ``Audio``;
* search: ``tags`` at most 100 strings (any length), ``statuses`` values of the current
  status list only, ``orgId`` number, ``limit`` 0-100, ``offset`` >= 0;
* events: ``limit`` 0-100, ``offset`` >= 0, ``organisationId``: numbers or numeric strings;
* entries: ``updatedAfter`` any parseable date or null; ``fields`` null or
  ``[{key: string, value: string}]``.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import re
from collections.abc import Sequence
from typing import Any

from .clock import parse_timestamp
from .validation import MISSING, Validator
from .wire import HTTPError

JSON = dict[str, Any]

__all__ = [
    "LICENSE_SOURCES",
    "read_create",
    "read_entries_filter",
    "read_events",
    "read_search",
]

LICENSE_SOURCES: tuple[str, ...] = (
    "Service",
    "Public Domain Music",
    "Bespoke Music",
    "Stock Arrangement",
    "Other",
    "Pending License",
)
"""The six licence sources a create request may name."""

# zod's e-mail rule (the service validates with zod).
_EMAIL = re.compile(
    r"^(?!\.)(?!.*\.\.)([A-Z0-9_'+\-.]*)[A-Z0-9_+-]@([A-Z0-9][A-Z0-9\-]*\.)+[A-Z]{2,}$",
    re.IGNORECASE,
)


_ISO = re.compile(
    r"^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$"
)


def parse_date(text: str) -> float | None:
    """Epoch seconds of an ISO 8601 date or timestamp, or an RFC 2822 date (as
    JavaScript's ``Date`` parses them); None when it is not a date."""
    if _ISO.match(text.strip()):
        return parse_timestamp(text.strip())
    try:
        parsed = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)
    return parsed.timestamp()


def _done(v: Validator, request: JSON) -> JSON:
    if v.issues:
        raise HTTPError(400, v.issues)
    return request


def _email(v: Validator) -> str | None:
    value = v.body.get("email", MISSING)
    if value is None:
        return None
    if not isinstance(value, str):
        v.type_issue(["email"], "string", value)
        return None
    if not _EMAIL.match(value):
        v.string_issue(["email"], "email", "Invalid email")
        return None
    return value


def _tags(v: Validator, *, required: bool, per_tag: bool) -> list[str]:
    tags = v.string_list("tags", required=required) or []
    if len(tags) > 100:
        v.size_issue(["tags"], "too_big", 100, "array")
    if per_tag:
        for i, tag in enumerate(tags):
            if len(tag) < 2:
                v.size_issue(["tags", i], "too_small", 2, "string")
            elif len(tag) > 255:
                v.size_issue(["tags", i], "too_big", 255, "string")
    return tags


def _territories(v: Validator) -> list[str]:
    values = v.string_list("requiredTerritories", required=True) or []
    for i, code in enumerate(values):
        if len(code) != 2:
            v.size_issue(
                ["requiredTerritories", i],
                "too_small" if len(code) < 2 else "too_big",
                2,
                "string",
                exact=True,
            )
    return values


def _licence_details(v: Validator) -> list[JSON]:
    out: list[JSON] = []
    value = v.body.get("licenseDetails", MISSING)
    if value is MISSING or not isinstance(value, list):
        v.type_issue(["licenseDetails"], "array", value)
        return out
    for i, detail in enumerate(value):
        path: list[str | int] = ["licenseDetails", i]
        if not isinstance(detail, dict):
            v.type_issue(path, "object", detail)
            continue
        source = detail.get("licenseSource", MISSING)
        if source not in LICENSE_SOURCES:
            v.enum_issue([*path, "licenseSource"], LICENSE_SOURCES, source)
        name = v.field_in(detail, path, "licenseSourceName", "string")
        urls = v.field_in(detail, path, "licenseFileURLs", "array")
        for j, url in enumerate(urls or []):
            v.url_at([*path, "licenseFileURLs", j], url)
        out.append({"licenseSource": source, "licenseSourceName": name, "licenseFileURLs": urls})
    return out


def _output_file(v: Validator) -> JSON | None:
    value = v.body.get("outputFile", MISSING)
    if value is MISSING or value is None:
        return None
    if not isinstance(value, dict):
        v.type_issue(["outputFile"], "object", value)
        return None
    out: JSON = {"operation": value.get("operation", MISSING)}
    if out["operation"] != "Mute":
        v.enum_issue(["outputFile", "operation"], ("Mute",), out["operation"])
    if "fileType" in value:
        out["fileType"] = value["fileType"]
        if value["fileType"] != "Audio":
            v.enum_issue(["outputFile", "fileType"], ("Audio",), value["fileType"])
    if "callbackURL" in value:
        out["callbackURL"] = value["callbackURL"]
        if not isinstance(value["callbackURL"], str):
            v.type_issue(["outputFile", "callbackURL"], "string", value["callbackURL"])
    return out


def _optional_enum(v: Validator, name: str, allowed: Sequence[str]) -> Any:
    value = v.body.get(name, MISSING)
    if value is MISSING:
        return None
    if value not in allowed:
        v.enum_issue([name], allowed, value)
    return value


def read_create(body: Any) -> JSON:
    """A create-job request as accepted (unknown keys dropped), or a 400."""
    v = Validator(body)
    request: JSON = {
        "name": v.string("name", required=True),
        "email": _email(v),
        "requiredTerritories": _territories(v),
        "startDate": v.date("startDate"),
        "endDate": v.date("endDate"),
        "externalId": v.string("externalId", nullable=True),
        "organisationId": v.integer("organisationId", required=True),
        "audioFileURL": v.url("audioFileURL"),
        "tags": _tags(v, required=True, per_tag=True),
        "licenseDetails": _licence_details(v),
    }
    if "email" not in v.body:
        v.type_issue(["email"], "string", MISSING)
    if "externalId" not in v.body:
        v.type_issue(["externalId"], "string", MISSING)
    kind = _optional_enum(v, "type", ("VOD", "Routine"))
    if kind is not None:
        request["type"] = kind
    output = _output_file(v)
    if output is not None:
        request["outputFile"] = output
    old_type = _optional_enum(v, "outputFileType", ("Audio",))
    if old_type is not None:
        request["outputFileType"] = old_type
    start, end = request["startDate"], request["endDate"]
    if start and end and end < start:
        v.custom(["endDate"], "endDate must not be before startDate")
    return _done(v, request)


def read_search(body: Any, statuses: Sequence[str]) -> JSON:
    """A job search request as accepted, or a 400 (``statuses``: the allowed list)."""
    v = Validator(body)
    tags = _tags(v, required=False, per_tag=False)
    wanted = v.string_list("statuses") or []
    for i, status in enumerate(wanted):
        if status not in statuses:
            v.enum_issue(["statuses", i], statuses, status)
    request = {
        "tags": tags,
        "statuses": wanted,
        "orgId": v.integer("orgId"),
        "limit": v.integer("limit", minimum=0, maximum=100),
        "offset": v.integer("offset", minimum=0),
    }
    return _done(v, request)


def read_events(body: Any) -> JSON:
    """A get-events request (numbers or numeric strings), or a 400."""
    v = Validator(body)
    request = {
        "limit": v.integer("limit", minimum=0, maximum=100, coerce=True),
        "offset": v.integer("offset", minimum=0, coerce=True),
        "organisationId": v.integer("organisationId", coerce=True),
    }
    return _done(v, request)


def read_entries_filter(body: Any) -> tuple[float | None, list[JSON]]:
    """(updatedAfter as epoch seconds or None, field filters), or a 400."""
    v = Validator(body)
    after: float | None = None
    raw = v.body.get("updatedAfter", MISSING)
    if isinstance(raw, str):
        after = parse_date(raw)
        if after is None:
            v.string_issue(["updatedAfter"], "datetime", "Invalid date")
    elif raw is not MISSING and raw is not None:
        v.type_issue(["updatedAfter"], "string", raw)
    filters: list[JSON] = []
    value = v.body.get("fields", MISSING)
    if isinstance(value, list):
        for i, item in enumerate(value):
            if not isinstance(item, dict):
                v.type_issue(["fields", i], "object", item)
                continue
            for key in ("key", "value"):
                if not isinstance(item.get(key, MISSING), str):
                    v.type_issue(["fields", i, key], "string", item.get(key, MISSING))
            filters.append({"key": item.get("key"), "value": item.get("value")})
    elif value is not MISSING and value is not None:
        v.type_issue(["fields"], "array", value)
    _done(v, {})
    return after, filters
