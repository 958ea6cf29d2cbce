"""Decode + structure of entry lists: the SDK against orjson alone, msgspec and pydantic.

Payloads: 100, 1,000 and 10,000 entries of 5 songs each, grown from the published
examples (``_payloads.entries_json``). Every candidate parses the same bytes fully:

* ``orjson``   ``orjson.loads(body)`` - the floor, ratio 1.0
* ``sdk``      ``svc_async.converter.structure(orjson.loads(body), list[Entry])``
* ``msgspec``  ``msgspec.json.Decoder(list[Entry]).decode(body)`` (``peers/msgspec_models``)
* ``pydantic`` ``TypeAdapter(list[Entry]).validate_json(body)`` (``peers/pydantic_models``)

Ratios are medians against the orjson median of the same size, interleaved round-robin.
At 1,000 entries the SDK also decodes the same entries in today's shapes
(``_payloads.live_entries``: every key present, 13 checks, numeric ``svcMixId``, null
licence data, manual-status objects), which the peers' models do not accept.
The collector is on while timing (production conditions; the SDK leaves it alone unless
the user sets ``converter.wrap_structuring``); at 1,000 entries a second pass with it paused for every candidate
gives the pure-CPU ratios, and a third without the ``gc.collect()`` between samples
gives the steady state, where each candidate pays the collections of its own garbage. A cProfile of the SDK pass at 1,000 entries names where its
time goes.

    python benchmarks/bench_decode.py [--quick]
"""

from __future__ import annotations

import cProfile
import pstats
from collections.abc import Callable
from typing import Any

import _harness as h
import _payloads
import orjson
from peers import msgspec_models, pydantic_models

from svc_async.converter import structure
from svc_async.models import Entry

SONGS = 5
TARGET_SIZE = 1000
TARGET_SDK = 2.5
PROFILE_LINES = 12


def candidates(body: bytes) -> dict[str, Callable[[], Any]]:
    """The four decoders, each a no-argument callable over ``body``."""
    return {
        "orjson": lambda: orjson.loads(body),
        "sdk": lambda: structure(orjson.loads(body), list[Entry]),
        "msgspec": lambda: msgspec_models.DECODER.decode(body),
        "pydantic": lambda: pydantic_models.ENTRIES.validate_json(body),
    }


def check_same(body: bytes, count: int) -> None:
    """Every candidate gives ``count`` entries with the same song titles (a sanity check)."""
    titles = {
        name: [s.title for e in fn()[:3] if e.sound_recording for s in e.sound_recording.songs]
        for name, fn in candidates(body).items()
        if name != "orjson"
    }
    assert len({tuple(t) for t in titles.values()}) == 1, titles
    assert all(len(fn()) == count for fn in candidates(body).values())


def profile_sdk(body: bytes) -> dict[str, Any]:
    """cProfile of the SDK's decode + structure: top functions by own time, in %."""
    profiler = cProfile.Profile()
    for _ in range(3):
        profiler.runcall(lambda: structure(orjson.loads(body), list[Entry]))
    stats = pstats.Stats(profiler)
    total = stats.total_tt  # type: ignore[attr-defined]
    rows = []
    for (filename, line, func), (_, calls, tottime, cumtime, _) in stats.stats.items():  # type: ignore[attr-defined]
        rows.append(
            {
                "function": func,
                "where": f"{filename.rsplit('/', 1)[-1]}:{line}",
                "calls": calls // 3,
                "self_pct": round(100 * tottime / total, 1),
                "cum_pct": round(100 * cumtime / total, 1),
            }
        )
    rows.sort(key=lambda r: -r["self_pct"])
    return {"entries": TARGET_SIZE, "top_self_time": rows[:PROFILE_LINES]}


def main() -> None:
    """Measure every size, print the table, write results/decode.json."""
    quick = h.is_quick()
    plan = [(100, 20, 3), (1000, 3, 3)] if quick else [(100, 30, 9), (1000, 4, 7), (10000, 1, 3)]
    sizes: list[dict[str, Any]] = []
    summary = []
    for count, number, repeats in plan:
        body = _payloads.entries_json(count, SONGS)
        check_same(body, count)
        cases = {name: h.timed(fn, number) for name, fn in candidates(body).items()}
        stats = h.compare(cases, repeats=repeats, warmup=1)
        floor = stats["orjson"].median
        ratios = {name: h.ratio(s.median, floor) for name, s in stats.items()}
        sizes.append(
            {
                "entries": count,
                "body_bytes": len(body),
                "calls_per_sample": number,
                "repeats": repeats,
                "ratio_to_orjson": ratios,
                "sdk_vs_pydantic": h.ratio(stats["sdk"].median, stats["pydantic"].median),
                "sdk_vs_msgspec": h.ratio(stats["sdk"].median, stats["msgspec"].median),
                "timings": {name: s.as_dict() for name, s in stats.items()},
            }
        )
        for name in ("sdk", "msgspec", "pydantic"):
            target, met = None, None
            if name == "sdk" and count == TARGET_SIZE:
                target, met = f"<= {TARGET_SDK}", ratios["sdk"] <= TARGET_SDK
            summary.append(
                h.figure(f"{name} / orjson @{count}", ratios[name], target=target, met=met)
            )
        if count == TARGET_SIZE:
            off = h.compare(cases, repeats=repeats, warmup=0, gc_on=False)
            floor_off = off["orjson"].median
            sizes[-1]["gc_off"] = {
                "ratio_to_orjson": {n: h.ratio(s.median, floor_off) for n, s in off.items()},
                "timings": {n: s.as_dict() for n, s in off.items()},
            }
            for name in ("sdk", "msgspec", "pydantic"):
                value = h.ratio(off[name].median, floor_off)
                summary.append(h.figure(f"{name} / orjson @{count} (gc off)", value))
            steady = h.compare(cases, repeats=repeats, warmup=1, collect=False)
            floor_steady = steady["orjson"].median
            sizes[-1]["steady_state"] = {
                "ratio_to_orjson": {n: h.ratio(s.median, floor_steady) for n, s in steady.items()},
                "timings": {n: s.as_dict() for n, s in steady.items()},
            }
            for name in ("sdk", "msgspec", "pydantic"):
                value = h.ratio(steady[name].median, floor_steady)
                summary.append(h.figure(f"{name} / orjson @{count} (steady, no collect)", value))
            summary.append(
                h.figure(
                    f"sdk / pydantic @{count} (steady, no collect)",
                    h.ratio(steady["sdk"].median, steady["pydantic"].median),
                )
            )
        vs_pyd = sizes[-1]["sdk_vs_pydantic"]
        target, met = ("< 1", vs_pyd < 1) if count == TARGET_SIZE else (None, None)
        summary.append(h.figure(f"sdk / pydantic @{count}", vs_pyd, target=target, met=met))
        summary.append(
            h.figure(f"orjson.loads @{count}", floor * 1000, unit="ms (floor, absolute)")
        )
    live = _payloads.live_entries_json(TARGET_SIZE, SONGS)
    live_cases = {
        "orjson": h.timed(lambda: orjson.loads(live), 3),
        "sdk": h.timed(lambda: structure(orjson.loads(live), list[Entry]), 3),
    }
    live_stats = h.compare(live_cases, repeats=7, warmup=1)
    live_ratio = h.ratio(live_stats["sdk"].median, live_stats["orjson"].median)
    summary.append(h.figure(f"sdk / orjson @{TARGET_SIZE} (live shapes)", live_ratio))
    sizes.append(
        {
            "entries": TARGET_SIZE,
            "shapes": "live",
            "ratio_to_orjson": {"sdk": live_ratio},
            "timings": {n: s.as_dict() for n, s in live_stats.items()},
        }
    )
    profile = profile_sdk(_payloads.entries_json(TARGET_SIZE, SONGS))
    h.write_result(
        "decode",
        {"songs_per_entry": SONGS, "sizes": sizes, "sdk_profile": profile, "summary": summary},
    )
    print("\nSDK profile (decode + structure, 1,000 entries), top self time:")
    print(
        h.format_table(
            ("function", "where", "calls", "self %", "cum %"),
            (
                [r["function"], r["where"], r["calls"], r["self_pct"], r["cum_pct"]]
                for r in profile["top_self_time"]
            ),
        )
    )


if __name__ == "__main__":
    main()
