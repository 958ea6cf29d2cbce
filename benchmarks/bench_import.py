"""Import time of ``svc_async`` against ``aiohttp`` alone, each in fresh interpreters.

Wall time of ``python -c "import X"`` for X in (nothing, aiohttp, svc_async), run
round-robin, medians. The figure is the ratio of *added* time::

    (t(svc_async) - t(pass)) / (t(aiohttp) - t(pass))        target <= 1.3

``python -X importtime`` then lists the modules ``import svc_async`` loads beyond those
``import aiohttp`` loads, by self time (median over a few runs), so the slowest can be
deferred or dropped.

    python benchmarks/bench_import.py [--quick]
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from typing import Any

import _harness as h

TARGET = 1.3
TOP = 10
STATEMENTS = {"pass": "pass", "aiohttp": "import aiohttp", "svc_async": "import svc_async"}


def _run(code: str, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *flags, "-c", code], capture_output=True, text=True, check=True
    )


def wall(code: str) -> float:
    """Seconds for one fresh interpreter running ``code``."""
    start = time.perf_counter()
    _run(code)
    return time.perf_counter() - start


def self_times(module: str) -> dict[str, int]:
    """``-X importtime`` self time (microseconds) of every module ``import module`` loads."""
    out: dict[str, int] = {}
    for line in _run(f"import {module}", "-X", "importtime").stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, _, name = line[len("import time:") :].split("|")
        out[name.strip()] = int(self_us)
    return out


def main() -> None:
    """Measure, write results/import.json."""
    quick = h.is_quick()
    repeats = 5 if quick else 15
    for code in STATEMENTS.values():  # warm the file cache and bytecode
        _run(code)
    samples: dict[str, list[float]] = {name: [] for name in STATEMENTS}
    for _ in range(repeats):
        for name, code in STATEMENTS.items():
            samples[name].append(wall(code))
    med = {name: statistics.median(v) for name, v in samples.items()}
    added_aiohttp = med["aiohttp"] - med["pass"]
    added_svc = med["svc_async"] - med["pass"]
    ratio = h.ratio(added_svc, added_aiohttp)

    runs = 3 if quick else 7
    aiohttp_modules = set().union(*(self_times("aiohttp") for _ in range(2)))
    svc_runs = [self_times("svc_async") for _ in range(runs)]
    extra = {name for run in svc_runs for name in run} - aiohttp_modules
    top: list[dict[str, Any]] = sorted(
        (
            {
                "module": name,
                "self_ms": round(statistics.median(r.get(name, 0) for r in svc_runs) / 1000, 2),
            }
            for name in extra
        ),
        key=lambda row: -row["self_ms"],
    )
    added_total = round(sum(row["self_ms"] for row in top), 1)
    by_package: dict[str, float] = {}
    for row in top:
        package = row["module"].split(".")[0]
        by_package[package] = round(by_package.get(package, 0.0) + row["self_ms"], 2)
    by_package = dict(sorted(by_package.items(), key=lambda kv: -kv[1]))
    summary = [
        h.figure(
            "added import time: svc_async / aiohttp",
            ratio,
            target=f"<= {TARGET}",
            met=ratio <= TARGET,
        ),
        h.figure("python -c pass", med["pass"] * 1000, unit="ms"),
        h.figure("import aiohttp (added)", added_aiohttp * 1000, unit="ms"),
        h.figure("import svc_async (added)", added_svc * 1000, unit="ms"),
        h.figure("self time of modules beyond aiohttp's", added_total, unit="ms (-X importtime)"),
    ]
    h.write_result(
        "import",
        {
            "repeats": repeats,
            "wall_s": {name: [round(s, 5) for s in v] for name, v in samples.items()},
            "median_s": {name: round(v, 5) for name, v in med.items()},
            "ratio_added": ratio,
            "modules_beyond_aiohttp": len(extra),
            "top_modules_beyond_aiohttp": top[:TOP],
            "self_ms_beyond_aiohttp_by_package": by_package,
            "summary": summary,
        },
    )
    print(f"\ntop {TOP} modules svc_async adds beyond aiohttp (self time, -X importtime):")
    print(h.format_table(("module", "self ms"), ([r["module"], r["self_ms"]] for r in top[:TOP])))
    print("\nby top-level package:")
    print(h.format_table(("package", "self ms"), by_package.items()))


if __name__ == "__main__":
    main()
