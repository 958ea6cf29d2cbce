"""pydantic v2 models of the entry shapes: frozen, camelCase aliases, irregular keys named."""

from __future__ import annotations

import datetime as dt
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter
from pydantic.alias_generators import to_camel


class _Base(BaseModel):
    """Frozen, camelCase JSON aliases; unknown keys ignored (pydantic's defaults otherwise)."""

    model_config = ConfigDict(frozen=True, alias_generator=to_camel, populate_by_name=True)


class LicenseRight(_Base):
    """A right of a service-held licence."""

    name: str
    variant: str | None = None


class SvcLicense(_Base):
    """A licence held by the service."""

    ref: str
    date_purchased: dt.datetime | None = None
    valid_to: dt.datetime | None = None
    download_url: str | None = Field(default=None, alias="downloadURL")
    rights: list[LicenseRight] = []
    territories: list[str] = []


class ExternalLicenseFile(_Base):
    """A licence file from another source."""

    id: int
    download_url: str = Field(alias="downloadURL")


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


class LicenseChecks(BaseModel):
    """The licence checks, keyed by names with spaces."""

    model_config = ConfigDict(frozen=True, populate_by_name=True)

    licensee_name_match: str | None = Field(default=None, alias="Licensee Name Match")
    license_source_matches: str | None = Field(default=None, alias="License Source Matches")
    title_matches: str | None = Field(default=None, alias="Title Matches")
    artists_match: str | None = Field(default=None, alias="Artists Match")
    master_choreography_rights: str | None = Field(default=None, alias="Master Choreography Rights")
    master_adaptation_rights: str | None = Field(default=None, alias="Master Adaptation Rights")
    master_duplication_rights: str | None = Field(default=None, alias="Master Duplication Rights")
    publishing_choreography_rights: str | None = Field(
        default=None, alias="Publishing Choreography Rights"
    )
    publishing_adaptation_rights: str | None = Field(
        default=None, alias="Publishing Adaptation Rights"
    )
    publishing_duplication_rights: str | None = Field(
        default=None, alias="Publishing Duplication Rights"
    )
    valid_date: str | None = Field(default=None, alias="Valid Date")
    full_ownership: str | None = Field(default=None, alias="Full Ownership")
    territory_match: dict[str, str] | None = Field(default=None, alias="Territory Match")


class Song(_Base):
    """A song found in a recording."""

    title: str
    artists: str
    start_time: float
    end_time: float
    license_status: str
    license_checks: LicenseChecks = Field(default_factory=LicenseChecks)
    license_data: LicenseData = Field(default_factory=LicenseData)
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
    download_url: str = Field(alias="downloadURL")
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


ENTRIES = TypeAdapter(list[Entry])
"""Validates an entries answer: ``ENTRIES.validate_json(body)``."""
