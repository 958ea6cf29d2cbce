"""Run every ``benchmarks/bench_*.py`` in its own interpreter and summarise the figures.

Each script runs in a subprocess (so imports, memory and event loops never interfere)
and writes ``benchmarks/results/<name>.json`` (``bench_decode.py`` -> ``decode.json``).
This collects them, prints one summary table and writes ``results/summary.json``.
Exits non-zero when a script fails or writes no fresh result; a missed target, and the
instruction trend against ``baseline/instructions.json``, are reported, not failures.

    python benchmarks/run_all.py [--quick] [--only NAME ...]

``--quick`` sets ``BENCH_QUICK=1`` for every script (fewer sizes and repeats).
``--only decode`` (or ``bench_decode``) runs just that script; repeat it for several.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import _harness as h

HERE = Path(__file__).resolve().parent
SCRIPT_TIMEOUT = 900.0


def scripts() -> list[Path]:
    """Every benchmark script, in name order."""
    return sorted(HERE.glob("bench_*.py"))


def short(path: Path) -> str:
    """``bench_decode.py`` -> ``decode``."""
    return path.stem.removeprefix("bench_")


def figures_of(name: str, result: dict[str, Any]) -> list[dict[str, Any]]:
    """A result's ``summary`` rows, or (for scripts without one) its numeric ``*ratio*`` leaves."""
    if isinstance(result.get("summary"), list):
        return [{"bench": name, **row} for row in result["summary"]]
    rows: list[dict[str, Any]] = []

    def walk(value: Any, path: str) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                walk(item, f"{path}.{key}" if path else str(key))
        elif isinstance(value, int | float) and not isinstance(value, bool) and "ratio" in path:
            rows.append({"bench": name, "figure": path, "value": value, "unit": "x"})

    walk(result, "")
    return rows


def run(script: Path, quick: bool) -> dict[str, Any]:
    """Run one script; report its status, time and (fresh) result."""
    name = short(script)
    result_path = h.RESULTS_DIR / f"{name}.json"
    env = {**os.environ, "BENCH_QUICK": "1" if quick else "0"}
    print(f"\n>>> {script.name}{' (quick)' if quick else ''}", flush=True)
    started = time.time()
    try:
        proc = subprocess.run([sys.executable, str(script)], env=env, timeout=SCRIPT_TIMEOUT)
        status = "ok" if proc.returncode == 0 else f"exit {proc.returncode}"
    except subprocess.TimeoutExpired:
        status = f"timeout after {SCRIPT_TIMEOUT:.0f} s"
    elapsed = time.time() - started
    result = None
    if result_path.exists() and result_path.stat().st_mtime >= started:
        result = json.loads(result_path.read_text())
    elif status == "ok":
        status = f"no fresh {result_path.name}"
    return {"bench": name, "status": status, "seconds": round(elapsed, 1), "result": result}


def main() -> int:
    """Run the selected scripts; print the summary; return the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer sizes and repeats")
    parser.add_argument("--only", action="append", metavar="NAME", help="run only this benchmark")
    args = parser.parse_args()
    selected = scripts()
    if args.only:
        wanted = {n.removeprefix("bench_").removesuffix(".py") for n in args.only}
        unknown = wanted - {short(s) for s in selected}
        if unknown:
            parser.error(f"unknown benchmark(s): {', '.join(sorted(unknown))}")
        selected = [s for s in selected if short(s) in wanted]
    started = time.time()
    runs = [run(script, args.quick) for script in selected]
    rows = [row for r in runs if r["result"] for row in figures_of(r["bench"], r["result"])]

    print("\n\n==== summary (ratios are medians against a baseline of the same run) ====")
    print(
        h.format_table(
            ("bench", "figure", "value", "unit", "target", "status"),
            (
                [r["bench"], r["figure"], r["value"], r.get("unit"), r.get("target"), r.get("met")]
                for r in rows
            ),
        )
    )
    print()
    print(
        h.format_table(
            ("bench", "status", "seconds"), ([r["bench"], r["status"], r["seconds"]] for r in runs)
        )
    )
    missed = [r for r in rows if r.get("met") is False]
    failed = [r for r in runs if r["status"] != "ok"]
    total = time.time() - started
    print(
        f"\n{len(runs)} scripts in {total:.0f} s; {len(failed)} failed; {len(missed)} targets missed"
    )
    h.RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    (h.RESULTS_DIR / "summary.json").write_text(
        json.dumps(
            {
                "quick": args.quick,
                "seconds": round(total, 1),
                "machine": h.machine_info(),
                "scripts": [{k: r[k] for k in ("bench", "status", "seconds")} for r in runs],
                "figures": rows,
            },
            indent=2,
        )
        + "\n"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
