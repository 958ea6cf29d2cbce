"""Entries: those of an event (``POST /api/public/v1/event/{id}/entries``) and those of a
season (``POST /api/public/v1/season/{seasonId}/entries``: its events' plus its own).

Rules: ``updatedAfter`` any parseable date or null; ``fields`` null or
``[{key: string, value: string}]``. Where the interface is silent:

* ``updatedAfter`` filters on the recording's ``updatedAt`` (strictly after); entries
  without a recording are left out when it is given.
* ``fields`` filters are ``{key, value}``; an entry must match every filter (a field with
  that key whose value equals ``value``, or contains it when the value is a list),
  ignoring case.

An entry renders with its recording (``render_recording``, as a job's does). Licence
links are made absolute against the API base URL the request came in on; recording
links are signed at read time on the files origin, as the service does.
"""

from __future__ import annotations

import copy
import datetime as dt
import email.utils
import re
from typing import Any

from ..clock import format_timestamp, parse_timestamp
from ..licensing import ARRANGEMENT_CHECK, recording_status
from ..state import Entry, Recording
from ..validation import MISSING, Validator
from ..wire import JSON
from .base import V1, Answer, Call, Core, Route, owned, read_body

__all__ = ["ROUTES", "render_entry", "render_recording"]

_ISO = re.compile(
    r"^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$"
)


def _parse_date(text: str) -> float | None:
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


def _read_entries_filter(body: Any) -> tuple[float | None, list[JSON]]:
    """(updatedAfter as epoch seconds or None, field filters), or a 400."""
    v = Validator(body)
    after: float | None = None
    raw = v.body.get("updatedAfter", MISSING)
    if isinstance(raw, str):
        after = _parse_date(raw)
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
    return v.accepted((after, filters))


def _song(stored: JSON, base: str, legacy: bool) -> JSON:
    song = copy.deepcopy(stored)
    data = song.get("licenseData") or {}
    svc = data.get("svcLicense")
    if svc and str(svc.get("downloadURL") or "").startswith("/"):
        svc["downloadURL"] = base + svc["downloadURL"]
    ext = data.get("externalLicense")
    if ext:
        for f in ext.get("files", []):
            if str(f.get("downloadURL") or "").startswith("/"):
                f["downloadURL"] = base + f["downloadURL"]
    if legacy:
        if song.get("svcMixId") is not None:
            song["svcMixId"] = str(song["svcMixId"])
        if song.get("licenseChecks"):
            song["licenseChecks"].pop(ARRANGEMENT_CHECK, None)
    return song


def render_recording(core: Core, rec: Recording, *, base: str, now: float) -> JSON:
    """A SoundRecording with a freshly signed ``downloadURL`` on the files origin."""
    legacy = core.flavour.legacy
    songs = [_song(s, base, legacy) for s in rec.songs]
    out: JSON = {
        "createdAt": format_timestamp(rec.created_at),
        "downloadURL": core.files.recording_url(rec.file_key, rec.upload_file_name, now),
        "uploadFileName": rec.upload_file_name,
        "licenseStatus": recording_status(songs),
        "songsConfirmedAt": None
        if rec.songs_confirmed_at is None
        else format_timestamp(rec.songs_confirmed_at),
        "updatedAt": format_timestamp(rec.updated_at),
        "status": rec.status,
    }
    if not legacy:
        out["md5Hash"] = rec.md5_hash
    out["songs"] = songs
    return out


def render_entry(core: Core, entry: Entry, *, base: str, now: float) -> JSON:
    """An Entry with its recording (or null)."""
    return {
        "id": entry.id,
        "email": entry.email,
        "name": entry.name,
        "fields": [dict(f) for f in entry.fields],
        "soundRecording": None
        if entry.recording is None
        else render_recording(core, entry.recording, base=base, now=now),
    }


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
    after, filters = _read_entries_filter(read_body(call))
    out = []
    for entry in sorted(entries, key=lambda e: e.id):
        if after is not None and (entry.recording is None or entry.recording.updated_at <= after):
            continue
        if all(_field_matches(entry, f) for f in filters):
            out.append(render_entry(core, entry, base=call.raw.base, now=call.now))
    return 200, out


def _event_entries(core: Core, call: Call) -> Answer:
    """``POST /api/public/v1/event/{id}/entries``."""
    event = owned(core, call, core.state.events, "id", "Event")
    return _entries(core, call, [e for e in core.state.entries.values() if e.event_id == event.id])


def _season_entries(core: Core, call: Call) -> Answer:
    """``POST /api/public/v1/season/{seasonId}/entries``."""
    season = owned(core, call, core.state.seasons, "seasonId", "Season")
    return _entries(core, call, core.state.season_entries(season.id))


ROUTES: tuple[Route, ...] = (
    Route("POST", f"{V1}/event/{{id}}/entries", _event_entries),
    Route("POST", f"{V1}/season/{{seasonId}}/entries", _season_entries),
)
