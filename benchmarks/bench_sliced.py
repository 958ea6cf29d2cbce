"""Throughput of big entries answers, sliced against one-shot, at concurrency 4 and 32.

The server is ``bench_stall.py``'s (another process, 127.0.0.1). Two answers: event 461
(461 entries, 2.1 MB) and season 1,000 (1,000 entries of the ``large`` shape, 4.5 MB).
Candidates, one long-lived ``Client(rate_limit=False)``, switched per sample:

* ``one-shot``: no stream decoder, the body read whole, one ``orjson.loads`` and one
  ``structure(..., list[Entry])`` (``bench_stall.set_mode("before")``);
* ``sliced``: the entries calls' ``StreamDecode`` (what ships), which at these sizes and
  concurrencies decodes and structures every answer in slices.

Each sample is a fixed number of calls through ``concurrency`` workers; the two
candidates alternate round-robin (``_harness.compare``). The figure is sliced throughput
/ one-shot throughput (one-shot seconds per call / sliced seconds per call), target
>= 0.95: slicing may cost at most 5%.

    python benchmarks/bench_sliced.py [--quick]
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import _harness as h
import bench_stall as stall

from svc_async import Client
from svc_async._pipeline import incremental as _incremental

ANSWERS = {  # label: (entries call, id)
    "461 entries": ("for_event", stall.THROUGHPUT_ENTRIES),
    "1,000 entries": ("for_season", stall.season_id("large", 1000)),
}
CONCURRENCY = (4, 32)
TARGET = 0.95


def _sampler(
    loop: asyncio.AbstractEventLoop,
    svc: Client,
    answer: tuple[str, int],
    mode: str,
    calls: int,
    conc: int,
) -> h.Sample:
    """One sample: ``calls`` calls for ``answer`` at ``conc`` with the decoder ``mode``."""
    method, ident = answer

    def fetch() -> Any:
        return getattr(svc.entries, method)(ident)

    def sample() -> float:
        stall.set_mode(mode)
        try:
            return loop.run_until_complete(h.run_calls(fetch, calls, conc))
        finally:
            stall.set_mode("after")

    return sample


def measure(base: str, quick: bool) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every (answer, concurrency) case, both candidates round-robin."""
    rows: list[dict[str, Any]] = []
    summary: list[dict[str, Any]] = []
    repeats = 3 if quick else 7
    loop = asyncio.new_event_loop()
    svc = Client(base, token=stall.TOKEN, rate_limit=False)
    try:
        loop.run_until_complete(svc.entries.for_event(1))  # hooks generated, pool open
        for label, answer in ANSWERS.items():
            for conc in CONCURRENCY:
                calls = conc * (1 if quick else 3)
                cases = {
                    mode: _sampler(loop, svc, answer, mode, calls, conc)
                    for mode in ("before", "after")
                }
                stats = h.compare(cases, repeats=repeats, warmup=1)
                value = h.ratio(stats["before"].median, stats["after"].median)
                rows.append(
                    {
                        "answer": label,
                        "call": f"entries.{answer[0]}({answer[1]})",
                        "concurrency": conc,
                        "calls_per_sample": calls,
                        "repeats": repeats,
                        "one_shot": stats["before"].as_dict(),
                        "sliced": stats["after"].as_dict(),
                        "ratio": value,
                    }
                )
                summary.append(
                    h.figure(
                        f"{label} c={conc}: sliced throughput / one-shot",
                        value,
                        target=f">= {TARGET}",
                        met=value >= TARGET,
                    )
                )
                print(
                    f"  {label} c={conc}: one-shot {1e3 * stats['before'].median:.1f} ms/call,"
                    f" sliced {1e3 * stats['after'].median:.1f} ms/call, ratio {value}",
                    flush=True,
                )
    finally:
        loop.run_until_complete(svc.aclose())
        loop.close()
    return rows, summary


def main() -> None:
    """Start bench_stall's server, measure, write results/sliced.json."""
    quick = h.is_quick()
    with h.ServerProcess(str(Path(stall.__file__).resolve())) as base:
        rows, summary = measure(base, quick)
    h.write_result(
        "sliced",
        {
            "server": "bench_stall.py --serve (aiohttp, separate process, 127.0.0.1)",
            "baseline": "one-shot: no stream decoder (orjson.loads + structure of the body)",
            "threshold_bytes": _incremental.STREAM_THRESHOLD,
            "slice_bytes": _incremental.SLICE_BYTES,
            "cases": rows,
            "summary": summary,
        },
    )


if __name__ == "__main__":
    main()
