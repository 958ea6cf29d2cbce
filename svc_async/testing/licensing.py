"""Songs, licence checks and licence statuses: how the fake derives a verdict.

Pure functions over wire-format dicts. The rules, deliberately simple and documented so
tests can aim at an outcome:

* A song licensed by the service (a ``ServiceLicence`` of the job's email covering the
  song) gets licence source ``Service`` with an ``svcLicense``; every check is Accepted
  except ``Valid Date`` (Rejected when the licence ends before the job's end date) and
  ``Territory Match`` (Rejected for required territories the licence does not cover).
* Otherwise, when the job carries ``licenseDetails``, the first one applies: source as
  given (default ``Other``) with an ``externalLicense`` listing its files. If any file
  URL contains ``reject`` the ``Licensee Name Match`` check is Rejected and the rest
  Unknown; if one contains ``pending`` all checks are Unknown; else all are Accepted.
* Otherwise the source is ``Pending License`` with every check Unknown.

A song is Licensed when every check (and every territory) is Accepted, Unverified when
any is Rejected or when it has no licence at all (``Pending License``), and Pending
otherwise. A recording is Licensed when all its songs are, Partially Licensed when some
are, Pending when none is but some song is Pending, and Unverified otherwise (including
a recording without songs).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .clock import format_timestamp

if TYPE_CHECKING:
    from .state import ServiceLicence

JSON = dict[str, Any]

CHECK_NAMES: tuple[str, ...] = (
    "Licensee Name Match",
    "License Source Matches",
    "Title Matches",
    "Artists Match",
    "Master Choreography Rights",
    "Master Adaptation Rights",
    "Master Duplication Rights",
    "Publishing Choreography Rights",
    "Publishing Adaptation Rights",
    "Publishing Duplication Rights",
    "Publishing Arrangement Rights",
    "Valid Date",
    "Full Ownership",
)
"""Every check except Territory Match (13 today; legacy answers lack the Arrangement one)."""

ARRANGEMENT_CHECK = "Publishing Arrangement Rights"
"""The check today's published types added; absent from the published examples."""

MASTER_CHECKS: frozenset[str] = frozenset(
    {"Master Choreography Rights", "Master Adaptation Rights", "Master Duplication Rights"}
)
"""Checks absent from the verification job answers of the published examples (legacy mode);
today's service sends all 13 checks in job answers too."""

_CATALOGUE_BASE: tuple[tuple[str, str, int | None, str | None], ...] = (
    ("Spice Girl", "Jaewynn", None, "Max Music Ltd"),
    ("Going My Way", "Will Young", 2003, "Sony BMG Music Entertainment"),
    ("Start a Fire", "Who's Molly?", None, None),
    ("Lay Down Sally (Live)", "Eric Clapton", 2020, "Black Barn Music"),
    ("Neon Skyline", "The Midnight Relay", 2019, "Northbound Records"),
    ("Run the Floor", "Kayla Brooks", 2021, "Pulse Audio"),
    ("Golden Hour Anthem", "Rivers & Rye", 2018, ""),
    ("Turn It Up (Cheer Mix)", "DJ Spirit", 2022, "Spirit Mixes"),
    ("Higher Ground", "Atlas Echo", 2017, "Echo Chamber Music"),
    ("Electric Heartbeat", "Nova Lane", 2023, "Bright Lights Ltd"),
    ("Stand Tall", "The Pyramid Kids", 2016, None),
    ("Breakaway Beat", "Mira Sol", 2020, "Sunset Sound"),
    ("Victory Lap", "Coach Carter Band", 2015, "Champion Records"),
    ("Fly With Me", "Skylar Quinn", 2024, "Altitude Music"),
    ("Stomp Clap Repeat", "Rhythm Union", 2019, "Union Beats"),
    ("Custom Song For Tigers", "Harry Wilson", 2024, ""),
)


def _hex(seed: str, n: int) -> str:
    return hashlib.sha256(seed.encode()).hexdigest()[:n]


def build_catalogue(seed: int) -> list[JSON]:
    """The songs the fake "recognises" in audio: metadata only, deterministic per seed."""
    out: list[JSON] = []
    for i, (title, artists, year, label) in enumerate(_CATALOGUE_BASE):
        key = f"{seed}:{title}"
        out.append(
            {
                "title": title,
                "artists": artists,
                "svcMixId": 40000 + 7 * i if i % 3 == 1 else None,
                "svcId": _hex("svc" + key, 24),
                "composer": artists if i % 4 == 3 else None,
                "isrc": f"GB{_hex('isrc' + key, 3).upper()}{2000 + i:04d}{i:03d}"[:12]
                if i % 2 == 0
                else None,
                "iswc": None,
                "publisher": None if i % 3 else "N/A",
                "recordLabel": label,
                "tunecode": None,
                "yearOfRelease": year,
                "upc": str(int(_hex("upc" + key, 10), 16))[:13] if i % 5 == 0 else None,
                "length": 20 + (int(_hex("len" + key, 4), 16) % 140),
            }
        )
    return out


def file_token(secret: bytes, key: str) -> str:
    """The ``t`` token of a licence file link (HMAC of the file key)."""
    return hmac.new(secret, key.encode(), hashlib.sha256).hexdigest()[:40]


def song_status(checks: JSON, source: str) -> str:
    """Licence status of one song from its checks and licence source (rules above)."""
    values = [v for k, v in checks.items() if k != "Territory Match"]
    values.extend(checks.get("Territory Match", {}).values())
    if "Rejected" in values:
        return "Unverified"
    if all(v == "Accepted" for v in values):
        return "Licensed"
    return "Unverified" if source == "Pending License" else "Pending"


def recording_status(songs: Sequence[JSON]) -> str:
    """Aggregate licence status of a recording from its songs (rules above)."""
    statuses = [s["licenseStatus"] for s in songs]
    if not statuses:
        return "Unverified"
    if all(s == "Licensed" for s in statuses):
        return "Licensed"
    if "Licensed" in statuses:
        return "Partially Licensed"
    if "Pending" in statuses:
        return "Pending"
    return "Unverified"


def make_checks(
    default: str,
    territories: dict[str, str],
    *,
    overrides: dict[str, str] | None = None,
    include_master: bool = True,
) -> JSON:
    """A LicenseChecks object: every check ``default`` unless overridden."""
    checks: JSON = {
        name: (overrides or {}).get(name, default)
        for name in CHECK_NAMES
        if include_master or name not in MASTER_CHECKS
    }
    checks["Territory Match"] = dict(territories)
    return checks


def make_song(
    meta: JSON,
    *,
    start: int,
    checks: JSON,
    source: str,
    svc_license: JSON | None = None,
    external_license: JSON | None = None,
) -> JSON:
    """A wire-format Song from catalogue metadata, checks and licence data."""
    song = {k: v for k, v in meta.items() if k != "length"}
    song["endTime"] = start + int(meta["length"])
    song["startTime"] = start
    ordered = {k: song[k] for k in ("title", "artists", "endTime", "startTime")}
    ordered.update({k: v for k, v in song.items() if k not in ordered})
    ordered["manualStatus"] = None
    ordered["licenseStatus"] = song_status(checks, source)
    ordered["licenseChecks"] = checks
    ordered["licenseData"] = {
        "bespokeAgreement": None,
        "licenseSource": source,
        "svcLicense": svc_license,
        "externalLicense": external_license,
        "publicDomainProof": None,
    }
    return ordered


def svc_license_json(lic: ServiceLicence, path: str) -> JSON:
    """The ``svcLicense`` object of a service-held licence (``downloadURL`` relative)."""
    return {
        "ref": lic.ref,
        "datePurchased": format_timestamp(lic.date_purchased),
        "validTo": format_timestamp(lic.valid_to),
        "downloadURL": path,
        "rights": [{"name": "Standard", "variant": "1 Year"}],
        "territories": list(lic.territories),
    }


def external_checks(urls: Sequence[str], territories: Sequence[str], *, master: bool) -> JSON:
    """Checks for a song covered by external licence files (``reject``/``pending`` rule)."""
    lowered = [u.lower() for u in urls]
    if any("reject" in u for u in lowered):
        return make_checks(
            "Unknown",
            dict.fromkeys(territories, "Unknown"),
            overrides={"Licensee Name Match": "Rejected"},
            include_master=master,
        )
    if any("pending" in u for u in lowered):
        return make_checks("Unknown", dict.fromkeys(territories, "Unknown"), include_master=master)
    return make_checks("Accepted", dict.fromkeys(territories, "Accepted"), include_master=master)


def service_checks(
    territories: Sequence[str],
    *,
    licence_territories: Sequence[str],
    valid: bool,
    master: bool,
) -> JSON:
    """Checks for a song covered by a service-held licence."""
    terr = {t: "Accepted" if t in licence_territories else "Rejected" for t in territories}
    overrides = None if valid else {"Valid Date": "Rejected"}
    return make_checks("Accepted", terr, overrides=overrides, include_master=master)


def pick_songs(catalogue: Sequence[JSON], audio_url: str) -> list[JSON]:
    """1 to 3 distinct catalogue songs, chosen by a hash of the audio URL."""
    digest = hashlib.sha256(audio_url.encode()).digest()
    count = 1 + digest[0] % 3
    chosen: list[JSON] = []
    for byte in digest[1:]:
        song = catalogue[byte % len(catalogue)]
        if song not in chosen:
            chosen.append(song)
        if len(chosen) == count:
            break
    return chosen
