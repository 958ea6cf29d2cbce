"""What tests add to the fake's world: accounts, organisations, seasons, events,
entries and service-held licences. A mixin of ``FakeService``."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .clock import parse_timestamp
from .resources.entries import render_entry
from .seed import BASE_TIME, add_service_licence, make_recording, standard_fields
from .state import Account, Entry, Event, Org, Season, SignupField
from .today import dress_recording

if TYPE_CHECKING:
    from .core import ServiceCore
    from .files import FileStore
    from .state import State
    from .webhooks import WebhookDispatcher

JSON = dict[str, Any]
_YEAR = 365 * 86400.0


def _ts(value: float | str | None, default: float) -> float:
    if value is None:
        return default
    if isinstance(value, str):
        parsed = parse_timestamp(value)
        if parsed is None:
            raise ValueError(f"not a timestamp: {value!r}")
        return parsed
    return float(value)


class Builders:
    """Adding accounts, organisations, seasons, events, entries and licences."""

    seed: int
    state: State
    files: FileStore
    catalogue: list[JSON]
    core: ServiceCore
    base_url: str | None
    _webhooks: WebhookDispatcher

    def now(self) -> float:  # pragma: no cover - provided by FakeService
        raise NotImplementedError

    def _announce_entry(self, entry: Entry) -> JSON:
        """POST the entry-update webhook (``{entry, eventId}`` or ``{entry, seasonId}``,
        the full entry) to ``webhook_url`` when one is set; returns the payload."""
        base = self.base_url or "http://fake.invalid"
        rendered = render_entry(self.core, entry, base=base, now=self.now())
        payload: JSON = {"entry": rendered}
        if entry.event_id is not None:
            payload["eventId"] = entry.event_id
        else:
            payload["seasonId"] = entry.season_id
        if self._webhooks.url:
            self._webhooks.post(self._webhooks.url, payload)
        return payload

    def add_account(
        self,
        name: str,
        org_ids: Sequence[int],
        *,
        token: str | None = None,
        api_key: tuple[str, str] | None = None,
    ) -> Account:
        """Add an account acting for ``org_ids`` (and their descendants)."""
        account = Account(
            name=name,
            org_ids=tuple(org_ids),
            tokens=(token,) if token else (),
            api_keys=dict([api_key]) if api_key else {},
        )
        self.state.accounts.append(account)
        return account

    def add_org(
        self,
        name: str,
        parent_id: int | None = None,
        *,
        is_event_producer: bool = True,
        logo: JSON | None = None,
    ) -> int:
        """Add an organisation under ``parent_id`` (None: a new root); returns its id."""
        if parent_id is not None and parent_id not in self.state.orgs:
            raise ValueError(f"no organisation {parent_id}")
        now = self.now()
        org = Org(
            id=self.state.next_id("org"),
            name=name,
            parent_id=parent_id,
            created_at=now,
            updated_at=now,
            is_event_producer=is_event_producer,
            logo=logo,
        )
        self.state.orgs[org.id] = org
        return org.id

    def add_season(
        self,
        org_id: int,
        title: str,
        *,
        start: float | str | None = None,
        end: float | str | None = None,
        signup_fields: bool = True,
        invite_url: str | None = None,
    ) -> int:
        """Add a season (with the standard signup questions by default); returns its id."""
        if org_id not in self.state.orgs:
            raise ValueError(f"no organisation {org_id}")
        begin = _ts(start, BASE_TIME)
        season = Season(
            id=self.state.next_id("season"),
            organisation_id=org_id,
            title=title,
            start=begin,
            end=_ts(end, begin + 180 * 86400),
            invite_url=invite_url,
            signup_fields=standard_fields(self.state) if signup_fields else [],
        )
        self.state.seasons[season.id] = season
        return season.id

    def add_event(
        self,
        org_id: int,
        title: str,
        *,
        territory: str | None = "GB",
        season_id: int | None = None,
        start: float | str | None = None,
        end: float | str | None = None,
        signup_fields: bool = True,
        multiple_select: Sequence[str] | None = None,
    ) -> int:
        """Add an event; returns its id.

        Asks the division/externalId/ageGroup questions by default; ``multiple_select``
        adds a ``styles`` multipleSelect question with those options. ``territory=None``
        is an event whose venue is not set yet.
        """
        if org_id not in self.state.orgs:
            raise ValueError(f"no organisation {org_id}")
        if season_id is not None and season_id not in self.state.seasons:
            raise ValueError(f"no season {season_id}")
        begin = _ts(start, BASE_TIME)
        event_id = self.state.next_id("event")
        fields = standard_fields(self.state) if signup_fields else []
        if multiple_select:
            fields.append(
                SignupField(
                    id=self.state.next_id("signup_field", 30),
                    question="Which styles does your routine include?",
                    type="multipleSelect",
                    options=list(multiple_select),
                    order=len(fields),
                    is_required=False,
                    key="styles",
                )
            )
        event = Event(
            id=event_id,
            organisation_id=org_id,
            title=title,
            territory=territory,
            start=begin,
            end=_ts(end, begin),
            invite_token=hashlib.sha256(f"{self.seed}:event:{event_id}".encode()).hexdigest()[:32],
            season_id=season_id,
            signup_fields=fields,
        )
        self.state.events[event.id] = event
        return event.id

    def _questions(self, entry: Entry) -> tuple[list[SignupField], list[str]]:
        if entry.event_id is not None:
            event = self.state.events[entry.event_id]
            return event.signup_fields, [event.territory] if event.territory else []
        assert entry.season_id is not None
        return self.state.seasons[entry.season_id].signup_fields, ["GB"]

    def _answers(
        self, questions: list[SignupField], fields: Mapping[str, str | list[str]]
    ) -> list[JSON]:
        by_key = {q.key: q for q in questions if q.key}
        out: list[JSON] = []
        for key, value in fields.items():
            if key not in by_key:
                raise ValueError(f"no signup field with key {key!r}; known: {sorted(by_key)}")
            out.append({"value": value, "signupFieldId": by_key[key].id, "key": key})
        return out

    def _recording(
        self, entry: Entry, scenario: str | Sequence[str], territories: list[str]
    ) -> Any:
        now = self.now()
        rec = make_recording(
            self.state,
            self.files,
            self.catalogue,
            scenario,
            territories=territories,
            email=entry.email or "unknown@team.example",
            created=now,
            updated=now,
            name=entry.name,
        )
        if not self.core.flavour.legacy:
            dress_recording(rec, self.files)
        return rec

    def add_entry(
        self,
        event_id: int | None = None,
        *,
        season_id: int | None = None,
        name: str = "Test Team",
        email: str | None = "coach@team.example",
        fields: Mapping[str, str | list[str]] | None = None,
        recording: str | Sequence[str] | None = None,
    ) -> int:
        """Add an entry to an event (or directly to a season); returns its id.

        ``fields`` maps signup-field keys to answers (a list for multipleSelect).
        ``recording`` is a scenario (see ``seed``: licensed, other, bespoke,
        pending_license, rejected, territory, partial, failed), a list of per-song
        scenarios, or None for no recording; it is stamped ``updatedAt`` = now.
        The service announces a new entry as it announces a changed one: the
        entry-update webhook (``{entry, eventId}`` or ``{entry, seasonId}``) goes to
        ``webhook_url`` when one is set (see ``update_entry``).
        """
        if (event_id is None) == (season_id is None):
            raise ValueError("give exactly one of event_id and season_id")
        entry = Entry(id=0, name=name, email=email, event_id=event_id, season_id=season_id)
        questions, territories = self._questions(entry)
        entry.fields = self._answers(questions, fields or {})
        if recording is not None:
            entry.recording = self._recording(entry, recording, territories)
        entry.id = self.state.next_id("entry", 200)
        self.state.entries[entry.id] = entry
        self._announce_entry(entry)
        return entry.id

    def add_service_licence(
        self,
        email: str,
        *,
        svc_ids: Sequence[str] | None = None,
        territories: Sequence[str] = ("GB", "US", "IE", "CA", "AU", "NZ"),
        valid_to: float | str | None = None,
    ) -> str:
        """Make the service hold a licence for ``email`` (None ``svc_ids``: every song).

        Jobs created afterwards with that email get those songs licensed by the service;
        returns the licence ref.
        """
        now = self.now()
        licence = add_service_licence(
            self.state,
            email=email,
            svc_ids=svc_ids,
            territories=territories,
            date_purchased=now - 30 * 86400,
            valid_to=_ts(valid_to, now + _YEAR),
        )
        return licence.ref
