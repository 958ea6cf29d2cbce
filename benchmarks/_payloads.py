"""Realistic entry-list payloads, grown from the service's published examples."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

EXAMPLES = Path(__file__).resolve().parent.parent / "tests" / "fixtures"


def _example(name: str) -> Any:
    return json.loads((EXAMPLES / name).read_text())


def entries(count: int, songs_per_entry: int = 5) -> list[dict[str, Any]]:
    """``count`` entries shaped like get-event-entries, each with ``songs_per_entry`` songs."""
    sample = _example("get-event-entries.response-0.json")
    template = next(e for e in sample if e["soundRecording"])
    song_templates = [
        s
        for name in ("get-event-entries.response-0.json", "get-season-entries.response-0.json")
        for e in _example(name)
        if e["soundRecording"]
        for s in e["soundRecording"]["songs"]
    ]
    out = []
    for i in range(count):
        entry = copy.deepcopy(template)
        entry["id"] = 1000 + i
        entry["name"] = f"Team {i}"
        recording = entry["soundRecording"]
        recording["songs"] = [
            {
                **copy.deepcopy(song_templates[(i + j) % len(song_templates)]),
                "title": f"Song {i}.{j}",
            }
            for j in range(songs_per_entry)
        ]
        out.append(entry)
    return out


def entries_json(count: int, songs_per_entry: int = 5) -> bytes:
    """The same payload as JSON bytes."""
    import orjson

    return orjson.dumps(entries(count, songs_per_entry))


def live_entries(count: int, songs_per_entry: int = 5) -> list[dict[str, Any]]:
    """The same entries in today's shapes: every key present, 13 checks,
    numeric ``svcMixId``, ``md5Hash``, and one song in five not yet checked (null licence
    data and checks) or with a manual status object."""
    out = entries(count, songs_per_entry)
    for i, entry in enumerate(out):
        recording = entry["soundRecording"]
        recording["md5Hash"] = f"{i:032x}"
        for j, song in enumerate(recording["songs"]):
            song["svcMixId"] = 100000 + i * songs_per_entry + j
            checks = song["licenseChecks"]
            checks.setdefault("Publishing Arrangement Rights", "Accepted")
            if (i + j) % 5 == 0:
                song["licenseData"] = song["licenseChecks"] = None
            elif (i + j) % 5 == 1:
                song["manualStatus"] = {"status": "Manually Approved", "details": "checked"}
    return out


def live_entries_json(count: int, songs_per_entry: int = 5) -> bytes:
    """``live_entries`` as JSON bytes."""
    import orjson

    return orjson.dumps(live_entries(count, songs_per_entry))
