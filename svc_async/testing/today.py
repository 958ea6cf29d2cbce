"""Today's optional shapes, given to the data at realistic rates (not in legacy mode).

The published examples never show them, today's published types allow them, and an SDK that only
knows the examples breaks on them: songs not checked yet (``licenseData`` and
``licenseChecks`` null), manual statuses as ``{status, details}`` objects, missing
download links, entries without an email, an event whose venue (territory) is not set,
``multipleSelect`` questions answered with lists, and recordings without ``md5Hash``.
Each choice is a hash of the record's identity, so the same seed gives the same data and
the seeded random sequence of ``seed`` is left untouched.
"""

from __future__ import annotations

import hashlib
from typing import Any

from .files import FileStore
from .state import Recording, SignupField, State

JSON = dict[str, Any]

__all__ = ["STYLES", "dress_recording", "dress_song", "dress_state"]

STYLES: tuple[str, ...] = ("Pom", "Hip Hop", "Jazz", "Lyrical", "Contemporary")
"""Options of the ``styles`` multipleSelect question some demo events ask."""


def _draw(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)


def _manual_status(song: JSON, source: object, h: int) -> JSON | None:
    """The ``{status, details}`` object some songs carry, or None."""
    if song.get("licenseStatus") == "Unverified" and source == "Other" and h % 3 == 0:
        return {"status": "Manually Rejected", "details": "The licence names another team."}
    if song.get("licenseStatus") == "Licensed" and h % 5 == 1:
        return {"status": "Manually Approved", "details": "Checked by the event organiser."}
    if h % 13 == 4:
        return {"status": "User Updated", "details": "Song details corrected."}
    return None


def _drop_links(data: JSON, h: int) -> None:
    """Take the download link off some licences (in place)."""
    svc = data.get("svcLicense")
    if svc is not None and h % 4 == 3:
        svc["downloadURL"] = None
    ext = data.get("externalLicense")
    if ext is not None and ext.get("files") and h % 3 == 2:
        ext["files"][0]["downloadURL"] = None


def dress_song(song: JSON, identity: str) -> None:
    """Give one wire-format song today's optional shapes (in place)."""
    h = _draw(identity)
    data = song.get("licenseData")
    source = data.get("licenseSource") if data else None
    if source == "Pending License" and h % 2 == 0:
        song["licenseData"] = None
        song["licenseChecks"] = None
        return
    manual = _manual_status(song, source, h)
    if manual is not None:
        song["manualStatus"] = manual
    if data:
        _drop_links(data, h)


def dress_recording(rec: Recording, files: FileStore) -> None:
    """Songs dressed, and ``md5Hash`` set (null for about one recording in six)."""
    for n, song in enumerate(rec.songs):
        dress_song(song, f"{rec.id}:{n}:{song.get('svcId')}")
    rec.md5_hash = None if _draw(f"md5:{rec.id}") % 6 == 0 else files.md5(rec.file_key)


def dress_state(state: State, files: FileStore) -> None:
    """Dress the seeded demo data (see the module docstring)."""
    styles_ids: dict[int, int] = {}
    for event in state.events.values():
        if event.id % 3 == 1:
            field = SignupField(
                id=state.next_id("signup_field_multi", 900),
                question="Which styles does your routine include?",
                type="multipleSelect",
                options=list(STYLES),
                order=len(event.signup_fields),
                is_required=False,
                key="styles",
            )
            event.signup_fields.append(field)
            styles_ids[event.id] = field.id
        if event.id % 12 == 0:
            event.territory = None
    for entry in state.entries.values():
        h = _draw(f"entry:{entry.id}")
        if h % 8 == 5:
            entry.email = None
        if entry.event_id in styles_ids:
            picked = [s for k, s in enumerate(STYLES) if (h >> k) & 1] or [STYLES[0]]
            entry.fields.append(
                {"value": picked, "signupFieldId": styles_ids[entry.event_id], "key": "styles"}
            )
        if entry.recording is not None:
            dress_recording(entry.recording, files)
