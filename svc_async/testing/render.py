"""Records -> wire-format JSON dicts (camelCase, timestamps with milliseconds and Z).

Licence links are made absolute against the API base URL the request came in on;
recording links are signed at read time on the files origin, as the service does. The
``legacy`` flag gives the published examples' shapes (see ``flavour``).
"""

from __future__ import annotations

import copy
from typing import Any

from .clock import format_timestamp
from .files import FileStore
from .licensing import ARRANGEMENT_CHECK, recording_status
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


def render_season(season: Season, *, legacy: bool = False) -> JSON:
    """A Season; ``inviteURL`` always present (null without one), omitted in legacy mode."""
    out: JSON = {
        "id": season.id,
        "isLocked": season.is_locked,
        "territories": [],
        "organisationId": season.organisation_id,
        "title": season.title,
        "endDate": format_timestamp(season.end),
        "startDate": format_timestamp(season.start),
    }
    if season.invite_url is not None or not legacy:
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


def render_recording(
    rec: Recording, *, base: str, files: FileStore, now: float, legacy: bool = False
) -> JSON:
    """A SoundRecording with a freshly signed ``downloadURL`` on the files origin."""
    songs = [_song(s, base, legacy) for s in rec.songs]
    out: JSON = {
        "createdAt": format_timestamp(rec.created_at),
        "downloadURL": files.recording_url(rec.file_key, rec.upload_file_name, now),
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


def render_entry(
    entry: Entry, *, base: str, files: FileStore, now: float, legacy: bool = False
) -> JSON:
    """An Entry with its recording (or null)."""
    return {
        "id": entry.id,
        "email": entry.email,
        "name": entry.name,
        "fields": [dict(f) for f in entry.fields],
        "soundRecording": None
        if entry.recording is None
        else render_recording(entry.recording, base=base, files=files, now=now, legacy=legacy),
    }
