"""attrs classes for every resource of the interface, and the requests the SDK sends.

Models are frozen and slotted; attribute names are snake_case (the converter maps them
to the service's camelCase; a field may declare its JSON key in ``metadata["json"]``).
Enumerated strings are open: a value the SDK has not seen is kept as the plain string, so
``LicenseStatus | str`` types read "a known member, or any other string the service
sends". Every response model ends with ``extra``: the JSON keys it does not model, so
nothing the service sends is lost (``svc_async.to_dict`` gives the document back).
Every attrs class here is found by the converter; none needs registering. A link (maybe
signed) is kept whole, and its ``repr`` hides the query values and user info.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Mapping
from enum import StrEnum
from typing import Any

import attrs

from ._core.codegen import NO_EXTRA
from .redact import redact_url


class LicenseStatus(StrEnum):
    """Licence status of a recording or song (open: other strings pass through)."""

    NO_AUDIO_UPLOADED = "No Audio Uploaded"
    NO_LICENSE_UPLOADED = "No License Uploaded"
    UNLICENSED = "Unlicensed"
    REJECTED = "Rejected"
    ACCEPTED = "Accepted"
    UNVERIFIED = "Unverified"
    EXPIRED = "Expired"
    PARTIALLY_LICENSED = "Partially Licensed"
    PROCESSING = "Processing"
    LICENSED = "Licensed"
    PENDING = "Pending"


class RecordingStatus(StrEnum):
    """Processing status of a sound recording."""

    UPLOADING = "Uploading"
    DOWNLOADING = "Downloading"
    CREATED = "Created"
    UPLOADED = "Uploaded"
    MATCHING = "Matching"
    COMPLETE = "Complete"
    FAILED = "Failed"


class JobStatus(StrEnum):
    """Status of a verification job: today's vocabulary, then the legacy names.

    Only ``CURRENT_JOB_STATUSES`` may be sent (the service refuses the others with 400);
    ``Completed`` and ``Confirmed`` are the names used before 2025-02 and are still read.
    """

    CREATED = "Created"
    DOWNLOADING = "Downloading"
    DETECTING_MUSIC = "DetectingMusic"
    MATCHING = "Matching"
    MATCHED = "Matched"
    PROCESSED = "Processed"
    SUBMITTED = "Submitted"
    ERRORED = "Errored"
    COMPLETED = "Completed"
    """Legacy (before 2025-02): read, never sent."""
    CONFIRMED = "Confirmed"
    """Legacy (before 2025-02): read, never sent."""


class JobType(StrEnum):
    """Kind of verification job; the type changes which rights are required."""

    VOD = "VOD"
    ROUTINE = "Routine"


class CheckResult(StrEnum):
    """Outcome of one licence check."""

    ACCEPTED = "Accepted"
    UNKNOWN = "Unknown"
    REJECTED = "Rejected"


class LicenseSource(StrEnum):
    """Where a song's licence comes from (the six sources the service accepts)."""

    SERVICE = "Service"
    PUBLIC_DOMAIN_MUSIC = "Public Domain Music"
    BESPOKE_MUSIC = "Bespoke Music"
    STOCK_ARRANGEMENT = "Stock Arrangement"
    OTHER = "Other"
    PENDING_LICENSE = "Pending License"


class SignupFieldType(StrEnum):
    """Kind of signup question."""

    SHORT_ANSWER = "shortAnswer"
    SINGLE_SELECT = "singleSelect"
    MULTIPLE_SELECT = "multipleSelect"


class ManualStatusValue(StrEnum):
    """A person's verdict on a song, overriding the automatic one."""

    MANUALLY_APPROVED = "Manually Approved"
    MANUALLY_REJECTED = "Manually Rejected"
    USER_UPDATED = "User Updated"


class GrantType(StrEnum):
    """How a bespoke agreement grants its rights."""

    ALL_GRANTED = "all-granted"
    REQUIRES_PERMISSION = "requires-permission"


class OutputFileStatus(StrEnum):
    """Progress of an output file made from a job's recording."""

    PENDING = "Pending"
    PROCESSING = "Processing"
    COMPLETED = "Completed"
    ERRORED = "Errored"


class OutputFileOperation(StrEnum):
    """What an output file does to the recording (``Mute``: silence unlicensed music)."""

    MUTE = "Mute"


class OutputFileType(StrEnum):
    """Format of an output file (``Audio``: an mp3)."""

    AUDIO = "Audio"


CREATION_TAG_PREFIX = "svc-async-create:"
"""Prefix of the unique tag ``jobs.create`` adds to find a job after a lost answer."""

LEGACY_JOB_STATUSES: frozenset[JobStatus] = frozenset({JobStatus.COMPLETED, JobStatus.CONFIRMED})
"""Statuses of the vocabulary before 2025-02: parsed from answers, never sent."""

CURRENT_JOB_STATUSES: tuple[JobStatus, ...] = tuple(
    s for s in JobStatus if s not in LEGACY_JOB_STATUSES
)
"""Today's job statuses, in lifecycle order (``JobStatus``'s): the only ones a request may
carry."""

FINISHED_JOB_STATUSES: frozenset[str] = (
    frozenset({JobStatus.PROCESSED, JobStatus.SUBMITTED, JobStatus.ERRORED}) | LEGACY_JOB_STATUSES
)
"""Statuses at which a waiting caller is done (Submitted may still follow Processed), the
legacy ones included."""

FINISHED_CURRENT_JOB_STATUSES: tuple[JobStatus, ...] = tuple(
    s for s in CURRENT_JOB_STATUSES if s in FINISHED_JOB_STATUSES
)
"""The finished statuses a search may ask for (Processed, Submitted, Errored)."""


def _extra() -> Any:
    """The ``extra`` field every response model ends with: JSON keys it does not model.

    Read-only. It also remembers which optional keys the document left out, so that
    ``to_dict`` leaves them out too (it does not take part in equality).
    """
    return attrs.field(default=NO_EXTRA, repr=False)  # one shared, read-only empty one


_OMIT_IF_NONE = {"omit_if_none": True}
"""Field metadata: a request field left out of the body when None (not sent as null)."""


def _link_repr(value: str | None) -> str:
    """A link's repr without its query values and user info (signatures, tokens)."""
    return repr(value if value is None else redact_url(value))


def _link(**kwargs: Any) -> Any:
    """A field holding a link (maybe signed): kept whole, shown by ``repr`` redacted."""
    return attrs.field(repr=_link_repr, **kwargs)


def _check(json_key: str) -> Any:
    """A licence check's field: None when the answer omits it, and then left out of
    ``to_dict``; ``json_key`` is its JSON name (``"Licensee Name Match"``)."""
    return attrs.field(default=None, metadata={"json": json_key, "omit_if_none": True})


@attrs.frozen(kw_only=True)
class Logo:
    """An organisation's logo; ``signed_url`` is a time-limited link."""

    id: int
    file_type: str | None = None
    file_name: str | None = None
    signed_url: str | None = _link(default=None)
    extra: Mapping[str, Any] = _extra()


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
    extra: Mapping[str, Any] = _extra()


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
    extra: Mapping[str, Any] = _extra()


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
    invite_url: str | None = _link(default=None)
    signup_fields: list[SignupField] = attrs.field(factory=list)
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class Event:
    """An event of an organisation, held in one territory (None until the venue is set)."""

    id: int
    organisation_id: int
    title: str
    start_date: dt.datetime
    end_date: dt.datetime
    territory: str | None = None
    is_locked: bool = False
    invite_url: str | None = _link(default=None)
    signup_fields: list[SignupField] = attrs.field(factory=list)
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class LicenseChecks:
    """The licence checks of a song, one attribute per check.

    A check the response omits is None (the example files omit Publishing Arrangement
    Rights, and the three Master* checks in job answers), and ``to_dict`` leaves a None
    check out; checks the SDK does not know are kept in ``extra`` under their JSON names.
    """

    licensee_name_match: CheckResult | str | None = _check("Licensee Name Match")
    license_source_matches: CheckResult | str | None = _check("License Source Matches")
    title_matches: CheckResult | str | None = _check("Title Matches")
    artists_match: CheckResult | str | None = _check("Artists Match")
    master_choreography_rights: CheckResult | str | None = _check("Master Choreography Rights")
    master_adaptation_rights: CheckResult | str | None = _check("Master Adaptation Rights")
    master_duplication_rights: CheckResult | str | None = _check("Master Duplication Rights")
    publishing_choreography_rights: CheckResult | str | None = _check(
        "Publishing Choreography Rights"
    )
    publishing_adaptation_rights: CheckResult | str | None = _check("Publishing Adaptation Rights")
    publishing_duplication_rights: CheckResult | str | None = _check(
        "Publishing Duplication Rights"
    )
    publishing_arrangement_rights: CheckResult | str | None = _check(
        "Publishing Arrangement Rights"
    )
    valid_date: CheckResult | str | None = _check("Valid Date")
    full_ownership: CheckResult | str | None = _check("Full Ownership")
    territory_match: dict[str, CheckResult | str] | None = _check("Territory Match")
    extra: Mapping[str, Any] = _extra()

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
        """The checks whose result is not ``Accepted``: a dict, as ``results()`` gives them.

        Empty when every check present passed; ask ``Song.license_checks`` for None first
        (a song not yet checked has no checks at all).
        """
        return {k: v for k, v in self.results().items() if v != CheckResult.ACCEPTED}


TERRITORY_MATCH_KEY = "Territory Match"

LICENSE_CHECK_NAMES: dict[str, str] = {
    f.metadata["json"]: f.name
    for f in attrs.fields(LicenseChecks)
    if "json" in f.metadata and f.metadata["json"] != TERRITORY_MATCH_KEY
}
"""JSON key of each simple licence check -> its attribute on LicenseChecks."""


@attrs.frozen(kw_only=True)
class LicenseRight:
    """One right granted by a service-held licence."""

    name: str
    variant: str | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class SvcLicense:
    """A licence held by the service (found from the entry's or job's email)."""

    ref: str
    date_purchased: dt.datetime | None = None
    valid_to: dt.datetime | None = None
    download_url: str | None = _link(default=None)
    rights: list[LicenseRight] = attrs.field(factory=list)
    territories: list[str] = attrs.field(factory=list)
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class ExternalLicenseFile:
    """A licence file supplied with an entry or job; ``download_url`` is signed, or None."""

    id: int
    download_url: str | None = _link(default=None)
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class ExternalLicense:
    """Licence files from another source."""

    id: int
    source_name: str | None = None
    files: list[ExternalLicenseFile] = attrs.field(factory=list)
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class LicensedUses:
    """What a bespoke agreement allows; None means the agreement does not say."""

    master_copy_and_distribute: bool | None = None
    master_choreography: bool | None = None
    publishing_copy_and_distribute: bool | None = None
    publishing_choreography: bool | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class BespokeRightsholder:
    """Who sold a bespoke licence."""

    name: str | None = None
    email: str | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class BespokeAgreement:
    """A licence agreed directly with a rightsholder (licence source Bespoke Music)."""

    id: int
    territories: list[str] = attrs.field(factory=list)
    date_sold: dt.datetime | None = None
    license_start: dt.datetime | None = None
    license_expiry: dt.datetime | None = None
    grant_type: GrantType | str | None = None
    licensed_uses: LicensedUses | None = None
    date_submitted: dt.datetime | None = None
    bespoke_rightsholder: BespokeRightsholder | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class Composer:
    """A composer named in a public-domain proof; ``year_died`` when known."""

    name: str
    year_died: int | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class PublicDomainProof:
    """Why a song is in the public domain (licence source Public Domain Music)."""

    composers: list[Composer] = attrs.field(factory=list)
    iswc: str | None = None
    source: str | None = None
    notes: str | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class LicenseData:
    """Where a song's licence comes from, with the licence itself when known."""

    license_source: LicenseSource | str | None = None
    bespoke_agreement: BespokeAgreement | None = None
    svc_license: SvcLicense | None = None
    external_license: ExternalLicense | None = None
    public_domain_proof: PublicDomainProof | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class ManualStatus:
    """A person's verdict on a song (``status`` None when cleared) and their note."""

    status: ManualStatusValue | str | None = None
    details: str | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class Song:
    """A song found in a sound recording, with its licence verdict.

    ``license_checks`` and ``license_data`` are None for a song not yet checked.
    ``svc_mix_id`` is a number today (a string in the example files: kept as it came).
    ``manual_status`` is a ManualStatus, or the plain string older answers carried.
    """

    title: str
    artists: str
    start_time: float
    end_time: float
    license_status: LicenseStatus | str
    license_checks: LicenseChecks | None = None
    license_data: LicenseData | None = None
    svc_mix_id: int | str | None = None
    svc_id: str | None = None
    composer: str | None = None
    isrc: str | None = None
    iswc: str | None = None
    publisher: str | None = None
    record_label: str | None = None
    tunecode: str | None = None
    upc: str | None = None
    year_of_release: int | None = None
    manual_status: ManualStatus | str | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class SoundRecording:
    """An uploaded recording and the songs found in it."""

    created_at: dt.datetime
    updated_at: dt.datetime
    download_url: str = _link()
    upload_file_name: str
    license_status: LicenseStatus | str
    status: RecordingStatus | str
    songs_confirmed_at: dt.datetime | None = None
    md5_hash: str | None = None
    songs: list[Song] = attrs.field(factory=list)
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class EntryField:
    """A participant's answer to a signup field (a string, or a list for some fields)."""

    signup_field_id: int
    value: str | list[str] | None = None
    key: str | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class Entry:
    """A participant's entry in an event or season, with its recording if uploaded."""

    id: int
    name: str
    email: str | None = None
    fields: list[EntryField] = attrs.field(factory=list)
    sound_recording: SoundRecording | None = None
    extra: Mapping[str, Any] = _extra()

    def field(self, key: str) -> str | list[str] | None:
        """The value of the entry field with ``key`` (e.g. ``"division"``), or None."""
        for f in self.fields:
            if f.key == key:
                return f.value
        return None


@attrs.frozen(kw_only=True)
class OutputFile:
    """A file made from a job's recording (e.g. muted audio); links last at most 7 days."""

    id: int
    verification_job_id: int
    status: OutputFileStatus | str
    download_url: str | None = _link(default=None)
    operation: OutputFileOperation | str | None = None
    file_type: OutputFileType | str | None = None
    extra: Mapping[str, Any] = _extra()

    @property
    def is_ready(self) -> bool:
        """True when the file is made and has a download link."""
        return self.status == OutputFileStatus.COMPLETED and self.download_url is not None


@attrs.frozen(kw_only=True)
class VerificationJob:
    """A verification job. Processing is asynchronous: see ``is_finished``.

    ``edit_url`` lets whoever holds it view or claim the job; ``is_claimed`` says whether
    someone has. ``type`` is VOD or Routine; ``output_files`` are the files made for it.
    """

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
    edit_url: str | None = _link(default=None)
    is_claimed: bool | None = None
    type: JobType | str | None = None
    output_files: list[OutputFile] = attrs.field(factory=list)
    output_file_type: OutputFileType | str | None = None
    extra: Mapping[str, Any] = _extra()

    @property
    def is_finished(self) -> bool:
        """True once a waiting caller is done: a finished status, or an error message.

        Finished: Processed, Submitted, Errored, or legacy Completed/Confirmed.
        """
        return self.is_finished_under(FINISHED_JOB_STATUSES)

    def is_finished_under(self, statuses: Collection[str]) -> bool:
        """The one statement of the rule: finished when the status is one of ``statuses``
        or the service has set an error message (whatever the status says).

        ``is_finished`` applies it to the default statuses, ``PollPolicy`` to its own.
        """
        return str(self.status) in statuses or bool(self.error_message)

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
    """One page of a job search; ``count`` is the total over all pages.

    The service calls the list ``results`` (``jobs`` before 2025-01); ``list_key`` says
    which name the answer used, so ``to_dict`` gives it back.
    """

    jobs: list[VerificationJob]
    count: int
    list_key: str = "results"
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class LicenseDetails:
    """Licence files supplied with a verification job (none for Service, Pending License)."""

    license_source: LicenseSource | str
    license_source_name: str
    license_file_urls: list[str] = attrs.field(
        factory=list, repr=lambda urls: repr([redact_url(url) for url in urls])
    )


@attrs.frozen(kw_only=True)
class OutputFileRequest:
    """Ask for an output file when a (VOD) job finishes processing.

    ``callback_url``: the service POSTs the finished OutputFile there. Omitted
    ``file_type``/``callback_url`` are left out of the body.
    """

    operation: OutputFileOperation | str = OutputFileOperation.MUTE
    file_type: OutputFileType | str | None = attrs.field(default=None, metadata=_OMIT_IF_NONE)
    callback_url: str | None = _link(default=None, metadata=_OMIT_IF_NONE)


@attrs.frozen(kw_only=True)
class JobRequest:
    """The body of Create Verification Job. Dates go out as ``YYYY-MM-DD``.

    ``email`` and ``external_id`` are always sent (``null`` when None), as the service
    requires the keys; ``external_id`` left unset goes out as ``""``, as it always has.
    ``type`` and ``output_file`` are left out of the body when None (the service then
    makes a Routine job with no output file).
    """

    name: str
    email: str | None
    organisation_id: int
    audio_file_url: str = _link()
    start_date: dt.date
    end_date: dt.date
    required_territories: list[str] = attrs.field(factory=list)
    external_id: str | None = ""
    tags: list[str] = attrs.field(factory=list)
    license_details: list[LicenseDetails] = attrs.field(factory=list)
    type: JobType | str | None = attrs.field(default=None, metadata=_OMIT_IF_NONE)
    output_file: OutputFileRequest | None = attrs.field(default=None, metadata=_OMIT_IF_NONE)


@attrs.frozen(kw_only=True)
class RateLimit:
    """The rate-limit headers of a response: the budget, what is left, seconds to reset."""

    limit: int | None
    remaining: int | None
    reset: float | None
