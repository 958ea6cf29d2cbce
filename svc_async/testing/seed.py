"""Seeded, realistic demo data and the builders tests use to add their own.

``seed_demo`` fills a ``State`` with a national federation, three regions with two clubs
each, three seasons, twelve events in GB/IE/US/CA/AU/NZ with 5-12 entries each, and
verification jobs; recordings cover every licence state. The same seed gives the same
data (timestamps are fixed, starting 2024-09-01). Entries of a season are those of the
events that belong to it (events carry a season id internally).

Song scenarios accepted by ``make_recording`` (one per song):

* ``licensed`` / ``service``: Licensed through a service-held licence (``svcLicense``);
* ``other``: Licensed through external licence files (source Other);
* ``bespoke``: Pending (source Bespoke Music, checks Unknown);
* ``pending_license``: Unverified (source Pending License, checks Unknown);
* ``rejected``: Unverified with a Rejected ``Licensee Name Match`` (source Other);
* ``territory``: service licence missing the territory: Territory Match Rejected.

And per recording: ``failed`` (status Failed, no songs), ``partial`` (a licensed and a
pending_license song: Partially Licensed).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import random
from collections.abc import Sequence
from typing import Any

import attrs

from .files import FileStore
from .licensing import (
    external_checks,
    make_checks,
    make_song,
    service_checks,
    svc_license_json,
)
from .resources.jobs import create_job
from .state import (
    Account,
    Entry,
    Event,
    Org,
    Recording,
    Season,
    ServiceLicence,
    SignupField,
    State,
)

JSON = dict[str, Any]

__all__ = [
    "BASE_TIME",
    "DEFAULT_API_KEY",
    "DEFAULT_TOKEN",
    "REGION_API_KEY",
    "REGION_TOKEN",
    "SCENARIOS",
    "make_recording",
    "seed_demo",
    "standard_fields",
]

BASE_TIME = dt.datetime(2024, 9, 1, tzinfo=dt.UTC).timestamp()
"""Demo data timestamps start here (2024-09-01T00:00:00Z)."""

DEFAULT_TOKEN = "test-token"
DEFAULT_API_KEY = ("test-key", "test-secret")
REGION_TOKEN = "region-token"
REGION_API_KEY = ("region-key", "region-secret")

SCENARIOS: tuple[str, ...] = (
    "licensed",
    "other",
    "bespoke",
    "pending_license",
    "rejected",
    "territory",
    "partial",
    "failed",
)
"""Every recording scenario; the first event's entries cover them all."""

_DAY = 86400.0

_REGIONS = (
    ("UK & Ireland Region", ("Manchester Mavericks Cheer", "Dublin Dance Academy")),
    ("North America Region", ("Texas Thunder Allstars", "Toronto Tumble Co.")),
    ("Asia Pacific Region", ("Sydney Spirit Allstars", "Auckland Apex Dance")),
)

# (title, org index (0 root, 1-3 regions, 4-9 clubs), territory, season index or None)
_EVENTS = (
    ("National Championship Finals 2024", 0, "GB", 0),
    ("Manchester Spring Open", 4, "GB", 1),
    ("Dublin Dance Fest", 5, "IE", 1),
    ("Belfast Cheer Classic", 1, "GB", 1),
    ("Texas Thunder Showdown", 6, "US", 2),
    ("Toronto Winter Cup", 7, "CA", 2),
    ("Chicago Spirit Championship", 2, "US", 2),
    ("Sydney Harbour Cheer Open", 8, "AU", 0),
    ("Auckland Dance Nationals", 9, "NZ", 0),
    ("Asia Pacific Grand Prix", 3, "AU", 0),
    ("Cork Summer Showcase", 5, "IE", None),
    ("Vancouver Pom Invitational", 7, "CA", None),
)

_TEAMS = (
    "Tigers",
    "Leopards",
    "Wildcats",
    "Firebirds",
    "Storm",
    "Velocity",
    "Blaze",
    "Aurora",
    "Phoenix",
    "Lightning",
    "Comets",
    "Sapphires",
    "Diamonds",
    "Rebels",
    "Titans",
    "Jaguars",
    "Starlights",
    "Vipers",
    "Hurricanes",
    "Royals",
)
_LEVELS = ("Jr", "Sr", "Open", "Youth", "Elite", "Mini", "Coed")
_AGE = {"Jr": "Juniors", "Mini": "Juniors", "Youth": "Juniors", "Sr": "Seniors"}


def _hex(text: str, n: int = 32) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:n]


def standard_fields(state: State) -> list[SignupField]:
    """The division / externalId / ageGroup questions most events ask."""
    return [
        SignupField(
            id=state.next_id("signup_field", 30),
            question="Which division are you entering?",
            type="singleSelect",
            options=["Group", "Duo", "Solo"],
            order=0,
            key="division",
        ),
        SignupField(
            id=state.next_id("signup_field", 30),
            question="Please enter your participant ID",
            order=1,
            key="externalId",
        ),
        SignupField(
            id=state.next_id("signup_field", 30),
            question="Age group",
            type="singleSelect",
            options=["Juniors", "Seniors", "Open"],
            order=2,
            key="ageGroup",
        ),
    ]


def add_service_licence(
    state: State,
    *,
    email: str,
    svc_ids: Sequence[str] | None,
    territories: Sequence[str],
    date_purchased: float,
    valid_to: float,
) -> ServiceLicence:
    """Store a licence the service holds for ``email`` (None ``svc_ids``: every song)."""
    n = len(state.licences) + 1
    ref = _hex(f"licence:{n}:{email}")
    licence = ServiceLicence(
        ref=ref,
        email=email,
        svc_ids=None if svc_ids is None else frozenset(svc_ids),
        date_purchased=date_purchased,
        valid_to=valid_to,
        territories=tuple(territories),
        file_key=f"svc-licenses/{ref}.pdf",
    )
    state.licences.append(licence)
    return licence


@attrs.frozen
class _SongMaker:
    """What the songs of one recording share: the stores, the territories, the entrant."""

    state: State
    files: FileStore
    territories: Sequence[str]
    email: str
    created: float

    def song(self, meta: JSON, scenario: str, start: int) -> JSON:
        """One wire-format song of ``meta`` starting at ``start``, following ``scenario``."""
        if scenario in ("licensed", "service", "territory"):
            return self._service_song(meta, scenario, start)
        if scenario in ("other", "rejected"):
            return self._external_song(meta, scenario, start)
        unknown = make_checks("Unknown", dict.fromkeys(self.territories, "Unknown"))
        if scenario == "bespoke":
            return make_song(meta, start=start, checks=unknown, source="Bespoke Music")
        if scenario == "pending_license":
            return make_song(meta, start=start, checks=unknown, source="Pending License")
        raise ValueError(f"unknown song scenario {scenario!r}; use one of {SCENARIOS}")

    def _service_song(self, meta: JSON, scenario: str, start: int) -> JSON:
        territories = self.territories
        covered = [t for t in territories if scenario != "territory"] or ["AF"]
        lic = add_service_licence(
            self.state,
            email=self.email,
            svc_ids=[meta["svcId"]],
            territories=covered,
            date_purchased=self.created - 30 * _DAY,
            valid_to=self.created + 335 * _DAY,
        )
        checks = service_checks(
            territories, licence_territories=lic.territories, valid=True, master=True
        )
        svc = svc_license_json(lic, self.files.licence_path(lic.file_key))
        return make_song(meta, start=start, checks=checks, source="Service", svc_license=svc)

    def _external_song(self, meta: JSON, scenario: str, start: int) -> JSON:
        url = f"https://licences.example/{'rejected' if scenario == 'rejected' else 'ok'}.pdf"
        path = self.files.licence_path(f"external-licenses/{_hex(url + self.email)}.pdf")
        ext = {
            "id": self.state.next_id("external_licence", 100),
            "sourceName": "Other Platform",
            "files": [{"id": self.state.next_id("licence_file", 100), "downloadURL": path}],
        }
        checks = external_checks([url], self.territories, master=True)
        return make_song(meta, start=start, checks=checks, source="Other", external_license=ext)


def make_recording(
    state: State,
    files: FileStore,
    catalogue: Sequence[JSON],
    scenario: str | Sequence[str],
    *,
    territories: Sequence[str],
    email: str,
    created: float,
    updated: float | None = None,
    name: str = "mix",
    rng: random.Random | None = None,
) -> Recording:
    """A recording whose songs follow ``scenario`` (one name, or one per song)."""
    rng = rng or random.Random(f"{name}:{created}")
    if isinstance(scenario, str):
        scenarios: list[str] = {
            "failed": [],
            "partial": ["licensed", "pending_license"],
        }.get(scenario, [scenario])
    else:
        scenarios = list(scenario)
    maker = _SongMaker(state, files, territories, email, created)
    songs: list[JSON] = []
    start = 0
    metas = rng.sample(list(catalogue), k=min(len(scenarios), len(catalogue)))
    for meta, song_scenario in zip(metas, scenarios, strict=False):
        song = maker.song(meta, song_scenario, start)
        songs.append(song)
        start = int(song["endTime"])
    updated_at = updated if updated is not None else created + 3600.0
    rec_id = state.next_id("recording", 1000)
    safe = "".join(c if c.isalnum() else "_" for c in name).strip("_") or "mix"
    return Recording(
        id=rec_id,
        file_key=f"{_hex(f'{rec_id}:{name}')}.mp3",
        upload_file_name=f"{safe}.mp3",
        created_at=created,
        updated_at=updated_at,
        songs_confirmed_at=None if scenario == "failed" else updated_at,
        status="Failed" if scenario == "failed" else "Complete",
        songs=songs,
    )


def default_accounts(demo: bool) -> list[Account]:
    """The default account (sees everything) and, with demo data, a one-region account."""
    accounts = [
        Account(
            name="default",
            org_ids=(1,),
            tokens=(DEFAULT_TOKEN,),
            api_keys={DEFAULT_API_KEY[0]: DEFAULT_API_KEY[1]},
        )
    ]
    if demo:
        accounts.append(
            Account(
                name="region",
                org_ids=(2,),
                tokens=(REGION_TOKEN,),
                api_keys={REGION_API_KEY[0]: REGION_API_KEY[1]},
            )
        )
    return accounts


def seed_root(state: State) -> Org:
    """The single root organisation of a fake without demo data."""
    org = Org(
        id=state.next_id("org"),
        name="Test Organisation",
        parent_id=None,
        created_at=BASE_TIME,
        updated_at=BASE_TIME,
    )
    state.orgs[org.id] = org
    return org


def _seed_orgs(state: State, rng: random.Random) -> list[Org]:
    """The federation (with a logo), its three regions and their two clubs each."""
    t = BASE_TIME - 400 * _DAY
    root = Org(
        id=state.next_id("org"),
        name="National Cheer & Dance Federation",
        parent_id=None,
        created_at=t,
        updated_at=t + 30 * _DAY,
        logo={
            "id": 7,
            "fileType": "Image",
            "fileName": "federation-logo.png",
            "signedUrl": "https://static.fake.invalid/logos/federation-logo.png",
        },
    )
    state.orgs[root.id] = root
    regions = []
    for i, (region_name, _) in enumerate(_REGIONS):
        ts = t + (i + 1) * 7 * _DAY
        org = Org(
            id=state.next_id("org"),
            name=region_name,
            parent_id=root.id,
            created_at=ts,
            updated_at=ts,
        )
        state.orgs[org.id] = org
        regions.append(org)
    orgs = [root, *regions]
    for i, (_, clubs) in enumerate(_REGIONS):
        for j, club in enumerate(clubs):
            ts = t + (40 + i * 10 + j) * _DAY
            org = Org(
                id=state.next_id("org"),
                name=club,
                parent_id=regions[i].id,
                created_at=ts,
                updated_at=ts + rng.randint(0, 20) * _DAY,
                is_event_producer=j == 0,
            )
            state.orgs[org.id] = org
            orgs.append(org)
    return orgs


_SEASONS = (
    ("2024/25 National Championship Season", 0, True, True),
    ("UK & Ireland Regional Series 2024", 1, True, False),
    ("North America Winter Classic Series", 2, False, False),
)
# (title, org index, has an invite link, asks the standard questions)


def _seed_seasons(state: State, orgs: Sequence[Org]) -> list[Season]:
    seasons = []
    for k, (title, org_index, invite, with_fields) in enumerate(_SEASONS):
        signup: list[SignupField] = []
        if with_fields:
            signup = standard_fields(state)
        elif invite:
            signup = [
                SignupField(
                    id=state.next_id("signup_field", 30),
                    question="Please enter your participant ID",
                    key="externalId",
                )
            ]
        season = Season(
            id=state.next_id("season"),
            organisation_id=orgs[org_index].id,
            title=title,
            start=BASE_TIME + k * 30 * _DAY,
            end=BASE_TIME + (k * 30 + 240) * _DAY,
            invite_url=f"https://fake.invalid/seasons/{k + 1}/invite" if invite else None,
            signup_fields=signup,
        )
        state.seasons[season.id] = season
        seasons.append(season)
    return seasons


@attrs.define
class _EntryMaker:
    """Makes the demo entries of one event after another, with unique team names."""

    state: State
    files: FileStore
    catalogue: Sequence[JSON]
    rng: random.Random
    used_names: set[str] = attrs.field(factory=set)

    def _name(self) -> str:
        rng = self.rng
        name = rng.choice(_TEAMS) + " " + rng.choice(_LEVELS)
        while name in self.used_names:
            name = rng.choice(_TEAMS) + " " + rng.choice(_LEVELS)
        self.used_names.add(name)
        return name

    def make(self, event: Event, scenario: str | None) -> None:
        rng, title = self.rng, event.title
        name = self._name()
        email = f"coach.{name.split()[0].lower()}@{title.split()[0].lower()}-club.example"
        values = {
            "division": rng.choice(("Group", "Group", "Duo", "Solo")),
            "externalId": str(rng.randint(10**8, 10**9 - 1)),
            "ageGroup": _AGE.get(name.split()[-1], "Open"),
        }
        fields = [
            {"value": values[f.key], "signupFieldId": f.id, "key": f.key}
            for f in event.signup_fields
            if f.key is not None
        ]
        created = event.start - rng.randint(3, 20) * _DAY + rng.randint(0, 86399)
        recording = None
        if scenario is not None:
            recording = make_recording(
                self.state,
                self.files,
                self.catalogue,
                scenario,
                territories=[event.territory] if event.territory else [],
                email=email,
                created=created,
                updated=created + rng.randint(60, 5 * 86400),
                name=f"{name} {title.split()[0]} mix",
                rng=rng,
            )
        entry = Entry(
            id=self.state.next_id("entry", 200),
            name=name,
            email=email,
            fields=fields,
            recording=recording,
            event_id=event.id,
        )
        self.state.entries[entry.id] = entry


def _seed_events(
    state: State, maker: _EntryMaker, orgs: Sequence[Org], seasons: Sequence[Season], seed: int
) -> None:
    """The twelve events and their entries (the first covers every scenario)."""
    rng = maker.rng
    for n, (title, org_index, territory, season_index) in enumerate(_EVENTS):
        start = BASE_TIME + (20 + n * 14) * _DAY
        event = Event(
            id=state.next_id("event"),
            organisation_id=orgs[org_index].id,
            title=title,
            territory=territory,
            start=start,
            end=start + rng.choice((0, 1, 2)) * _DAY,
            invite_token=_hex(f"{seed}:invite:{n}"),
            season_id=None if season_index is None else seasons[season_index].id,
            signup_fields=standard_fields(state) if n % 4 != 3 else [],
        )
        state.events[event.id] = event
        count = len(SCENARIOS) + 2 if n == 0 else rng.randint(5, 12)
        for m in range(count):
            if n == 0:
                scenario: str | None = ([*SCENARIOS, None, "licensed"])[m]
            else:
                scenario = rng.choice((*SCENARIOS, "licensed", "other", None))
            maker.make(event, scenario)


def seed_demo(state: State, files: FileStore, catalogue: Sequence[JSON], seed: int) -> None:
    """Fill ``state`` with the demo federation (deterministic for ``seed``)."""
    rng = random.Random(seed)
    orgs = _seed_orgs(state, rng)
    seasons = _seed_seasons(state, orgs)
    _seed_events(state, _EntryMaker(state, files, catalogue, rng), orgs, seasons, seed)
    add_service_licence(
        state,
        email="producer@service.example",
        svc_ids=[s["svcId"] for s in catalogue[::2]],
        territories=("GB", "US", "IE", "CA", "AU", "NZ"),
        date_purchased=BASE_TIME - 60 * _DAY,
        valid_to=BASE_TIME + 5 * 365 * _DAY,
    )


def seed_jobs(
    state: State, files: FileStore, catalogue: Sequence[JSON], *, legacy: bool = False
) -> None:
    """A few finished verification jobs of the root organisation (search demos)."""
    specs = (
        ("https://media.example/mixes/seniors-finals.mp3", ["Sept 2024", "2024", "Seniors"]),
        ("https://media.example/mixes/juniors-finals.mp3", ["Sept 2024", "2024", "Juniors"]),
        ("https://media.example/mixes/seniors-open.wav", ["2024", "Seniors", "Open"]),
        ("https://media.example/mixes/corrupt-upload.mp3", ["2024", "Seniors"]),
    )
    for k, (url, tags) in enumerate(specs):
        request: JSON = {
            "name": "Sample Producer",
            "email": "producer@service.example",
            "requiredTerritories": ["US", "GB"],
            "startDate": "2024-09-01",
            "endDate": "2024-09-04",
            "externalId": str(1234567890 + k),
            "organisationId": 1,
            "audioFileURL": url,
            "tags": tags,
            "licenseDetails": [
                {
                    "licenseSource": "Other",
                    "licenseSourceName": "Other Platform",
                    "licenseFileURLs": ["https://licences.example/TEST_LICENSE.pdf"],
                }
            ]
            if k % 2
            else [],
        }
        job = create_job(
            state,
            files,
            request,
            now=BASE_TIME + 16 * _DAY + k * 3600,
            delay=8.0,
            catalogue=catalogue,
            legacy=legacy,
        )
        job.announced.update(("final", "output"))
