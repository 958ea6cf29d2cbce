"""Verification jobs: creating one (``POST /api/public/v1/verification-job``), reading
one (``GET .../verification-job/{verificationJobId}``) and searching them (``POST
.../verification-job/search``, ``{results, count}``; legacy ``{jobs, count}``).

Request rules:

* create: ``name`` string; ``email`` a valid address or null (key required);
  ``requiredTerritories`` strings of length 2 (any case); ``startDate``/``endDate``
  ``YYYY-MM-DD``; ``externalId`` string or null (key required); ``organisationId``
  number; ``audioFileURL`` an http(s) URL; ``tags`` required, each 2-255 characters;
  ``licenseDetails`` required, each ``{licenseSource (one of six), licenseSourceName,
  licenseFileURLs}``; optional ``type`` VOD/Routine, ``outputFile {operation: "Mute",
  fileType?: "Audio", callbackURL?: string}``, ``outputFileType`` ``Audio``;
* search: ``tags`` at most 100 strings (any length), ``statuses`` values of the current
  status list only, ``orgId`` number, ``limit`` 0-100, ``offset`` >= 0.

A job's outcome is decided at creation; its progress follows ``lifecycle`` (a pure
function of the fake clock). A job's type is ``Routine`` unless the request says
``VOD``; a request with ``outputFile`` gets one output file (a muted mp3) once
processed. Audio rules (on the URL's path, case-insensitive):

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
import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

import attrs

from ..clock import format_timestamp, parse_timestamp
from ..files import FileStore
from ..licensing import (
    external_checks,
    make_checks,
    make_song,
    pick_songs,
    service_checks,
    svc_license_json,
)
from ..lifecycle import job_status, output_status
from ..state import Job, OutputFile, Recording, State
from ..today import dress_recording
from ..validation import MISSING, Validator
from ..wire import JSON
from .base import V1, Answer, Call, Core, Route, owned, page, read_body, visible
from .entries import render_recording

__all__ = [
    "AUDIO_EXTENSIONS",
    "LICENSE_SOURCES",
    "ROUTES",
    "create_job",
    "render_job",
    "render_output_file",
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

AUDIO_EXTENSIONS: frozenset[str] = frozenset(
    {"mp3", "mpga", "wav", "m4a", "aac", "flac", "ogg", "oga", "mp4", "mov", "m4v", "webm"}
)
"""File extensions the fake "can decode"."""


# ----------------------------------------------------------------- rules


# zod's e-mail rule (the service validates with zod).
_EMAIL = re.compile(
    r"^(?!\.)(?!.*\.\.)([A-Z0-9_'+\-.]*)[A-Z0-9_+-]@([A-Z0-9][A-Z0-9\-]*\.)+[A-Z]{2,}$",
    re.IGNORECASE,
)


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


def _read_create(body: Any) -> JSON:
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
    return v.accepted(request)


def _read_search(body: Any, statuses: Sequence[str]) -> JSON:
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
    return v.accepted(request)


# ----------------------------------------------------------------- creation


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


@attrs.frozen
class _Verdicts:
    """What every detected song of one job is judged by (rules in ``licensing``).

    ``master``: with the three Master checks (today's service), else without them (the
    published examples); ``end``: when the job ends, the day a licence must still be valid.
    """

    state: State
    files: FileStore
    request: JSON
    end: float
    master: bool

    def song(self, meta: JSON, start: int) -> JSON:
        """One detected song's verdict, the song starting at ``start``."""
        request, master = self.request, self.master
        territories: list[str] = list(request.get("requiredTerritories") or [])
        licences = self.state.licences_for(request.get("email"))
        details: list[JSON] = list(request.get("licenseDetails") or [])
        covering = [lic for lic in licences if lic.svc_ids is None or meta["svcId"] in lic.svc_ids]
        if covering:
            lic = covering[0]
            checks = service_checks(
                territories,
                licence_territories=lic.territories,
                valid=lic.valid_to >= self.end,
                master=master,
            )
            svc = svc_license_json(lic, self.files.licence_path(lic.file_key))
            return make_song(meta, start=start, checks=checks, source="Service", svc_license=svc)
        if details:
            ext, urls = _external(self.state, self.files, details[0])
            return make_song(
                meta,
                start=start,
                checks=external_checks(urls, territories, master=master),
                source=str(details[0].get("licenseSource") or "Other"),
                external_license=ext,
            )
        checks = make_checks(
            "Unknown", dict.fromkeys(territories, "Unknown"), include_master=master
        )
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
    verdicts = _Verdicts(state, files, request, end, master=not legacy)
    songs: list[JSON] = []
    start = 0
    for meta in pick_songs(catalogue, str(request["audioFileURL"])):
        song = verdicts.song(meta, start)
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


# ----------------------------------------------------------------- rendering


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


def render_job(core: Core, job: Job, *, base: str, now: float) -> JSON:
    """A VerificationJob as the service returns it at ``now``."""
    req, flavour = job.request, core.flavour
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
        "recording": render_recording(core, job.recording, base=base, now=now)
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
        outputFiles=[render_output_file(job, job.output, now=now, files=core.files)]
        if done and job.output is not None
        else [],
        # Deprecated, and never null: every job's output is audio.
        outputFileType=req.get("outputFileType") or wanted.get("fileType") or "Audio",
    )
    return out


# ----------------------------------------------------------------- handlers


def _create(core: Core, call: Call) -> Answer:
    """``POST /api/public/v1/verification-job``: the job as created (status Created)."""
    request = _read_create(read_body(call))
    visible(core, call, request["organisationId"])
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
    rendered = render_job(core, job, base=call.raw.base, now=job.created_at)
    # The create answer always shows the job before any processing.
    rendered.update(status="Created", soundRecordingId=None, errorMessage="", recording=None)
    return 200, rendered


def _get_job(core: Core, call: Call) -> Answer:
    """``GET /api/public/v1/verification-job/{verificationJobId}``."""
    job = owned(core, call, core.state.jobs, "verificationJobId", "Verification job")
    return 200, render_job(core, job, base=call.raw.base, now=call.now)


def _search(core: Core, call: Call) -> Answer:
    """``POST /api/public/v1/verification-job/search``: ``{results, count}`` (legacy jobs)."""
    req = _read_search(read_body(call), core.flavour.statuses)
    seen = visible(core, call, req["orgId"])
    lag, tags, statuses = core.settings.search_lag, set(req["tags"]), req["statuses"]
    matches = [
        job
        for job in sorted(core.state.jobs.values(), key=lambda j: j.id)
        if job.organisation_id in seen
        and call.now >= job.created_at + lag
        and tags <= set(job.request.get("tags") or [])
        and (not statuses or job_status(job, call.now, core.flavour) in statuses)
    ]
    rendered = [render_job(core, j, base=call.raw.base, now=call.now) for j in page(matches, req)]
    return 200, {core.flavour.results_key: rendered, "count": len(matches)}


ROUTES: tuple[Route, ...] = (
    Route("POST", f"{V1}/verification-job", _create),
    Route("POST", f"{V1}/verification-job/search", _search),
    Route("GET", f"{V1}/verification-job/{{verificationJobId}}", _get_job),
)
