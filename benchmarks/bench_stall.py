"""Longest event-loop stall while big entries answers are fetched, before and after slicing.

A minimal aiohttp server runs in another process (this script with ``--serve``) on
127.0.0.1 and answers ``POST .../season/{id}/entries`` with 1,000 / 2,000 / 10,000
entries in two shapes (``large``: 3 songs per entry, ``compact``: 1), and
``POST .../event/{id}/entries`` with 100 entries (events 1..100) or 461 (event 461).

A ticker task sleeping 1 ms runs beside each call; the longest gap between its wake-ups,
less the 1 ms, is the stall. Each case runs ``before`` (the incremental path switched
off: today's one-shot ``orjson.loads`` + ``structure``) and ``after`` (answers of at
least ``STREAM_THRESHOLD`` bytes decoded and structured in slices), round-robin.
The stall of the *next* small call (the GC debt a big answer leaves) is measured too.

Budgets, measured in the same run: U = ``orjson.loads`` of the 1,000-entry body with
the GC off (median of 7); G = one full ``gc.collect()`` with the 10,000-entry answer's
models alive. Targets: 10,000 entries stall <= 3U + G, 1,000 entries <= 2U + G.

Also: 100 events x 100 entries via ``for_events`` at concurrency 8; throughput of the
461-entry body at concurrency 4, SDK / raw aiohttp + orjson; peak memory of 10,000
entries / the decoded dicts (fresh interpreters, tracemalloc); GC-tracked objects per
entry; decode-only cost of the splitter (and of ijson's yajl2_c, when installed) / U.

    python benchmarks/bench_stall.py [--quick]
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from typing import Any

import _harness as h
import _payloads
import aiohttp
import orjson

from svc_async import Client
from svc_async._pipeline import incremental as _incremental
from svc_async.models import Entry
from svc_async.resources import entries as _entries_module

TOKEN = "bench-token"
SEASON = "/api/public/v1/season/{id}/entries"
EVENT = "/api/public/v1/event/{id}/entries"
SIZES = (1000, 2000, 10000)
SHAPES = {"large": 3, "compact": 1}
THROUGHPUT_ENTRIES = 461
SERVER_LIFETIME = 900.0
"""The server process stops by itself after this many seconds, whatever happens."""


def season_id(shape: str, count: int) -> int:
    """The season id the server answers with ``count`` entries of ``shape``."""
    return (1 + list(SHAPES).index(shape)) * 100_000 + count


def bodies() -> dict[str, bytes]:
    """Every answer the server gives, by request path."""
    out: dict[str, bytes] = {}
    for shape, songs in SHAPES.items():
        items = _payloads.entries(max(SIZES), songs)
        for count in SIZES:
            out[SEASON.format(id=season_id(shape, count))] = orjson.dumps(items[:count])
    hundred = orjson.dumps(_payloads.entries(100, 3))
    for event in range(1, 101):
        out[EVENT.format(id=event)] = hundred
    out[EVENT.format(id=THROUGHPUT_ENTRIES)] = orjson.dumps(
        _payloads.entries(THROUGHPUT_ENTRIES, 3)
    )
    return out


# ------------------------------------------------------------------ server process


async def _serve() -> None:
    """Serve every body on a free 127.0.0.1 port; print it; stop on stdin EOF."""
    from aiohttp import web

    answers = bodies()
    headers = {"Content-Type": "application/json; charset=utf-8"}

    async def handler(request: web.Request) -> web.StreamResponse:
        body = answers.get(request.path)
        if body is None:
            return web.Response(status=404)
        return web.Response(body=body, headers=headers)

    app = web.Application()
    app.router.add_post("/{tail:.*}", handler)
    await h.serve_app(app, SERVER_LIFETIME)


# ------------------------------------------------------------------ measuring


class Ticker:
    """A task sleeping 1 ms in a loop; ``worst`` is its longest late wake-up (seconds)."""

    def __init__(self) -> None:
        self.worst = 0.0
        self.ticks = 0
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        last = loop.time()
        while True:
            await asyncio.sleep(0.001)
            now = loop.time()
            self.worst = max(self.worst, now - last - 0.001)
            self.ticks += 1
            last = now

    async def measure(self, call: Callable[[], Awaitable[Any]]) -> tuple[Any, float]:
        """Run ``call`` beside the ticker; return its result and the worst stall."""
        self.worst = 0.0
        self._task = asyncio.create_task(self._run())
        await asyncio.sleep(0.005)  # let the ticker settle
        self.worst = 0.0
        try:
            result = await call()
            await asyncio.sleep(0.002)  # a stall right at the end is still seen
        finally:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        return result, max(0.0, self.worst)


def set_mode(mode: str) -> None:
    """``before``: no stream decoder (main's one-shot path, ``transport.send``); ``after``: on."""
    _entries_module.EntriesDecode = _no_decoder if mode == "before" else _DECODER  # type: ignore[assignment,misc]


class _OneShot(_entries_module.EntriesDecode):
    """The entries decoder that does not stream: the whole body read, then structured."""

    __slots__ = ()
    streams = False


def _no_decoder(item_type: type[Any]) -> contextlib.nullcontext[_OneShot]:
    return contextlib.nullcontext(_OneShot(item_type))


_DECODER = _entries_module.EntriesDecode
THRESHOLD = _incremental.STREAM_THRESHOLD


def budgets(answers: dict[str, bytes], shape: str, svc_models: list[Entry]) -> dict[str, float]:
    """U (loads of the 1,000-entry body, GC off, median of 7) and G (gc.collect, models alive)."""
    body = answers[SEASON.format(id=season_id(shape, 1000))]
    samples = []
    for _ in range(7):
        gc.collect()
        gc.disable()
        start = time.perf_counter()
        orjson.loads(body)
        samples.append(time.perf_counter() - start)
        gc.enable()
    collects = []
    for _ in range(3):
        start = time.perf_counter()
        gc.collect()
        collects.append(time.perf_counter() - start)
    assert len(svc_models) == 10000
    return {"U": statistics.median(samples), "G": statistics.median(collects)}


async def stalls(base: str, answers: dict[str, bytes], quick: bool) -> dict[str, Any]:
    """Every (shape, size, mode) case, round-robin; medians of the worst stalls."""
    repeats = 1 if quick else 3
    sizes = (1000, 10000) if quick else SIZES
    ticker = Ticker()
    out: dict[str, Any] = {}
    async with Client(base, token=TOKEN, rate_limit=False) as svc:
        await svc.entries.for_event(1)  # hooks generated, connection open
        for shape in SHAPES:
            rows: dict[str, dict[str, list[float]]] = {}
            kept: list[Entry] = []
            for _ in range(repeats):
                for count in sizes:
                    for mode in ("before", "after"):
                        set_mode(mode)
                        sid = season_id(shape, count)
                        if count == 10000:
                            kept = []  # G is for one answer's models, not two
                        gc.collect()
                        models, stall = await ticker.measure(
                            lambda sid=sid: svc.entries.for_season(sid)
                        )
                        assert len(models) == count
                        # the next small call pays what the big one left to the GC
                        _, debt = await ticker.measure(lambda: svc.entries.for_event(1))
                        row = rows.setdefault(f"{count}/{mode}", {"stall": [], "next": []})
                        row["stall"].append(stall)
                        row["next"].append(debt)
                        if count == 10000:
                            kept = models
                        del models
            set_mode("after")
            budget = budgets(answers, shape, kept)
            del kept
            out[shape] = {
                "U_s": round(budget["U"], 5),
                "G_s": round(budget["G"], 5),
                "cases": {
                    key: {
                        "stall_s": round(statistics.median(v["stall"]), 5),
                        "stall_max_s": round(max(v["stall"]), 5),
                        "next_call_stall_s": round(statistics.median(v["next"]), 5),
                    }
                    for key, v in rows.items()
                },
            }
    return out


async def fan_out(base: str, quick: bool) -> dict[str, float]:
    """Worst stall over 100 events x 100 entries via ``for_events`` at concurrency 8."""
    ticker = Ticker()
    out: dict[str, float] = {}
    async with Client(base, token=TOKEN, rate_limit=False) as svc:
        await svc.entries.for_event(1)
        for mode in ("before", "after") * (1 if quick else 2):
            set_mode(mode)

            async def run() -> int:
                n = 0
                async for batch in svc.entries.for_events(range(1, 101), concurrency=8):
                    assert batch.entries is not None
                    n += len(batch.entries)
                return n

            gc.collect()
            total, stall = await ticker.measure(run)
            assert total == 100 * 100
            out[mode] = max(out.get(mode, 0.0), stall)
    set_mode("after")
    return {k: round(v, 5) for k, v in out.items()}


async def throughput(base: str, quick: bool) -> dict[str, Any]:
    """461 entries at concurrency 4: seconds per call of raw aiohttp + orjson and the SDK."""
    path = EVENT.format(id=THROUGHPUT_ENTRIES)
    calls, repeats = (8, 3) if quick else (24, 7)
    headers = {"Authorization": f"Bearer {TOKEN}", "Accept": "application/json"}
    times: dict[str, list[float]] = {"aiohttp": [], "before": [], "after": []}
    async with (
        Client(base, token=TOKEN, rate_limit=False) as svc,
        aiohttp.ClientSession() as session,
    ):

        async def raw() -> Any:
            async with session.post(base + path, headers=headers) as resp:
                return orjson.loads(await resp.read())

        async def sdk() -> Any:
            return await svc.entries.for_event(THROUGHPUT_ENTRIES)

        for round_no in range(repeats + 1):
            for name in times:
                set_mode("before" if name == "before" else "after")
                gc.collect()
                seconds = await h.run_calls(raw if name == "aiohttp" else sdk, calls, 4)
                if round_no:
                    times[name].append(seconds)
    set_mode("after")
    med = {k: statistics.median(v) for k, v in times.items()}
    return {
        "body_bytes": None,
        "seconds_per_call": {k: round(v, 5) for k, v in med.items()},
        "ratio_before": h.ratio(med["aiohttp"], med["before"]),
        "ratio_after": h.ratio(med["aiohttp"], med["after"]),
    }


# ------------------------------------------------------------------ fresh-interpreter parts


def child(mode: str) -> dict[str, Any]:
    """Memory (tracemalloc peak) or GC-tracked objects, in a fresh interpreter."""
    body = _payloads.entries_json(10000, SHAPES["large"])
    if mode == "dicts":
        tracemalloc.start()
        data = orjson.loads(body)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return {"peak": peak, "tracked_per_entry": _tracked(data) / len(data)}
    from svc_async import MockTransport, json_response

    async def fetch() -> dict[str, Any]:
        async def chunks() -> Any:
            for i in range(0, len(body), 65536):
                yield body[i : i + 65536]
                await asyncio.sleep(0)

        warm = json_response(_payloads.entries(1))
        async with Client("http://x", transport=MockTransport(lambda _: warm), token=TOKEN) as svc:
            await svc.entries.for_event(1)
        gc.collect()
        tracemalloc.start()
        if mode == "after":  # what the transport does with a big answer
            models = await _incremental.structure_chunks(chunks(), Entry)
        else:  # today: the whole body read, decoded, then structured
            from svc_async.resources.entries import parse_entries

            models = parse_entries(orjson.loads(b"".join([c async for c in chunks()])))
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return {"peak": peak, "tracked_per_entry": _tracked(models) / len(models)}

    return asyncio.run(fetch())


def _tracked(root: Any) -> int:
    """GC-tracked objects reachable from ``root`` (itself included)."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        obj = stack.pop()
        if id(obj) in seen or not gc.is_tracked(obj) or isinstance(obj, type):
            continue
        seen.add(id(obj))
        stack.extend(gc.get_referents(obj))
    return len(seen)


def run_child(mode: str) -> dict[str, Any]:
    """Run ``child(mode)`` in a fresh interpreter."""
    out = subprocess.run(
        [sys.executable, __file__, "--child", mode],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def mechanism(answers: dict[str, bytes]) -> dict[str, Any]:
    """Decode-only cost on the 1,000-entry large body, GC off, / orjson.loads (U)."""
    body = answers[SEASON.format(id=season_id("large", 1000))]

    def splitter() -> None:
        s = _incremental.ArraySplitter()
        for i in range(0, len(body), 65536):
            s.feed(body[i : i + 65536])
            for _ in s.slices():
                pass
        for _ in s.close():
            pass

    cases: dict[str, h.Sample] = {
        "orjson": h.timed(lambda: orjson.loads(body)),
        "splitter": h.timed(splitter),
    }
    try:
        import ijson

        def via_ijson() -> None:
            out = ijson.sendable_list()
            coro = ijson.items_coro(out, "item", use_float=True)
            for i in range(0, len(body), 65536):
                coro.send(body[i : i + 65536])
                out.clear()
            coro.close()

        cases[f"ijson_{ijson.backend}"] = h.timed(via_ijson)
    except ImportError:
        pass
    stats = h.compare(cases, repeats=7, gc_on=False)
    base = stats["orjson"].median
    return {k: h.ratio(v.median, base) for k, v in stats.items()}


# ------------------------------------------------------------------ main


def main() -> None:
    """Run everything; write results/stall.json."""
    quick = h.is_quick()
    answers = bodies()
    with h.ServerProcess(__file__) as base:
        loop = asyncio.new_event_loop()
        try:
            result_stalls = loop.run_until_complete(stalls(base, answers, quick))
            result_fan = loop.run_until_complete(fan_out(base, quick))
            result_tp = loop.run_until_complete(throughput(base, quick))
        finally:
            loop.close()
    result_tp["body_bytes"] = len(answers[EVENT.format(id=THROUGHPUT_ENTRIES)])
    memory = {mode: run_child(mode) for mode in ("dicts", "before", "after")}
    decode = mechanism(answers)

    summary = []
    for shape, r in result_stalls.items():
        u, g = r["U_s"], r["G_s"]
        for count, k in ((10000, 3), (1000, 2)):
            for mode in ("before", "after"):
                stall = r["cases"][f"{count}/{mode}"]["stall_s"]
                value = stall / (k * u + g)
                summary.append(
                    h.figure(
                        f"{shape} {count} entries, stall / ({k}U+G), {mode}",
                        value,
                        target="<= 1" if mode == "after" else None,
                        met=value <= 1 if mode == "after" else None,
                    )
                )
    summary.append(
        h.figure("for_events 100x100 c=8, stall before", result_fan["before"] * 1e3, unit="ms")
    )
    summary.append(
        h.figure("for_events 100x100 c=8, stall after", result_fan["after"] * 1e3, unit="ms")
    )
    for mode in ("before", "after"):
        value = result_tp[f"ratio_{mode}"]
        summary.append(
            h.figure(
                f"throughput 461 entries c=4, SDK / raw aiohttp+orjson, {mode}",
                value,
                target=">= 0.53" if mode == "after" else None,
                met=value >= 0.53 if mode == "after" else None,
            )
        )
    for mode in ("before", "after"):
        value = memory[mode]["peak"] / memory["dicts"]["peak"]
        summary.append(
            h.figure(
                f"peak memory 10,000 entries / decoded dicts, {mode}",
                value,
                target="<= 1.5",
                met=value <= 1.5,
            )
        )
    for shape, r in result_stalls.items():
        summary.append(
            h.figure(
                f"{shape} 10000 entries, stall of the next small call, after",
                r["cases"]["10000/after"]["next_call_stall_s"] * 1e3,
                unit="ms",
            )
        )
    for mode in ("dicts", "after"):
        summary.append(
            h.figure(
                f"GC-tracked objects per entry, {'decoded dicts' if mode == 'dicts' else 'models'}",
                memory[mode]["tracked_per_entry"],
                unit="objects",
            )
        )
    for name, value in decode.items():
        summary.append(h.figure(f"decode 1,000 entries, GC off, {name} / orjson.loads", value))
    h.write_result(
        "stall",
        {
            "threshold_bytes": THRESHOLD,
            "slice_bytes": _incremental.SLICE_BYTES,
            "stalls": result_stalls,
            "for_events": result_fan,
            "throughput": result_tp,
            "memory": memory,
            "gc_tracked_per_entry": {k: v["tracked_per_entry"] for k, v in memory.items()},
            "decode_ratios": decode,
            "summary": summary,
        },
    )


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        asyncio.run(_serve())
    elif sys.argv[1:2] == ["--child"]:
        print(json.dumps(child(sys.argv[2])))
    else:
        main()
