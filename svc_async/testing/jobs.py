"""Verification jobs: creating one from a valid request, its progress and its verdict.

Progress is a pure function of the fake clock: a job created at ``t`` with processing
delay ``d`` is ``Created`` until ``t + d/4``, ``Downloading`` until ``t + d/2``,
``DetectingMusic`` until ``t + 3d/4``, ``Matching`` until ``t + d`` and then
``Completed``. Reads are therefore consistent without any background task; only webhook
delivery runs in the background (see ``webhooks``).

Audio rules (on the URL's path, case-insensitive):

* the path contains ``corrupt``, or its file extension is not one of
  ``AUDIO_EXTENSIONS``: the fake "cannot decode" it; the job ends ``Errored`` at
  ``t + d/2`` with a non-empty ``errorMessage`` and no recording;
* the path contains ``silence``: the job completes with a recording whose status is
  ``Failed`` and which has no songs;
* otherwise 1-3 songs of the catalogue are "found", chosen by a hash of the URL, and
  their licence checks follow ``licensing``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from .clock import format_timestamp, parse_timestamp
from .files import FileStore
from .licensing import (
    external_checks,
    make_checks,
    make_song,
    pick_songs,
    service_checks,
    svc_license_json,
)
from .render import render_recording
from .state import Job, Recording, State

JSON = dict[str, Any]

__all__ = ["AUDIO_EXTENSIONS", "create_job", "finish_job", "job_status", "render_job"]

AUDIO_EXTENSIONS: frozenset[str] = frozenset(
    {"mp3", "mpga", "wav", "m4a", "aac", "flac", "ogg", "oga", "mp4", "mov", "m4v", "webm"}
)
"""File extensions the fake "can decode"."""

_PHASES = ("Created", "Downloading", "DetectingMusic", "Matching")


def _decode_error(audio_url: str) -> str:
    path = urlsplit(audio_url).path.lower()
    name = path.rsplit("/", 1)[-1]
    ext = name.rsplit(".", 1)[-1] if "." in name else ""
    if "corrupt" in path:
        return "Unable to decode audio file: invalid data found when processing input"
    if ext not in AUDIO_EXTENSIONS:
        return f"Unable to decode audio file: unsupported file type '{ext or name}'"
    return ""


def _job_songs(
    state: State,
    files: FileStore,
    request: JSON,
    catalogue: Sequence[JSON],
    end: float,
) -> list[JSON]:
    territories: list[str] = list(request.get("requiredTerritories") or [])
    licences = state.licences_for(request.get("email"))
    details: list[JSON] = list(request.get("licenseDetails") or [])
    songs: list[JSON] = []
    start = 0
    for meta in pick_songs(catalogue, str(request["audioFileURL"])):
        covering = [lic for lic in licences if lic.svc_ids is None or meta["svcId"] in lic.svc_ids]
        if covering:
            lic = covering[0]
            checks = service_checks(
                territories,
                licence_territories=lic.territories,
                valid=lic.valid_to >= end,
                master=False,
            )
            svc = svc_license_json(
                ref=lic.ref,
                date_purchased=lic.date_purchased,
                valid_to=lic.valid_to,
                territories=lic.territories,
                path=files.licence_path(lic.file_key),
            )
            song = make_song(meta, start=start, checks=checks, source="Service", svc_license=svc)
        elif details:
            detail = details[0]
            urls = [str(u) for u in detail.get("licenseFileURLs") or []]
            ext = {
                "id": state.next_id("external_licence", 100),
                "sourceName": detail.get("licenseSourceName") or "",
                "files": [
                    {
                        "id": state.next_id("licence_file", 100),
                        "downloadURL": files.licence_path(
                            "external-licenses/" + hashlib.md5(u.encode()).hexdigest() + ".pdf"
                        ),
                    }
                    for u in urls
                ],
            }
            song = make_song(
                meta,
                start=start,
                checks=external_checks(urls, territories, master=False),
                source=str(detail.get("licenseSource") or "Other"),
                external_license=ext,
            )
        else:
            checks = make_checks(
                "Unknown", dict.fromkeys(territories, "Unknown"), include_master=False
            )
            song = make_song(meta, start=start, checks=checks, source="Pending License")
        songs.append(song)
        start = int(song["endTime"])
    return songs


def create_job(
    state: State,
    files: FileStore,
    request: JSON,
    *,
    now: float,
    delay: float,
    catalogue: Sequence[JSON],
) -> Job:
    """Store a job for a validated create request; its outcome is decided here."""
    job_id = state.next_id("job")
    recording_id = state.next_id("recording", 1000)
    url = str(request["audioFileURL"])
    error = _decode_error(url)
    if error:
        return _store(
            state,
            Job(
                id=job_id,
                request=request,
                organisation_id=int(request["organisationId"]),
                created_at=now,
                finish_at=now + delay / 2,
                recording_id=recording_id,
                final_status="Errored",
                error_message=error,
            ),
        )
    end = parse_timestamp(str(request["endDate"])) or now
    silent = "silence" in urlsplit(url).path.lower()
    songs = [] if silent else _job_songs(state, files, request, catalogue, end)
    ext = urlsplit(url).path.rsplit(".", 1)[-1].lower()
    name = "verification-jobs/" + hashlib.md5(f"{job_id}:{url}".encode()).hexdigest()
    recording = Recording(
        id=recording_id,
        file_key=f"{name.rsplit('/', 1)[-1]}.{ext}",
        upload_file_name=f"{name}.{ext}",
        created_at=now + delay / 4,
        updated_at=now + delay,
        songs_confirmed_at=None,
        status="Failed" if silent else "Complete",
        songs=songs,
    )
    return _store(
        state,
        Job(
            id=job_id,
            request=request,
            organisation_id=int(request["organisationId"]),
            created_at=now,
            finish_at=now + delay,
            recording_id=recording_id,
            recording=recording,
        ),
    )


def _store(state: State, job: Job) -> Job:
    state.jobs[job.id] = job
    return job


def job_status(job: Job, now: float) -> str:
    """The job's status at ``now`` (see the module docstring for the timeline)."""
    if now >= job.finish_at:
        return job.final_status
    span = job.finish_at - job.created_at
    if job.final_status == "Errored":
        span *= 2
    index = int(4 * (now - job.created_at) / span) if span > 0 else 0
    return _PHASES[max(0, min(index, len(_PHASES) - 1))]


def finish_job(job: Job, now: float, error: str | None = None) -> None:
    """Make ``job`` finish at ``now``, as Errored with ``error`` when one is given."""
    job.finish_at = min(job.finish_at, now)
    if error is not None:
        job.final_status = "Errored"
        job.error_message = error or "Processing failed"
        job.recording = None
    elif job.recording is not None:
        job.recording.created_at = min(job.recording.created_at, now)
        job.recording.updated_at = job.finish_at


def _day(text: str) -> str:
    ts = parse_timestamp(text)
    return format_timestamp(ts) if ts is not None else text


def render_job(job: Job, *, now: float, base: str, files: FileStore) -> JSON:
    """A VerificationJob as the service returns it at ``now``."""
    req = job.request
    status = job_status(job, now)
    done = status == "Completed" and job.recording is not None
    return {
        "id": job.id,
        "name": req.get("name"),
        "email": req.get("email"),
        "requiredTerritories": list(req.get("requiredTerritories") or []),
        "externalId": req.get("externalId"),
        "organisationId": job.organisation_id,
        "soundRecordingId": job.recording_id if done else None,
        "errorMessage": job.error_message if status == "Errored" else "",
        "status": status,
        "endDate": _day(str(req.get("endDate"))),
        "startDate": _day(str(req.get("startDate"))),
        "tags": list(req.get("tags") or []),
        "recording": render_recording(job.recording, base=base, files=files, now=now)
        if done and job.recording is not None
        else None,
    }
