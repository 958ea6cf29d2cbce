"""Shared benchmark harness: interleaved timing, medians, results files and tables.

Timing rules, the same for every script:

* Each candidate is a *sample function* returning the seconds one sample took (see
  ``timed`` for plain callables). ``compare`` runs the candidates round-robin, one sample
  each per round, so slow drifts of a noisy machine hit all of them alike; figures are
  then reported as ratios of medians against a baseline measured in the same run.
* ``warmup`` rounds run first and are discarded (imports, caches, code generation).
* Garbage collection: ``gc.collect()`` runs before every sample, and the collector stays
  **enabled** while a sample runs, as it is in production (the SDK never switches it;
  a figure that pauses it through ``converter.wrap_structuring`` says so).
* ``--quick`` on the command line, or ``BENCH_QUICK=1`` in the environment (what
  ``run_all.py --quick`` sets), asks for fewer sizes and repeats.

``write_result(name, data)`` writes ``benchmarks/results/<name>.json`` with machine
information added, and prints the result's ``summary`` rows as a table.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

RESULTS_DIR = Path(__file__).resolve().parent / "results"
GC_POLICY = (
    "gc.collect() before each sample; gc enabled while timing unless a figure says 'gc off'"
    " (the SDK never switches it itself)"
)
PACKAGES = ("svc-async", "aiohttp", "orjson", "attrs", "cattrs", "msgspec", "pydantic", "httpx")

Sample = Callable[[], float]
"""A function that runs one sample and returns the seconds it took."""


def is_quick() -> bool:
    """True for a quick smoke run (``--quick`` or ``BENCH_QUICK=1``)."""
    return "--quick" in sys.argv[1:] or os.environ.get("BENCH_QUICK", "") not in ("", "0")


def timed(fn: Callable[[], Any], number: int = 1) -> Sample:
    """A sample function running ``fn`` ``number`` times; returns seconds per call."""

    def sample() -> float:
        start = time.perf_counter()
        for _ in range(number):
            fn()
        return (time.perf_counter() - start) / number

    return sample


@dataclass(frozen=True)
class Stats:
    """The samples of one candidate, in seconds."""

    samples: tuple[float, ...]

    @property
    def median(self) -> float:
        """Median sample."""
        return statistics.median(self.samples)

    @property
    def best(self) -> float:
        """Fastest sample."""
        return min(self.samples)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready view."""
        return {
            "median_s": round(self.median, 6),
            "min_s": round(self.best, 6),
            "samples_s": [round(s, 6) for s in self.samples],
        }


def compare(
    cases: Mapping[str, Sample],
    *,
    repeats: int,
    warmup: int = 1,
    gc_on: bool = True,
    collect: bool = True,
) -> dict[str, Stats]:
    """Run every case ``warmup + repeats`` times, round-robin; keep the last ``repeats``.

    ``gc_on=False`` pauses the collector during each sample (a pure-CPU comparison).
    ``collect=False`` skips the ``gc.collect()`` before each sample: a steady state in
    which each candidate also pays the collections its own garbage left behind.
    """
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for round_no in range(warmup + repeats):
        for name, case in cases.items():
            if collect:
                gc.collect()
            if not gc_on:
                gc.disable()
            try:
                seconds = case()
            finally:
                gc.enable()
            if round_no >= warmup:
                samples[name].append(seconds)
    return {name: Stats(tuple(values)) for name, values in samples.items()}


def ratio(value: float, baseline: float) -> float:
    """``value / baseline``, rounded for reports."""
    return round(value / baseline, 3) if baseline else float("nan")


def figure(
    name: str, value: float, *, unit: str = "x", target: str | None = None, met: bool | None = None
) -> dict[str, Any]:
    """One row of a result's ``summary``: a named figure, its target and whether it is met."""
    return {"figure": name, "value": round(value, 4), "unit": unit, "target": target, "met": met}


def machine_info() -> dict[str, Any]:
    """Interpreter, platform, CPU count and the versions of the packages involved."""
    versions = {}
    for package in PACKAGES:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "packages": versions,
    }


def format_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A plain-text table with columns padded to fit."""
    text_rows = [[_cell(v) for v in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in text_rows:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in text_rows]
    return "\n".join(lines)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "met" if value else "MISSED"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)


def summary_table(summary: Iterable[Mapping[str, Any]]) -> str:
    """The ``summary`` rows of a result as a table."""
    return format_table(
        ("figure", "value", "unit", "target", "status"),
        ((r["figure"], r["value"], r["unit"], r.get("target"), r.get("met")) for r in summary),
    )


def write_result(name: str, data: Mapping[str, Any]) -> Path:
    """Write ``results/<name>.json`` (machine info and run mode added) and print its table."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"{name}.json"
    document = {
        "benchmark": name,
        "quick": is_quick(),
        "gc_policy": GC_POLICY,
        "machine": machine_info(),
        **data,
    }
    path.write_text(json.dumps(document, indent=2, default=str) + "\n")
    print(f"\n== {name} ==")
    if data.get("summary"):
        print(summary_table(data["summary"]))
    print(f"written to {path}")
    return path


async def announce_and_wait(port: int, lifetime: float) -> None:
    """The child side of ``ServerProcess``: print ``port``, then serve until the parent
    closes stdin, or ``lifetime`` seconds at most (the server always stops by itself)."""
    print(port, flush=True)
    loop = asyncio.get_running_loop()
    await asyncio.wait_for(loop.run_in_executor(None, sys.stdin.read), lifetime)


async def serve_app(app: Any, lifetime: float, *, backlog: int = 128) -> None:
    """Serve an aiohttp ``app`` on a free 127.0.0.1 port as a ``ServerProcess`` child."""
    from aiohttp import web

    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, backlog=backlog)
    await site.start()
    try:
        await announce_and_wait(runner.addresses[0][1], lifetime)
    finally:
        await runner.cleanup()


class ServerProcess:
    """A benchmark's server subprocess (``script --serve``), yielding its base URL.

    The child prints its port on stdout and serves until its stdin closes.
    """

    def __init__(self, script: str, flag: str = "--serve") -> None:
        self.script = script
        self.flag = flag

    def __enter__(self) -> str:
        self.proc = subprocess.Popen(
            [sys.executable, self.script, self.flag], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        assert self.proc.stdout is not None
        port = int(self.proc.stdout.readline())
        return f"http://127.0.0.1:{port}"

    def __exit__(self, *exc: object) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


async def run_calls(call: Callable[[], Awaitable[Any]], calls: int, concurrency: int) -> float:
    """Make ``calls`` calls with ``concurrency`` workers; return seconds per call."""
    left = calls

    async def worker() -> None:
        nonlocal left
        while left > 0:
            left -= 1
            await call()

    loop = asyncio.get_running_loop()
    start = loop.time()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return (loop.time() - start) / calls
