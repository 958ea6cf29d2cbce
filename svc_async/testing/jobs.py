"""Verification jobs: creating one from a valid request, its progress and its verdict.

Progress follows ``lifecycle`` (a pure function of the fake clock). A job's type is
``Routine`` unless the request says ``VOD``; a request with ``outputFile`` gets one
output file (a muted mp3) once processed.

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
from .flavour import Flavour
from .licensing import (
    external_checks,
    make_checks,
    make_song,
    pick_songs,
    service_checks,
    svc_license_json,
)
from .lifecycle import job_status, output_status
from .render import render_recording
from .state import Job, OutputFile, Recording, State
from .today import dress_recording

JSON = dict[str, Any]

__all__ = ["AUDIO_EXTENSIONS", "create_job", "render_job", "render_output_file"]

AUDIO_EXTENSIONS: frozenset[str] = frozenset(
    {"mp3", "mpga", "wav", "m4a", "aac", "flac", "ogg", "oga", "mp4", "mov", "m4v", "webm"}
)
"""File extensions the fake "can decode"."""


def _decode_error(audio_url: str) -> str:
    path = urlsplit(audio_url).path.lower()
    name = path.rsplit("/", 1)[-1]
    ext = name.rsplit(".", 1)[-1] if "." in name else ""
    if "corrupt" in path:
        return "Unable to decode audio file: invalid data found when processing input"
    if ext not in AUDIO_EXTENSIONS:
        return f"Unable to decode audio file: unsupported file type '{ext or name}'"
    return ""


def _external(state: State, files: FileStore, detail: JSON) -> tuple[JSON, list[str]]:
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
    return ext, urls


def _job_song(
    state: State,
    files: FileStore,
    request: JSON,
    meta: JSON,
    start: int,
    end: float,
    *,
    master: bool,
) -> JSON:
    """One detected song's verdict (rules in ``licensing``); ``master``: with the three
    Master checks (today's service), else without them (the published examples)."""
    territories: list[str] = list(request.get("requiredTerritories") or [])
    licences = state.licences_for(request.get("email"))
    details: list[JSON] = list(request.get("licenseDetails") or [])
    covering = [lic for lic in licences if lic.svc_ids is None or meta["svcId"] in lic.svc_ids]
    if covering:
        lic = covering[0]
        checks = service_checks(
            territories,
            licence_territories=lic.territories,
            valid=lic.valid_to >= end,
            master=master,
        )
        svc = svc_license_json(lic, files.licence_path(lic.file_key))
        return make_song(meta, start=start, checks=checks, source="Service", svc_license=svc)
    if details:
        ext, urls = _external(state, files, details[0])
        return make_song(
            meta,
            start=start,
            checks=external_checks(urls, territories, master=master),
            source=str(details[0].get("licenseSource") or "Other"),
            external_license=ext,
        )
    checks = make_checks("Unknown", dict.fromkeys(territories, "Unknown"), include_master=master)
    return make_song(meta, start=start, checks=checks, source="Pending License")


def _job_songs(
    state: State,
    files: FileStore,
    request: JSON,
    catalogue: Sequence[JSON],
    end: float,
    *,
    legacy: bool,
) -> list[JSON]:
    songs: list[JSON] = []
    start = 0
    for meta in pick_songs(catalogue, str(request["audioFileURL"])):
        song = _job_song(state, files, request, meta, start, end, master=not legacy)
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
    legacy: bool = False,
) -> Job:
    """Store a job for a validated create request; its outcome is decided here."""
    job_id = state.next_id("job")
    recording_id = state.next_id("recording", 1000)
    url = str(request["audioFileURL"])
    common: JSON = {
        "id": job_id,
        "request": request,
        "organisation_id": int(request["organisationId"]),
        "created_at": now,
        "recording_id": recording_id,
        "type": str(request.get("type") or "Routine"),
        "edit_token": hashlib.sha256(f"edit:{job_id}:{url}:{now}".encode()).hexdigest()[:24],
    }
    error = _decode_error(url)
    if error:
        return _store(
            state,
            Job(**common, finish_at=now + delay / 2, final_status="Errored", error_message=error),
        )
    end = parse_timestamp(str(request["endDate"])) or now
    silent = "silence" in urlsplit(url).path.lower()
    songs = [] if silent else _job_songs(state, files, request, catalogue, end, legacy=legacy)
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
    if not legacy:
        dress_recording(recording, files)
    wanted = request.get("outputFile")
    output = None
    if wanted:
        output = OutputFile(
            id=state.next_id("output_file", 500),
            key=f"{job_id}-{hashlib.md5(url.encode()).hexdigest()[:12]}-muted.mp3",
            operation=str(wanted.get("operation") or "Mute"),
            file_type=str(wanted.get("fileType") or "Audio"),
            callback_url=wanted.get("callbackURL"),
            lag=delay / 2,
        )
    return _store(state, Job(**common, finish_at=now + delay, recording=recording, output=output))


def _store(state: State, job: Job) -> Job:
    state.jobs[job.id] = job
    return job


def _day(text: str) -> str:
    ts = parse_timestamp(text)
    return format_timestamp(ts) if ts is not None else text


def render_output_file(job: Job, out: OutputFile, *, now: float, files: FileStore) -> JSON:
    """An output-file object (also the body POSTed to its ``callbackURL``)."""
    status = output_status(job, out, now)
    return {
        "id": out.id,
        "verificationJobId": job.id,
        "status": status,
        "downloadURL": files.output_url(out.key, now) if status == "Completed" else None,
        "operation": out.operation,
        "fileType": out.file_type,
    }


def render_job(job: Job, *, now: float, base: str, files: FileStore, flavour: Flavour) -> JSON:
    """A VerificationJob as the service returns it at ``now``."""
    req = job.request
    status = job_status(job, now, flavour)
    done = now >= job.finish_at and job.final_status != "Errored" and job.recording is not None
    out: JSON = {
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
        "recording": render_recording(
            job.recording, base=base, files=files, now=now, legacy=flavour.legacy
        )
        if done and job.recording is not None
        else None,
    }
    if flavour.legacy:
        return out
    wanted = req.get("outputFile") or {}
    out.update(
        editURL=f"{base}/verification-jobs/{job.id}/edit?token={job.edit_token}",
        isClaimed=job.claimed,
        type=job.type,
        outputFiles=[render_output_file(job, job.output, now=now, files=files)]
        if done and job.output is not None
        else [],
        # Deprecated, and never null: every job's output is audio.
        outputFileType=req.get("outputFileType") or wanted.get("fileType") or "Audio",
    )
    return out
