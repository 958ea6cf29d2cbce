"""Paired runs: the SDK against the typed ceiling, both in one process, rounds interleaved.

Unpaired, a throughput ratio moves by about ±0.02 between processes on the shared 2-core
reference machine, which hides a 1 to 2% change. Here the two candidates of a pair run in
one process against one ``bench_throughput`` canned server (an asyncio server in another
process answering from buffers at next to no cost per request, so the figure is the
clients'), sample after sample: A B, B A, A B, ... (the order alternates, so neither always
runs first), ``gc.collect()`` before each sample, one warm-up round discarded. The ratio is
taken per round, ceiling seconds per call / candidate seconds per call (= candidate
throughput / ceiling throughput): a drift of the machine hits both halves of a round alike.
Reported per pair: the median of the per-round ratios, its 95% bounds (order statistics),
the quartiles and range of the ratios; beside it the same ratio in the process's CPU
seconds (against the canned server the two agree; a gap would mean the client waited).
On a loaded box a round's ratio still moves by several percent (the calibration pair
shows how much), so the median needs its rounds: 60 for small calls.

Pairs, each against ``aiohttp+structure`` (raw aiohttp + orjson + the SDK's ``structure``:
the typed ceiling), with the floor on the median each must reach (``floor``):

* small ``jobs.get`` (one VerificationJob) at concurrency 32: ``sdk`` (``rate_limit=False``)
  at >= 0.85 and ``sdk+pacing`` (the default client, pacing on) at >= 0.80;
* big answers, 461 entries (2.1 MB, ``entries.for_event``) and 1,000 entries (4.5 MB,
  ``entries.for_season``), at concurrency 4 and 32: ``sdk`` (``structure`` into
  ``list[Entry]`` for the ceiling) at >= 0.9.

A calibration pair runs the small ceiling against itself: its spread is the method's noise.

    python benchmarks/bench_paired.py [--quick]
"""

from __future__ import annotations

import asyncio
import gc
import math
import statistics
import time
from typing import Any

import _harness as h
import bench_throughput as bt

SMALL_FLOORS = {"sdk": 0.85, "sdk+pacing": 0.80}
"""The floors of small answers: the SDK's own cost per call shows most there."""
BIG_FLOOR = 0.9


def floor(body: str, candidate: str) -> float:
    """The median ratio ``candidate`` must reach on ``body``'s answers (``SMALL`` or a
    key of ``bt.CANNED_ENTRIES``)."""
    return SMALL_FLOORS.get(candidate, BIG_FLOOR) if body == SMALL else BIG_FLOOR


CEILING = "aiohttp+structure"
SMALL = "small"
PAIRS = (  # (body, candidate, concurrency); body: "small" or a key of bt.CANNED_ENTRIES
    (SMALL, CEILING, 32),
    (SMALL, "sdk", 32),
    (SMALL, "sdk+pacing", 32),
    *((label, "sdk", conc) for label in bt.CANNED_ENTRIES for conc in (4, 32)),
)


def plan(body: str, concurrency: int, quick: bool) -> tuple[int, int] | None:
    """Calls per sample and rounds (None: skipped in a quick run).

    Short samples and many rounds: the median then skips the rounds another process
    interrupted (on the loaded reference machine, 250 calls x 60 rounds gave steadier
    medians than 1,000 x 15). Big answers take one call per worker; at concurrency 32
    (1 to 3 s a sample) only 7 rounds, which keeps the whole script near two minutes.
    """
    if body == SMALL:
        return (250, 6) if quick else (250, 60)
    if concurrency > 4:
        return None if quick else (concurrency, 7)
    return (concurrency, 3) if quick else (concurrency, 20)


def paired(
    loop: asyncio.AbstractEventLoop,
    calls_of: dict[str, bt.Call],
    candidate: str,
    calls: int,
    conc: int,
    rounds: int,
) -> list[tuple[float, float, float, float]]:
    """``rounds`` (+ 1 warm-up) of (ceiling, candidate) seconds per call, then the same in
    this process's CPU seconds; the order alternates from round to round."""
    pair = (calls_of[CEILING], calls_of[candidate])
    out = []
    for round_no in range(1 + rounds):
        wall, cpu = [0.0, 0.0], [0.0, 0.0]
        for slot in (0, 1) if round_no % 2 == 0 else (1, 0):
            gc.collect()
            start = time.process_time()
            wall[slot] = loop.run_until_complete(h.run_calls(pair[slot], calls, conc))
            cpu[slot] = (time.process_time() - start) / calls
        if round_no:
            out.append((wall[0], wall[1], cpu[0], cpu[1]))
    return out


def median_ci(values: list[float]) -> tuple[float, float]:
    """About 95% confidence bounds of the median: order statistics n/2 -/+ 0.98 sqrt(n)."""
    ordered = sorted(values)
    n = len(ordered)
    half = 0.98 * math.sqrt(n)
    low = max(0, math.floor(n / 2 - half) - 1)
    return ordered[low], ordered[min(n - 1, math.ceil(n / 2 + half) - 1)]


def summarise(
    body: str,
    candidate: str,
    conc: int,
    calls: int,
    samples: list[tuple[float, float, float, float]],
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The pair's detailed row and its summary figure."""
    ratios = [s[0] / s[1] for s in samples]
    cpu_ratios = [s[2] / s[3] for s in samples]
    median = statistics.median(ratios)
    q1, _, q3 = statistics.quantiles(ratios, n=4)
    spread = {"q1": round(q1, 4), "q3": round(q3, 4), "min": round(min(ratios), 4)}
    spread["max"] = round(max(ratios), 4)
    spread["median_ci95"] = [round(r, 4) for r in median_ci(ratios)]
    label = f"{body} c={conc}"
    calibration = candidate == CEILING
    row = {
        "body": body,
        "candidate": candidate,
        "against": CEILING,
        "concurrency": conc,
        "calls_per_sample": calls,
        "rounds": len(samples),
        "ratio_median": round(median, 4),
        **spread,
        "unpaired_ratio_of_medians": h.ratio(
            statistics.median(s[0] for s in samples), statistics.median(s[1] for s in samples)
        ),
        "cpu_ratio_median": round(statistics.median(cpu_ratios), 4),
        "ratios": [round(r, 4) for r in ratios],
        "cpu_ratios": [round(r, 4) for r in cpu_ratios],
        "seconds_per_call": {
            CEILING: [round(s[0], 7) for s in samples],
            "candidate": [round(s[1], 7) for s in samples],
        },
        "cpu_seconds_per_call": {
            CEILING: [round(s[2], 7) for s in samples],
            "candidate": [round(s[3], 7) for s in samples],
        },
    }
    name = f"{label}: {candidate} / ({CEILING}), paired"
    if calibration:
        figure = h.figure(f"{label}: {CEILING} / itself, paired (the method's noise)", median)
    else:
        least = floor(body, candidate)
        figure = h.figure(name, median, target=f">= {least}", met=median >= least)
    figure.update(rounds=len(samples), **spread, cpu_ratio=row["cpu_ratio_median"])
    return row, figure


def main() -> None:
    """Start the canned server, run every pair, write results/paired.json."""
    quick = h.is_quick()
    rows, summary = [], []
    loop = asyncio.new_event_loop()
    try:
        with h.ServerProcess(bt.__file__, "--serve-canned") as base:
            clients = loop.run_until_complete(bt.Clients(base).__aenter__())
            try:
                for body, candidate, conc in PAIRS:
                    sizes = plan(body, conc, quick)
                    if sizes is None:
                        continue
                    calls, rounds = sizes
                    calls_of = clients.small() if body == SMALL else clients.entries(body)
                    samples = paired(loop, calls_of, candidate, calls, conc, rounds)
                    row, figure = summarise(body, candidate, conc, calls, samples)
                    rows.append(row)
                    summary.append(figure)
                    print(
                        f"  {figure['figure']}: median {row['ratio_median']}"
                        f" (quartiles {row['q1']} to {row['q3']}, range {row['min']} to"
                        f" {row['max']}, median's 95% bounds {row['median_ci95']}, {rounds}"
                        f" rounds; CPU time: {row['cpu_ratio_median']})",
                        flush=True,
                    )
            finally:
                loop.run_until_complete(clients.__aexit__(None, None, None))
    finally:
        loop.close()
    h.write_result(
        "paired",
        {
            "server": "bench_throughput's canned asyncio server, a separate process, 127.0.0.1",
            "method": "two candidates in one process, samples alternating A B / B A, the ratio"
            " (ceiling s per call / candidate s per call) taken per round; median, quartiles"
            " and range of the per-round ratios",
            "pairs": rows,
            "summary": summary,
        },
    )


if __name__ == "__main__":
    main()
