"""attrs classes for every resource of the interface, and the requests the SDK sends.

Models are frozen and slotted; attribute names are snake_case (the converter maps them
to the service's camelCase). Enumerated strings are open: a value the SDK has not seen is
kept as the plain string, so ``LicenseStatus | str`` types read "a known member, or any
other string the service sends".
"""

from __future__ import annotations

import datetime as dt
from enum import StrEnum
from typing import Any

import attrs


class LicenseStatus(StrEnum):
    """Licence status of a recording or song (open: other strings pass through)."""

    LICENSED = "Licensed"
    PENDING = "Pending"
    UNVERIFIED = "Unverified"
    PARTIALLY_LICENSED = "Partially Licensed"
    NO_AUDIO_UPLOADED = "No Audio Uploaded"


class RecordingStatus(StrEnum):
    """Processing status of a sound recording."""

    COMPLETE = "Complete"
    FAILED = "Failed"


class JobStatus(StrEnum):
    """Status of a verification job, as published plus ``Completed`` seen in examples."""

    CREATED = "Created"
    DOWNLOADING = "Downloading"
    DETECTING_MUSIC = "DetectingMusic"
    MATCHING = "Matching"
    MATCHED = "Matched"
    PROCESSED = "Processed"
    SUBMITTED = "Submitted"
    COMPLETED = "Completed"
    ERRORED = "Errored"


class CheckResult(StrEnum):
    """Outcome of one licence check."""

    ACCEPTED = "Accepted"
    UNKNOWN = "Unknown"
    REJECTED = "Rejected"


class LicenseSource(StrEnum):
    """Where a song's licence comes from."""

    SERVICE = "Service"
    BESPOKE_MUSIC = "Bespoke Music"
    PENDING_LICENSE = "Pending License"
    OTHER = "Other"


class SignupFieldType(StrEnum):
    """Kind of signup question."""

    SHORT_ANSWER = "shortAnswer"
    SINGLE_SELECT = "singleSelect"


CREATION_TAG_PREFIX = "svc-async-create:"
"""Prefix of the unique tag ``jobs.create`` adds to find a job after a lost answer."""

FINISHED_JOB_STATUSES: frozenset[str] = frozenset({JobStatus.COMPLETED, JobStatus.ERRORED})
"""Job statuses after which the service does no more work on a job."""


@attrs.frozen(kw_only=True)
class Logo:
    """An organisation's logo; ``signed_url`` is a time-limited link."""

    id: int
    file_type: str | None = None
    file_name: str | None = None
    signed_url: str | None = None


@attrs.frozen(kw_only=True)
class Organisation:
    """An organisation; organisations form a tree through ``parent_id``."""

    id: int
    name: str
    created_at: dt.datetime | None = None
    updated_at: dt.datetime | None = None
    deleted_at: dt.datetime | None = None
    parent_id: int | None = None
    is_event_producer: bool = False
    logo: Logo | None = None


@attrs.frozen(kw_only=True)
class SignupField:
    """A question asked of participants when they sign up to a season or event."""

    id: int
    question: str
    type: SignupFieldType | str
    is_required: bool = False
    options: list[str] = attrs.field(factory=list)
    order: int = 0
    description: str = ""
    key: str | None = None


@attrs.frozen(kw_only=True)
class Season:
    """A season of an organisation."""

    id: int
    organisation_id: int
    title: str
    start_date: dt.datetime
    end_date: dt.datetime
    is_locked: bool = False
    territories: list[Any] = attrs.field(factory=list)
    invite_url: str | None = None
    signup_fields: list[SignupField] = attrs.field(factory=list)


@attrs.frozen(kw_only=True)
class Event:
    """An event of an organisation, held in one territory."""

    id: int
    organisation_id: int
    title: str
    start_date: dt.datetime
    end_date: dt.datetime
    territory: str | None = None
    is_locked: bool = False
    invite_url: str | None = None
    signup_fields: list[SignupField] = attrs.field(factory=list)


@attrs.frozen(kw_only=True)
class LicenseChecks:
    """The licence checks of a song, one attribute per check.

    A check the response omits is None (verification jobs omit the three Master* checks);
    checks the SDK does not know are kept in ``extra`` under their JSON names.
    """

    licensee_name_match: CheckResult | str | None = None
    license_source_matches: CheckResult | str | None = None
    title_matches: CheckResult | str | None = None
    artists_match: CheckResult | str | None = None
    master_choreography_rights: CheckResult | str | None = None
    master_adaptation_rights: CheckResult | str | None = None
    master_duplication_rights: CheckResult | str | None = None
    publishing_choreography_rights: CheckResult | str | None = None
    publishing_adaptation_rights: CheckResult | str | None = None
    publishing_duplication_rights: CheckResult | str | None = None
    valid_date: CheckResult | str | None = None
    full_ownership: CheckResult | str | None = None
    territory_match: dict[str, CheckResult | str] | None = None
    extra: dict[str, Any] = attrs.field(factory=dict)

    def results(self) -> dict[str, CheckResult | str]:
        """Every present check by attribute name; territories as ``territory_match[XX]``."""
        out: dict[str, CheckResult | str] = {}
        for name in LICENSE_CHECK_NAMES.values():
            value = getattr(self, name)
            if isinstance(value, str):
                out[name] = value
        for country, value in (self.territory_match or {}).items():
            out[f"territory_match[{country}]"] = value
        return out

    def failing(self) -> dict[str, CheckResult | str]:
        """The checks whose result is not ``Accepted``."""
        return {k: v for k, v in self.results().items() if v != CheckResult.ACCEPTED}


LICENSE_CHECK_NAMES: dict[str, str] = {
    "Licensee Name Match": "licensee_name_match",
    "License Source Matches": "license_source_matches",
    "Title Matches": "title_matches",
    "Artists Match": "artists_match",
    "Master Choreography Rights": "master_choreography_rights",
    "Master Adaptation Rights": "master_adaptation_rights",
    "Master Duplication Rights": "master_duplication_rights",
    "Publishing Choreography Rights": "publishing_choreography_rights",
    "Publishing Adaptation Rights": "publishing_adaptation_rights",
    "Publishing Duplication Rights": "publishing_duplication_rights",
    "Valid Date": "valid_date",
    "Full Ownership": "full_ownership",
}
"""JSON key of each simple licence check -> its attribute on LicenseChecks."""

TERRITORY_MATCH_KEY = "Territory Match"


@attrs.frozen(kw_only=True)
class LicenseRight:
    """One right granted by a service-held licence."""

    name: str
    variant: str | None = None


@attrs.frozen(kw_only=True)
class SvcLicense:
    """A licence held by the service (found from the entry's or job's email)."""

    ref: str
    date_purchased: dt.datetime | None = None
    valid_to: dt.datetime | None = None
    download_url: str | None = None
    rights: list[LicenseRight] = attrs.field(factory=list)
    territories: list[str] = attrs.field(factory=list)


@attrs.frozen(kw_only=True)
class ExternalLicenseFile:
    """A licence file supplied with an entry or job; ``download_url`` is signed."""

    id: int
    download_url: str


@attrs.frozen(kw_only=True)
class ExternalLicense:
    """Licence files from another source."""

    id: int
    source_name: str | None = None
    files: list[ExternalLicenseFile] = attrs.field(factory=list)


@attrs.frozen(kw_only=True)
class LicenseData:
    """Where a song's licence comes from, with the licence itself when known."""

    license_source: LicenseSource | str | None = None
    bespoke_agreement: dict[str, Any] | None = None
    svc_license: SvcLicense | None = None
    external_license: ExternalLicense | None = None
    public_domain_proof: dict[str, Any] | None = None


@attrs.frozen(kw_only=True)
class Song:
    """A song found in a sound recording, with its licence verdict."""

    title: str
    artists: str
    start_time: float
    end_time: float
    license_status: LicenseStatus | str
    license_checks: LicenseChecks = attrs.field(factory=LicenseChecks)
    license_data: LicenseData = attrs.field(factory=LicenseData)
    svc_mix_id: str | None = None
    svc_id: str | None = None
    composer: str | None = None
    isrc: str | None = None
    iswc: str | None = None
    publisher: str | None = None
    record_label: str | None = None
    tunecode: str | None = None
    upc: str | None = None
    year_of_release: int | None = None
    manual_status: str | None = None


@attrs.frozen(kw_only=True)
class SoundRecording:
    """An uploaded recording and the songs found in it."""

    created_at: dt.datetime
    updated_at: dt.datetime
    download_url: str
    upload_file_name: str
    license_status: LicenseStatus | str
    status: RecordingStatus | str
    songs_confirmed_at: dt.datetime | None = None
    songs: list[Song] = attrs.field(factory=list)


@attrs.frozen(kw_only=True)
class EntryField:
    """A participant's answer to a signup field (a string, or a list for some fields)."""

    signup_field_id: int
    value: str | list[str] | None = None
    key: str | None = None


@attrs.frozen(kw_only=True)
class Entry:
    """A participant's entry in an event or season, with its recording if uploaded."""

    id: int
    name: str
    email: str | None = None
    fields: list[EntryField] = attrs.field(factory=list)
    sound_recording: SoundRecording | None = None

    def field(self, key: str) -> str | list[str] | None:
        """The value of the entry field with ``key`` (e.g. ``"division"``), or None."""
        for f in self.fields:
            if f.key == key:
                return f.value
        return None


@attrs.frozen(kw_only=True)
class VerificationJob:
    """A verification job. Processing is asynchronous: see ``is_finished``."""

    id: int
    organisation_id: int
    status: JobStatus | str
    name: str = ""
    email: str | None = None
    external_id: str | None = None
    required_territories: list[str] = attrs.field(factory=list)
    sound_recording_id: int | None = None
    error_message: str = ""
    start_date: dt.datetime | None = None
    end_date: dt.datetime | None = None
    tags: list[str] = attrs.field(factory=list)
    recording: SoundRecording | None = None

    @property
    def is_finished(self) -> bool:
        """True once the service will do no more work: Completed, Errored, or an error message."""
        return self.status in FINISHED_JOB_STATUSES or bool(self.error_message)

    @property
    def user_tags(self) -> list[str]:
        """The job's tags without the SDK's own creation tag."""
        return [t for t in self.tags if not t.startswith(CREATION_TAG_PREFIX)]

    @property
    def failed(self) -> bool:
        """True when the job finished without a verdict (Errored, or an error message)."""
        return self.status == JobStatus.ERRORED or bool(self.error_message)


@attrs.frozen(kw_only=True)
class JobSearchResults:
    """One page of a job search; ``count`` is the total over all pages."""

    jobs: list[VerificationJob]
    count: int


@attrs.frozen(kw_only=True)
class LicenseDetails:
    """Licence files supplied with a verification job."""

    license_source: LicenseSource | str
    license_source_name: str
    license_file_urls: list[str] = attrs.field(factory=list)


@attrs.frozen(kw_only=True)
class JobRequest:
    """The body of Create Verification Job. Dates go out as ``YYYY-MM-DD``."""

    name: str
    email: str
    organisation_id: int
    audio_file_url: str
    start_date: dt.date
    end_date: dt.date
    required_territories: list[str] = attrs.field(factory=list)
    external_id: str = ""
    tags: list[str] = attrs.field(factory=list)
    license_details: list[LicenseDetails] = attrs.field(factory=list)


@attrs.frozen(kw_only=True)
class RateLimit:
    """The rate-limit headers of a response: the budget, what is left, seconds to reset."""

    limit: int | None
    remaining: int | None
    reset: float | None
