"""The fake's in-memory data: organisations, seasons, events, entries, jobs, licences.

Plain mutable records and one ``State`` holding them with id counters and the
visibility rule (an account sees its root organisations and all their descendants).
Nothing here does I/O or knows about HTTP.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs

__all__ = [
    "Account",
    "Entry",
    "Event",
    "Job",
    "Org",
    "OutputFile",
    "Recording",
    "Season",
    "ServiceLicence",
    "SignupField",
    "State",
]

JSON = dict[str, Any]


@attrs.define(kw_only=True)
class Account:
    """A user account: static bearer tokens and API keys that act for some root orgs.

    The account sees every organisation in ``org_ids`` and all their descendants.
    ``api_keys`` maps key id to secret (exchanged at ``/api/auth/api-key/login``).
    """

    name: str
    org_ids: tuple[int, ...]
    tokens: tuple[str, ...] = ()
    api_keys: dict[str, str] = attrs.field(factory=dict)


@attrs.define(kw_only=True)
class Org:
    """An organisation node of the tree."""

    id: int
    name: str
    parent_id: int | None
    created_at: float
    updated_at: float
    is_event_producer: bool = True
    logo: JSON | None = None


@attrs.define(kw_only=True)
class SignupField:
    """A signup question; ``key`` is shown on entry fields, null in listings."""

    id: int
    question: str
    type: str = "shortAnswer"
    options: list[str] = attrs.field(factory=list)
    order: int = 0
    is_required: bool = True
    description: str = ""
    key: str | None = None


@attrs.define(kw_only=True)
class Season:
    """A season of an organisation; its entries are those of its events plus its own."""

    id: int
    organisation_id: int
    title: str
    start: float
    end: float
    is_locked: bool = False
    invite_url: str | None = None
    signup_fields: list[SignupField] = attrs.field(factory=list)


@attrs.define(kw_only=True)
class Event:
    """An event of an organisation in one territory, optionally part of a season."""

    id: int
    organisation_id: int
    title: str
    territory: str | None
    start: float
    end: float
    invite_token: str
    season_id: int | None = None
    is_locked: bool = False
    signup_fields: list[SignupField] = attrs.field(factory=list)


@attrs.define(kw_only=True)
class Recording:
    """A sound recording; ``songs`` are wire-format dicts (relative file links)."""

    id: int
    file_key: str
    upload_file_name: str
    created_at: float
    updated_at: float
    songs_confirmed_at: float | None
    status: str = "Complete"
    songs: list[JSON] = attrs.field(factory=list)
    md5_hash: str | None = None


@attrs.define(kw_only=True)
class Entry:
    """A participant's entry to an event (or directly to a season)."""

    id: int
    name: str
    email: str | None
    fields: list[JSON] = attrs.field(factory=list)
    recording: Recording | None = None
    event_id: int | None = None
    season_id: int | None = None


@attrs.define(kw_only=True)
class ServiceLicence:
    """A licence held by the service for an email address.

    ``svc_ids`` are the catalogue songs it covers; None covers every song.
    """

    ref: str
    email: str
    svc_ids: frozenset[str] | None
    date_purchased: float
    valid_to: float
    territories: tuple[str, ...]
    file_key: str


@attrs.define(kw_only=True)
class OutputFile:
    """A VOD job's output file (a muted mp3), made after the job is Processed.

    It is Pending at the job's finish, Processing ``lag / 2`` later and Completed
    ``lag`` later; ``callback_url`` is POSTed the output-file object when Completed.
    """

    id: int
    key: str
    operation: str = "Mute"
    file_type: str = "Audio"
    callback_url: str | None = None
    lag: float = 1.0


@attrs.define(kw_only=True)
class Job:
    """A verification job: the accepted request plus its precomputed outcome.

    ``finish_at`` is when processing ends on the fake clock; the job then shows
    ``final_status`` (Processed, or Completed in legacy mode, or Errored) and, when
    processed, its recording; ``submitted_at`` is when the claimant submitted it.
    ``announced`` names the notices already sent (``final``, ``output``).
    """

    id: int
    request: JSON
    organisation_id: int
    created_at: float
    finish_at: float
    recording_id: int
    final_status: str = "Processed"
    error_message: str = ""
    recording: Recording | None = None
    type: str = "Routine"
    claimed: bool = False
    submitted_at: float | None = None
    output: OutputFile | None = None
    edit_token: str = ""
    announced: set[str] = attrs.field(factory=set)


@attrs.define
class State:
    """Every record of the fake, with id counters and the visibility rule."""

    orgs: dict[int, Org] = attrs.field(factory=dict)
    seasons: dict[int, Season] = attrs.field(factory=dict)
    events: dict[int, Event] = attrs.field(factory=dict)
    entries: dict[int, Entry] = attrs.field(factory=dict)
    jobs: dict[int, Job] = attrs.field(factory=dict)
    licences: list[ServiceLicence] = attrs.field(factory=list)
    accounts: list[Account] = attrs.field(factory=list)
    _counters: dict[str, int] = attrs.field(factory=dict)

    def next_id(self, kind: str, start: int = 1) -> int:
        """Allocate the next id of ``kind`` (ids are per kind, increasing)."""
        value = self._counters.get(kind, start - 1) + 1
        self._counters[kind] = value
        return value

    def descendants(self, roots: Iterable[int]) -> set[int]:
        """``roots`` (those that exist) and every organisation below them."""
        children: dict[int | None, list[int]] = {}
        for org in self.orgs.values():
            children.setdefault(org.parent_id, []).append(org.id)
        seen: set[int] = set()
        stack = [r for r in roots if r in self.orgs]
        while stack:
            oid = stack.pop()
            if oid in seen:
                continue
            seen.add(oid)
            stack.extend(children.get(oid, []))
        return seen

    def visible_orgs(self, account: Account) -> set[int]:
        """Ids of every organisation ``account`` may see."""
        return self.descendants(account.org_ids)

    def season_entries(self, season_id: int) -> list[Entry]:
        """Entries of a season: those of its events plus those filed on it directly."""
        event_ids = {e.id for e in self.events.values() if e.season_id == season_id}
        return [
            entry
            for entry in self.entries.values()
            if entry.season_id == season_id or entry.event_id in event_ids
        ]

    def licences_for(self, email: str | None) -> list[ServiceLicence]:
        """Service-held licences of ``email`` (case-insensitive)."""
        if not email:
            return []
        wanted = email.strip().lower()
        return [lic for lic in self.licences if lic.email.lower() == wanted]
