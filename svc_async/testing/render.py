"""Records -> wire-format JSON dicts (camelCase, timestamps with milliseconds and Z).

Links are made absolute against the base URL the request came in on, and recording
links are signed at read time, as the service does.
"""

from __future__ import annotations

import copy
from typing import Any

from .clock import format_timestamp
from .files import FileStore
from .licensing import recording_status
from .state import Entry, Event, Org, Recording, Season, SignupField

JSON = dict[str, Any]

__all__ = [
    "render_entry",
    "render_event",
    "render_org",
    "render_recording",
    "render_season",
    "render_signup_field",
]


def render_org(org: Org) -> JSON:
    """An Organisation; ``logo`` omitted when there is none."""
    out: JSON = {"id": org.id, "name": org.name}
    if org.logo is not None:
        out["logo"] = dict(org.logo)
    out.update(
        {
            "createdAt": format_timestamp(org.created_at),
            "deletedAt": None,
            "parentId": org.parent_id,
            "updatedAt": format_timestamp(org.updated_at),
            "isEventProducer": org.is_event_producer,
        }
    )
    return out


def render_signup_field(field: SignupField) -> JSON:
    """A SignupField as listed (``key`` is null in season and event listings)."""
    return {
        "id": field.id,
        "isRequired": field.is_required,
        "options": list(field.options),
        "order": field.order,
        "question": field.question,
        "description": field.description,
        "type": field.type,
        "key": None,
    }


def render_season(season: Season) -> JSON:
    """A Season; ``inviteURL`` omitted when the season has none."""
    out: JSON = {
        "id": season.id,
        "isLocked": season.is_locked,
        "territories": [],
        "organisationId": season.organisation_id,
        "title": season.title,
        "endDate": format_timestamp(season.end),
        "startDate": format_timestamp(season.start),
    }
    if season.invite_url is not None:
        out["inviteURL"] = season.invite_url
    out["signupFields"] = [render_signup_field(f) for f in season.signup_fields]
    return out


def render_event(event: Event, base: str) -> JSON:
    """An Event, with its invite link on the fake's own address."""
    return {
        "id": event.id,
        "isLocked": event.is_locked,
        "organisationId": event.organisation_id,
        "title": event.title,
        "territory": event.territory,
        "endDate": format_timestamp(event.end),
        "startDate": format_timestamp(event.start),
        "inviteURL": f"{base}/my-events/event/{event.id}/invite?token={event.invite_token}",
        "signupFields": [render_signup_field(f) for f in event.signup_fields],
    }


def _absolute_links(song: JSON, base: str) -> JSON:
    data = song.get("licenseData") or {}
    svc = data.get("svcLicense")
    if svc and str(svc.get("downloadURL", "")).startswith("/"):
        svc["downloadURL"] = base + svc["downloadURL"]
    ext = data.get("externalLicense")
    if ext:
        for f in ext.get("files", []):
            if str(f.get("downloadURL", "")).startswith("/"):
                f["downloadURL"] = base + f["downloadURL"]
    return song


def render_recording(rec: Recording, *, base: str, files: FileStore, now: float) -> JSON:
    """A SoundRecording with a freshly signed ``downloadURL``."""
    songs = [_absolute_links(copy.deepcopy(s), base) for s in rec.songs]
    return {
        "createdAt": format_timestamp(rec.created_at),
        "downloadURL": files.recording_url(base, rec.file_key, rec.upload_file_name, now),
        "uploadFileName": rec.upload_file_name,
        "licenseStatus": recording_status(songs),
        "songsConfirmedAt": None
        if rec.songs_confirmed_at is None
        else format_timestamp(rec.songs_confirmed_at),
        "updatedAt": format_timestamp(rec.updated_at),
        "status": rec.status,
        "songs": songs,
    }


def render_entry(entry: Entry, *, base: str, files: FileStore, now: float) -> JSON:
    """An Entry with its recording (or null)."""
    return {
        "id": entry.id,
        "email": entry.email,
        "name": entry.name,
        "fields": [dict(f) for f in entry.fields],
        "soundRecording": None
        if entry.recording is None
        else render_recording(entry.recording, base=base, files=files, now=now),
    }
