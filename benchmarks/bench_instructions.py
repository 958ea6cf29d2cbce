"""Instructions per call, counted by valgrind: the SDK against the typed ceiling, and the trend.

Timings on a shared 2-core machine move by several percent from run to run; instruction
counts do not. Each candidate runs in a fresh client process under ``valgrind
--tool=callgrind --instr-atstart=no`` against ``bench_throughput``'s canned asyncio server
(another process). The client starts, warms up (hooks generated, pool open) and collects
garbage uninstrumented; ``vgdb`` then turns instrumentation on for exactly the measured
calls and off after them, so callgrind's ``I refs`` / calls is the client's instructions
per call, start-up, warm-up and shutdown not counted. ``PYTHONHASHSEED=0`` fixes string
hashes: two counts of the same code agree within about 0.5%.

Candidates (``CASES``), small ``jobs.get`` (one VerificationJob) at concurrency 32:
``aiohttp`` (raw aiohttp + orjson, no SDK code: the machine's reference),
``aiohttp+structure`` (the same + the SDK's ``structure``: the typed ceiling), ``sdk``
(``rate_limit=False``), ``sdk+pacing`` (the default client, pacing on) and ``sdk+metrics``
(the same with ``metrics=`` an OpenTelemetry SDK ``MeterProvider`` with a reader: its
cost is the figure ``metrics on / off``, ``sdk+metrics`` over ``sdk+pacing``, the
target at most ``METRICS_COST`` more) and ``sdk+metrics[api]`` (``metrics=True`` with
no SDK configured: the API's no-op meters, so the SDK's own cost without the
OpenTelemetry SDK's recording); and the big
answer ``entries.for_event`` of 461 entries (2.1 MB) at concurrency 4, for its typed
ceiling (``structure`` into ``list[Entry]``) and ``sdk``. Figures, for each SDK candidate:
its ceiling's instructions / its own (1.0 = the ceiling, the same direction as the
throughput ratio) and its own instructions over the ceiling. Instructions are not time
(cache misses, system calls and waits cost time, not instructions): ``bench_paired.py``
measures the time ratios.

The trend: ``baseline/instructions.json`` holds the committed instructions per call of
every candidate, with the Python, machine and package versions they were counted with.
Each candidate running SDK code (all but ``aiohttp``) is printed against its committed
figure, as a trend rather than a gate: ``TOLERANCE`` (2%) is the band two counts of the
same code stay within, so a move beyond it is real (``costlier`` / ``cheaper``), one
within it ``steady``; a costlier candidate up to 4% over is counted once again and shown
on the mean of both counts. Nothing fails on a trend: a change that costs instructions is
judged by what it buys, in the commit that makes it (the knots of the call path each
carry their own figure). When the versions differ from the baseline's, or ``aiohttp``'s
own count moved by more than 2% (another build of Python, another CPU), absolute counts
mean nothing: the script says so and trends ratios instead, each SDK candidate's
instructions / its ceiling's, and the small ceiling's / ``aiohttp``'s, against the
committed ratios (the big ceiling is then only reported). ``--update-baseline`` counts
every candidate twice (``--repeat N`` for more) and rewrites the file with the mean and
spread.

Needs ``valgrind`` (and its ``vgdb``); without it, or with ``--quick``, it records why it
did not run and prints no trend.

``--only NAME`` (repeatable) counts only those candidates and guards nothing: a quick
look at one figure, such as ``--only sdk+pacing --only sdk+metrics``.

    python benchmarks/bench_instructions.py [--quick] [--update-baseline] [--repeat N]
        [--only NAME ...]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import gc
import json
import os
import re
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import _harness as h
import bench_throughput as bt

HERE = Path(__file__).resolve().parent
BASELINE = HERE / "baseline" / "instructions.json"
TOLERANCE = 0.02
"""The band two counts of the same code stay within: a move beyond it is real."""
CALLS = 1000
WARMUP = 300
BIG = "461 entries"
BIG_CALLS = 8
BIG_WARMUP = 4
REFERENCE = "aiohttp"
CANDIDATES = (
    "aiohttp",
    "aiohttp+structure",
    "sdk",
    "sdk+pacing",
    "sdk+metrics",
    "sdk+metrics[api]",
)
METRICS_COST = 0.05
"""``Client(metrics=...)`` may cost at most this much more per small call (the issue's 5%)."""
ENV_PACKAGES = ("aiohttp", "multidict", "yarl", "propcache", "orjson", "attrs", "cattrs")
"""Versions that change the counts; with any of them different, ratios are trended."""


@dataclass(frozen=True)
class Case:
    """How one candidate is counted."""

    body: str
    """``small`` or a key of ``bench_throughput.CANNED_ENTRIES``."""
    call: str
    """The candidate's name in ``Clients.small()`` or ``Clients.entries()``."""
    concurrency: int
    warmup: int
    calls: int
    ceiling: str | None
    """The case its ratio is taken against (None: it is a ceiling or the reference)."""


CASES: dict[str, Case] = {
    **{
        name: Case(
            "small",
            name,
            32,
            WARMUP,
            CALLS,
            None if name in (REFERENCE, "aiohttp+structure") else "aiohttp+structure",
        )
        for name in CANDIDATES
    },
    f"aiohttp+structure, {BIG}": Case(BIG, "aiohttp+structure", 4, BIG_WARMUP, BIG_CALLS, None),
    f"sdk, {BIG}": Case(BIG, "sdk", 4, BIG_WARMUP, BIG_CALLS, f"aiohttp+structure, {BIG}"),
}


# ------------------------------------------------------------------ the measured process


def _handshake(message: str) -> None:
    """Tell the parent ``message``; wait for its go (polling stdin, so that vgdb reaches
    valgrind's gdbserver even where it may not ptrace the process)."""
    print(message, flush=True)
    while not select.select([sys.stdin], [], [], 0.05)[0]:
        pass
    sys.stdin.readline()


async def _client(name: str, base: str) -> None:
    """Warm up and collect uninstrumented, then the measured calls between two handshakes."""
    case = CASES[name]
    clients = await bt.Clients(base).__aenter__()
    try:
        calls_of = clients.small() if case.body == "small" else clients.entries(case.body)
        call = calls_of[case.call]
        await h.run_calls(call, case.warmup, case.concurrency)
        gc.collect()
        _handshake(f"ready {os.getpid()}")
        await h.run_calls(call, case.calls, case.concurrency)
        _handshake("done")
    finally:
        await clients.__aexit__(None, None, None)


# ------------------------------------------------------------------ counting


def _expect(proc: subprocess.Popen[str], word: str) -> str:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith(word):
        raise RuntimeError(f"client said {line!r}, expected {word!r} (see its stderr)")
    return line


def _go(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None
    proc.stdin.write("go\n")
    proc.stdin.flush()


def _instrument(prefix: str, pid: int, state: str) -> None:
    """Callgrind's ``instrumentation on|off`` through vgdb; returns once it is applied."""
    done = subprocess.run(
        ["vgdb", f"--vgdb-prefix={prefix}", f"--pid={pid}", "instrumentation", state],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode != 0:
        raise RuntimeError(f"vgdb instrumentation {state} failed:\n{done.stderr[-2000:]}")


def count(name: str, base: str) -> float:
    """Instructions per call of candidate ``name``: one valgrind run, measured calls only."""
    with tempfile.TemporaryDirectory() as tmp:
        prefix, log = f"{tmp}/vgdb", Path(tmp) / "valgrind.log"
        command = [
            "valgrind",
            "--tool=callgrind",
            "--instr-atstart=no",
            f"--vgdb-prefix={prefix}",
            f"--callgrind-out-file={tmp}/callgrind.out",
            f"--log-file={log}",
            sys.executable,
            __file__,
            "--client",
            name,
            base,
        ]
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        with subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
        ) as proc:
            try:
                pid = int(_expect(proc, "ready").split()[1])
                _instrument(prefix, pid, "on")
                _go(proc)
                _expect(proc, "done")
                _instrument(prefix, pid, "off")
                _go(proc)
                proc.wait(timeout=300)
            except BaseException:
                proc.kill()
                raise
        text = log.read_text()
    if proc.returncode != 0:
        raise RuntimeError(f"{name} under valgrind failed:\n{text[-2000:]}")
    found = re.search(r"I\s+refs:\s+([\d,]+)", text)
    if found is None:
        raise RuntimeError(f"no instruction count in valgrind's output:\n{text[-2000:]}")
    return int(found.group(1).replace(",", "")) / CASES[name].calls


# ------------------------------------------------------------------ the trend


def environment() -> dict[str, Any]:
    """What the counts depend on besides the code: interpreter, machine, packages."""
    info = h.machine_info()
    packages = {}
    for package in ENV_PACKAGES:
        try:
            packages[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            packages[package] = None
    return {
        "python": info["python"],
        "implementation": info["implementation"],
        "machine": info["machine"],
        "packages": packages,
    }


def _flat(env: dict[str, Any]) -> dict[str, Any]:
    return {**{k: v for k, v in env.items() if k != "packages"}, **env.get("packages", {})}


def _ratios(per_call: dict[str, float]) -> dict[str, float]:
    """Each trended case's instructions / its ceiling's (the small ceiling's / aiohttp's)."""
    out = {}
    for name, case in CASES.items():
        against = case.ceiling or (REFERENCE if case.body == "small" else None)
        if name != REFERENCE and against in per_call and name in per_call:
            out[name] = per_call[name] / per_call[against]
    return out


def mode_of(per_call: dict[str, float], baseline: dict[str, Any]) -> tuple[str, list[str]]:
    """``absolute`` or ``ratio``, and why ratios are trended."""
    ours, theirs = _flat(environment()), _flat(baseline["env"])
    why = [f"{k} {theirs.get(k)} -> {v}" for k, v in ours.items() if theirs.get(k) != v]
    committed = baseline["candidates"].get(REFERENCE, {}).get("instructions_per_call")
    if not why and committed and REFERENCE in per_call:
        moved = per_call[REFERENCE] / committed - 1
        if abs(moved) > TOLERANCE:
            why.append(f"{REFERENCE} itself moved {moved:+.1%} (another build or CPU)")
    return ("ratio" if why else "absolute"), why


def guard(per_call: dict[str, float], baseline: dict[str, Any], mode: str) -> list[dict[str, Any]]:
    """One row per trended candidate: value (now / committed) and its trend in words."""
    ratios = _ratios(per_call)
    rows = []
    for name, case in CASES.items():
        if name == REFERENCE or name not in per_call:
            continue
        committed = baseline["candidates"].get(name)
        row: dict[str, Any] = {"candidate": name, "value": None, "status": "no baseline"}
        if committed is None:
            pass
        elif any(committed.get(k) != v for k, v in asdict(case).items()):
            row["status"] = "method changed: run --update-baseline"
        elif mode == "absolute":
            row["value"] = per_call[name] / committed["instructions_per_call"]
        elif name in ratios and committed.get("ratio") is not None:
            row["value"] = ratios[name] / committed["ratio"]
        else:
            row["status"] = "reported only (ratio mode)"
        if row["value"] is not None:
            row["status"] = _trend(row["value"])
        rows.append(row)
    return rows


def _trend(value: float) -> str:
    """A count against its committed figure, in words: beyond the noise band or not."""
    if value > 1 + TOLERANCE:
        return "costlier"
    return "cheaper" if value < 1 - TOLERANCE else "steady"


def git_state() -> dict[str, Any]:
    """The commit counted and whether svc_async had changes not committed."""

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", *args], cwd=HERE, capture_output=True, text=True, timeout=30
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--", "../svc_async")
    return {"commit": commit, "svc_async_clean": None if status is None else status == ""}


def write_baseline(counts: dict[str, list[float]]) -> None:
    """Rewrite ``baseline/instructions.json`` from ``counts``."""
    per_call = {name: statistics.mean(values) for name, values in counts.items()}
    ratios = _ratios(per_call)
    version = subprocess.run(["valgrind", "--version"], capture_output=True, text=True).stdout
    document = {
        "about": "Committed instructions per call for bench_instructions.py's trend; rewrite"
        " with `python benchmarks/bench_instructions.py --update-baseline`",
        "taken": dt.date.today().isoformat(),
        **git_state(),
        "tolerance": TOLERANCE,
        "env": environment(),
        "counter": f"{version.strip()} --tool=callgrind, PYTHONHASHSEED=0",
        "candidates": {
            name: {
                **asdict(CASES[name]),
                "instructions_per_call": round(per_call[name]),
                "counts": [round(v) for v in values],
                "spread": round((max(values) - min(values)) / per_call[name], 5),
                "ratio": round(ratios[name], 5) if name in ratios else None,
            }
            for name, values in counts.items()
        },
    }
    BASELINE.parent.mkdir(parents=True, exist_ok=True)
    BASELINE.write_text(json.dumps(document, indent=2) + "\n")
    print(f"baseline written to {BASELINE}")


# ------------------------------------------------------------------ main


def figures(per_call: dict[str, float]) -> list[dict[str, Any]]:
    """Each SDK candidate against its ceiling."""
    summary: list[dict[str, Any]] = []
    for name, case in CASES.items():
        if case.ceiling is None or name not in per_call or case.ceiling not in per_call:
            continue
        ceiling = per_call[case.ceiling]
        label = "small c=32" if case.body == "small" else f"{case.body} c={case.concurrency}"
        short = name.split(",")[0]
        summary += [
            h.figure(
                f"{label}: (aiohttp+structure) / {short}, instructions per call",
                ceiling / per_call[name],  # informative: the floors are bench_paired's, in time
            ),
            h.figure(
                f"{label}: {short} instructions over the ceiling",
                (per_call[name] - ceiling) / 1000,
                unit="k",
            ),
        ]
    for name in ("sdk+metrics", "sdk+metrics[api]"):
        if name in per_call and "sdk+pacing" in per_call:
            ratio = per_call[name] / per_call["sdk+pacing"]
            summary.append(
                h.figure(
                    f"small c=32: metrics on / off ({name} / sdk+pacing), instructions per call",
                    ratio,
                    target=f"<= {1 + METRICS_COST}",
                    met=ratio <= 1 + METRICS_COST,
                )
            )
    return summary


def measure(
    repeat: int, baseline: dict[str, Any] | None
) -> tuple[dict[str, list[float]], str, list[str], list[dict[str, Any]]]:
    """Count every candidate ``repeat`` times and trend them; a borderline costlier one is counted again."""
    counts: dict[str, list[float]] = {name: [] for name in CASES}
    with h.ServerProcess(bt.__file__, "--serve-canned") as base:
        for _ in range(repeat):
            for name in CASES:
                counts[name].append(count(name, base))
                print(f"  {name}: {counts[name][-1]:,.0f} instructions per call", flush=True)
        if baseline is None:
            return counts, "none", ["no baseline file"], []
        per_call = {name: statistics.mean(values) for name, values in counts.items()}
        mode, why = mode_of(per_call, baseline)
        rows = guard(per_call, baseline, mode)
        failing = [  # a borderline failure is counted again; a clear one is not
            row["candidate"]
            for row in rows
            if row["status"] == "costlier" and row["value"] <= 1 + 2 * TOLERANCE
        ]
        for name in failing:
            counts[name].append(count(name, base))
            print(f"  {name}, again: {counts[name][-1]:,.0f}", flush=True)
    if failing:
        per_call = {name: statistics.mean(values) for name, values in counts.items()}
        rows = guard(per_call, baseline, mode)
    return counts, mode, why, rows


def _only(names: list[str], repeat: int) -> int:
    """Count ``names`` only and print their figures (nothing guarded, nothing written)."""
    counts: dict[str, list[float]] = {name: [] for name in dict.fromkeys(names)}
    with h.ServerProcess(bt.__file__, "--serve-canned") as base:
        for _ in range(repeat):
            for name in counts:
                counts[name].append(count(name, base))
                print(f"  {name}: {counts[name][-1]:,.0f} instructions per call", flush=True)
    per_call = {name: statistics.mean(values) for name, values in counts.items()}
    for row in figures(per_call):
        print(f"{row}")
    return 0


def main() -> int:
    """Count every candidate, print each against the baseline; write results/instructions.json."""
    if sys.argv[1:2] == ["--client"]:
        asyncio.run(_client(sys.argv[2], sys.argv[3]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="skip (counting is slow)")
    parser.add_argument(
        "--update-baseline", action="store_true", help=f"rewrite {BASELINE.name} from this run"
    )
    parser.add_argument("--repeat", type=int, help="counts per candidate (default 1; 2 to update)")
    parser.add_argument(
        "--only", action="append", choices=list(CASES), help="count only these; guard nothing"
    )
    args = parser.parse_args()
    missing = [tool for tool in ("valgrind", "vgdb") if shutil.which(tool) is None]
    reason = f"{' and '.join(missing)} not found" if missing else None
    if reason is None and h.is_quick() and not args.update_baseline:
        reason = "full runs only (about 20 s per candidate)"
    if reason is not None:
        h.write_result("instructions", {"skipped": reason, "trend": "not run", "summary": []})
        return 0
    if args.only:
        return _only(args.only, args.repeat or 1)
    baseline = None
    if not args.update_baseline and BASELINE.exists():
        baseline = json.loads(BASELINE.read_text())
    repeat = args.repeat or (2 if args.update_baseline else 1)
    counts, mode, why, rows = measure(repeat, baseline)
    per_call = {name: statistics.mean(values) for name, values in counts.items()}
    summary = figures(per_call)
    what = "instructions per call" if mode == "absolute" else "ratio to its ceiling"
    summary += [
        h.figure(
            f"trend ({mode}): {row['candidate']}, {what} / committed ({row['status']})",
            row["value"],
        )
        for row in rows
        if row["value"] is not None
    ]
    stale = [row for row in rows if "method" in row["status"]]
    h.write_result(
        "instructions",
        {
            "server": "canned asyncio server in a separate process on 127.0.0.1",
            "cases": {name: asdict(case) for name, case in CASES.items()},
            "instructions_per_call": {k: round(v) for k, v in per_call.items()},
            "counts": {k: [round(v) for v in values] for k, values in counts.items()},
            "trend": {
                "baseline": str(BASELINE.relative_to(HERE.parent)),
                "mode": mode,
                "why_ratio": why if mode != "absolute" else [],
                "tolerance": TOLERANCE,
                "rows": rows,
                "stale": [row["candidate"] for row in stale],
            },
            "summary": summary,
        },
    )
    if mode == "ratio":
        print("trending ratios to the ceilings, not counts: " + "; ".join(why))
    if args.update_baseline:
        write_baseline(counts)
    elif baseline is None:
        print(f"no {BASELINE.name}: no trend (write one with --update-baseline)")
    for row in rows:
        value = f"{row['value']:.4f}x the committed figure" if row["value"] else "no figure"
        print(f"trend: {row['candidate']}: {value}, {row['status']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
