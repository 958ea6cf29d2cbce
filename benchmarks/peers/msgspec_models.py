"""msgspec Structs of the entry shapes: frozen, camelCase renames, irregular keys named."""

from __future__ import annotations

import datetime as dt
from typing import Any

import msgspec


class _Base(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """Frozen, keyword-only, camelCase JSON names; unknown keys ignored."""


class LicenseRight(_Base):
    """A right of a service-held licence."""

    name: str
    variant: str | None = None


class SvcLicense(_Base):
    """A licence held by the service."""

    ref: str
    date_purchased: dt.datetime | None = None
    valid_to: dt.datetime | None = None
    download_url: str | None = msgspec.field(default=None, name="downloadURL")
    rights: list[LicenseRight] = []
    territories: list[str] = []


class ExternalLicenseFile(_Base):
    """A licence file from another source."""

    id: int
    download_url: str = msgspec.field(name="downloadURL")


class ExternalLicense(_Base):
    """Licence files from another source."""

    id: int
    source_name: str | None = None
    files: list[ExternalLicenseFile] = []


class LicenseData(_Base):
    """Where a song's licence comes from."""

    license_source: str | None = None
    bespoke_agreement: dict[str, Any] | None = None
    svc_license: SvcLicense | None = None
    external_license: ExternalLicense | None = None
    public_domain_proof: dict[str, Any] | None = None


class LicenseChecks(msgspec.Struct, frozen=True, kw_only=True):
    """The licence checks, keyed by names with spaces."""

    licensee_name_match: str | None = msgspec.field(default=None, name="Licensee Name Match")
    license_source_matches: str | None = msgspec.field(default=None, name="License Source Matches")
    title_matches: str | None = msgspec.field(default=None, name="Title Matches")
    artists_match: str | None = msgspec.field(default=None, name="Artists Match")
    master_choreography_rights: str | None = msgspec.field(
        default=None, name="Master Choreography Rights"
    )
    master_adaptation_rights: str | None = msgspec.field(
        default=None, name="Master Adaptation Rights"
    )
    master_duplication_rights: str | None = msgspec.field(
        default=None, name="Master Duplication Rights"
    )
    publishing_choreography_rights: str | None = msgspec.field(
        default=None, name="Publishing Choreography Rights"
    )
    publishing_adaptation_rights: str | None = msgspec.field(
        default=None, name="Publishing Adaptation Rights"
    )
    publishing_duplication_rights: str | None = msgspec.field(
        default=None, name="Publishing Duplication Rights"
    )
    valid_date: str | None = msgspec.field(default=None, name="Valid Date")
    full_ownership: str | None = msgspec.field(default=None, name="Full Ownership")
    territory_match: dict[str, str] | None = msgspec.field(default=None, name="Territory Match")


class Song(_Base):
    """A song found in a recording."""

    title: str
    artists: str
    start_time: float
    end_time: float
    license_status: str
    license_checks: LicenseChecks = msgspec.field(default_factory=LicenseChecks)
    license_data: LicenseData = msgspec.field(default_factory=LicenseData)
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


class SoundRecording(_Base):
    """An uploaded recording and its songs."""

    created_at: dt.datetime
    updated_at: dt.datetime
    download_url: str = msgspec.field(name="downloadURL")
    upload_file_name: str
    license_status: str
    status: str
    songs_confirmed_at: dt.datetime | None = None
    songs: list[Song] = []


class EntryField(_Base):
    """An answer to a signup field."""

    signup_field_id: int
    value: str | list[str] | None = None
    key: str | None = None


class Entry(_Base):
    """A participant's entry."""

    id: int
    name: str
    email: str | None = None
    fields: list[EntryField] = []
    sound_recording: SoundRecording | None = None


DECODER = msgspec.json.Decoder(list[Entry])
"""A reusable decoder for an entries answer."""
