"""Fan-out efficiency and incremental sync cost, against FakeService on loopback.

1. ``entries.for_events`` over 500 events, 50 ms injected latency per request,
   concurrency 16: measured time / ideal time (N x latency / concurrency).
2. ``entries.sync`` after 5% of the entries changed, against a full fetch of the same
   events: requests, response bytes and time.

Run: ``python benchmarks/bench_fanout.py`` (about 10 s). The fake's clock is frozen and
moved by hand between sync runs, as if they were an hour apart; only latency is real. Writes
``benchmarks/results/fanout.json`` and prints a table.
"""

from __future__ import annotations

import asyncio
import json
import platform
import random
import sys
import time
from pathlib import Path
from typing import Any

import attrs

from svc_async import AiohttpTransport, Client, Request, Response, SyncState
from svc_async.testing import FakeClock, FakeService, FaultConfig

EVENTS = 500
ENTRIES_PER_EVENT = 4
LATENCY = 0.050
CONCURRENCY = 16
CHANGED_SHARE = 0.05
RESULTS = Path(__file__).parent / "results" / "fanout.json"


@attrs.define
class CountingTransport:
    """Wraps a transport and counts requests and response body bytes."""

    inner: AiohttpTransport
    requests: int = 0
    bytes: int = 0

    async def send(self, request: Request) -> Response:
        response = await self.inner.send(request)
        self.requests += 1
        self.bytes += len(response.content)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()

    def reset(self) -> None:
        self.requests = 0
        self.bytes = 0


def _build() -> tuple[FakeService, list[int], list[int]]:
    # A frozen clock: runs hours apart, as a bot's would be (only the latency is real).
    clock = FakeClock(start=time.time() - 86400)
    fake = FakeService(demo_data=False, rate_limit=None, seed=7, clock=clock)
    events, entries = [], []
    for n in range(EVENTS):
        event_id = fake.add_event(1, f"Event {n}")
        events.append(event_id)
        for k in range(ENTRIES_PER_EVENT):
            entries.append(fake.add_entry(event_id, name=f"Team {n}-{k}", recording="licensed"))
    return fake, events, entries


async def _timed(coro: Any) -> tuple[Any, float]:
    started = time.perf_counter()
    result = await coro
    return result, time.perf_counter() - started


async def _fan_out(svc: Client, events: list[int]) -> int:
    count = 0
    async for batch in svc.entries.for_events(events, concurrency=CONCURRENCY):
        assert batch.ok, batch.error
        count += len(batch.entries)
    return count


async def run() -> dict[str, Any]:
    fake, events, entries = _build()
    fake.faults = FaultConfig(latency=LATENCY)
    transport = CountingTransport(AiohttpTransport())
    async with (
        fake.serve() as url,
        Client(url, token=fake.DEFAULT_TOKEN, transport=transport, rate_limit=False) as svc,
    ):
        # warm the connection pool so the first measurement does not pay for connects
        await _fan_out(svc, events[: CONCURRENCY * 2])
        # the CPU floor: the same fan-out with no latency (server and client share a loop)
        fake.faults = None
        _, cpu_floor = await _timed(_fan_out(svc, events))
        fake.faults = FaultConfig(latency=LATENCY)

        transport.reset()
        fake.reset_counters()
        fetched, elapsed = await _timed(_fan_out(svc, events))
        ideal = EVENTS * LATENCY / CONCURRENCY
        fan_out = {
            "events": EVENTS,
            "latency_s": LATENCY,
            "concurrency": CONCURRENCY,
            "entries": fetched,
            "requests": transport.requests,
            "peak_in_flight": fake.max_in_flight,
            "time_s": round(elapsed, 3),
            "ideal_s": round(ideal, 3),
            "ratio": round(elapsed / ideal, 3),
            "no_latency_s": round(cpu_floor, 3),
            "ratio_vs_ideal_plus_cpu": round(elapsed / (ideal + cpu_floor), 3),
        }

        # sync: a first (full) run an hour after the entries were made; an hour later
        # 5% of the recordings have changed, and the incremental run fetches them
        fake.advance(3600)
        first = await svc.entries.sync(events, concurrency=CONCURRENCY)
        state = SyncState.from_json(first.state.to_json())
        fake.advance(3600)
        changed = random.Random(1).sample(entries, int(len(entries) * CHANGED_SHARE))
        for entry_id in changed:
            fake.touch_recording(entry_id)

        transport.reset()
        result, sync_time = await _timed(svc.entries.sync(events, state, concurrency=CONCURRENCY))
        assert sorted(e.id for e in result.entries) == sorted(changed), "sync missed changes"
        sync = {"requests": transport.requests, "bytes": transport.bytes, "time_s": sync_time}

        # the same events fetched in full, as a bot without sync would
        transport.reset()
        _, full_time = await _timed(_fan_out(svc, events))
        full = {"requests": transport.requests, "bytes": transport.bytes, "time_s": full_time}
    await transport.aclose()  # passed in, so the client does not close it

    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "fan_out": fan_out,
        "sync_vs_full": {
            "entries": len(entries),
            "changed": len(changed),
            "reported": len(result.entries),
            "sync": {**sync, "time_s": round(sync_time, 3)},
            "full": {**full, "time_s": round(full_time, 3)},
            "bytes_ratio": round(sync["bytes"] / full["bytes"], 4),
            "time_ratio": round(sync_time / full_time, 3),
        },
    }


def _table(results: dict[str, Any]) -> str:
    fo, sv = results["fan_out"], results["sync_vs_full"]
    lines = [
        f"fan-out: {fo['events']} events, {fo['latency_s'] * 1000:.0f} ms latency, "
        f"concurrency {fo['concurrency']}",
        f"  measured {fo['time_s']:.3f} s  ideal {fo['ideal_s']:.3f} s  "
        f"ratio {fo['ratio']:.3f}  peak in flight {fo['peak_in_flight']}",
        f"  same run without latency {fo['no_latency_s']:.3f} s (CPU of fake + SDK, one loop); "
        f"measured / (ideal + that) {fo['ratio_vs_ideal_plus_cpu']:.3f}",
        "",
        f"sync after {sv['changed']} of {sv['entries']} entries changed "
        f"({sv['reported']} reported)",
        f"  {'':<6}{'requests':>10}{'bytes':>12}{'time s':>10}",
    ]
    for name in ("sync", "full"):
        row = sv[name]
        lines.append(f"  {name:<6}{row['requests']:>10}{row['bytes']:>12}{row['time_s']:>10.3f}")
    lines.append(f"  bytes ratio {sv['bytes_ratio']:.4f}  time ratio {sv['time_ratio']:.3f}")
    return "\n".join(lines)


def main() -> None:
    """Run the benchmark, write the JSON, print the table."""
    results = asyncio.run(run())
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    print(_table(results))
    print(f"\nwritten to {RESULTS}")


if __name__ == "__main__":
    main()
