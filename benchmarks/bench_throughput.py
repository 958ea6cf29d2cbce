"""Per-call throughput on loopback: the SDK's Client against raw aiohttp + orjson and httpx.

A minimal aiohttp server runs in a separate process (this script with ``--serve``) on
127.0.0.1 and answers two routes with fixed bodies and ``x-ratelimit-*`` headers:

* small: ``GET /api/public/v1/verification-job/4`` -> one VerificationJob (the
  create-verification-job example), read with ``svc.jobs.get(4)``; the paced client
  reads the same body as job 5, whose answers count ``x-ratelimit-remaining`` down by
  one each, as the service's do (its pacer then parses a new ``remaining`` every time,
  as it would in the field), starting again at the limit every ``COUNTDOWN`` answers;
* big:   ``POST /api/public/v1/event/1/entries`` -> 1,000 entries (``_payloads``), read
  with ``svc.entries.for_event(1)``.

Candidates, each one long-lived client used at concurrency 1 and 32 for a fixed number
of calls per sample: ``sdk`` (``rate_limit=False``), ``sdk+pacing`` (small body only),
``aiohttp`` (one shared ClientSession, same method, URL and headers, ``await resp.read()``
+ ``orjson.loads``: the limit, ratio 1.0), ``aiohttp+structure`` (small body only: the
same, then the SDK's ``structure`` into a ``VerificationJob``; the ceiling of any typed
client on aiohttp, since the baseline builds no model), ``httpx`` (AsyncClient with
the same pool size, ``orjson.loads(resp.content)``) and ``sdk[httpx]`` (the SDK over
``HttpxTransport`` instead of its default ``AiohttpTransport``, ``rate_limit=False``). For the big body the converter's structuring time
is also measured alone (``structure`` on already-decoded JSON) in the same rounds.

    python benchmarks/bench_throughput.py [--quick]
"""

from __future__ import annotations

import asyncio
import cProfile
import itertools
import pstats
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import _harness as h
import _payloads
import aiohttp
import httpx
import orjson

from svc_async import Client, HttpxTransport
from svc_async._version import __version__
from svc_async.converter import structure
from svc_async.models import Entry, VerificationJob

FIXTURE = (
    Path(__file__).resolve().parent.parent / "tests/fixtures/create-verification-job.response.json"
)
JOB_PATH = "/api/public/v1/verification-job/4"
PACED_JOB = 5
PACED_PATH = f"/api/public/v1/verification-job/{PACED_JOB}"
COUNTDOWN = 1000
"""Answers of ``PACED_PATH`` before ``remaining`` starts again at the limit (a new window)."""
ENTRIES_PATH = "/api/public/v1/event/1/entries"
BIG_ENTRIES = 1000
TOKEN = "bench-token"
HEADERS = {
    "User-Agent": f"svc-async/{__version__}",
    "Accept": "application/json",
    "Authorization": f"Bearer {TOKEN}",
}
RATE_HEADERS = {
    "x-ratelimit-limit": "1000000",
    "x-ratelimit-remaining": "999999",
    "x-ratelimit-reset": "60",
}


def _countdown() -> Iterator[dict[str, str]]:
    """``RATE_HEADERS`` of ``PACED_PATH``'s answers, in turn: one call less left each."""
    limit = int(RATE_HEADERS["x-ratelimit-limit"])
    return itertools.cycle(
        [{**RATE_HEADERS, "x-ratelimit-remaining": str(limit - 1 - n)} for n in range(COUNTDOWN)]
    )


SERVER_LIFETIME = 600.0
"""The server process stops by itself after this many seconds, whatever happens."""
CANNED_ENTRIES = {  # label: (entries call, id, path, entries); bench_sliced's answers, 3 songs
    "461 entries": ("for_event", 461, "/api/public/v1/event/461/entries", 461),
    "1,000 entries": ("for_season", 1000, "/api/public/v1/season/1000/entries", 1000),
}
"""Big answers the canned server also gives (2.1 and 4.5 MB), by path."""


# ------------------------------------------------------------------ server process


async def _serve() -> None:
    """Serve the two routes on a free 127.0.0.1 port; print it; stop on stdin EOF."""
    from aiohttp import web

    small = FIXTURE.read_bytes()
    big = _payloads.entries_json(BIG_ENTRIES)
    headers = {"Content-Type": "application/json; charset=utf-8", **RATE_HEADERS}

    async def job(_: web.Request) -> web.Response:
        return web.Response(body=small, headers=headers)

    paced_headers = _countdown()

    async def paced_job(_: web.Request) -> web.Response:
        return web.Response(body=small, headers={**headers, **next(paced_headers)})

    async def entries(_: web.Request) -> web.Response:
        return web.Response(body=big, headers=headers)

    app = web.Application()
    app.router.add_get(JOB_PATH, job)
    app.router.add_get(PACED_PATH, paced_job)
    app.router.add_post(ENTRIES_PATH, entries)
    await h.serve_app(app, SERVER_LIFETIME, backlog=1024)


class _Canned(asyncio.Protocol):
    """HTTP/1.1 keep-alive answering from buffers: ``by_path``'s answer, else the small body.

    A path of ``in_turn`` is answered from its answers in turn (shared by connections).
    """

    def __init__(
        self,
        answer: bytes,
        by_path: dict[bytes, bytes] | None = None,
        in_turn: dict[bytes, Iterator[bytes]] | None = None,
    ) -> None:
        self.answer = answer
        self.by_path = by_path or {}
        self.in_turn = in_turn or {}
        self.buffer = b""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        answers = []
        while (end := self.buffer.find(b"\r\n\r\n")) >= 0:
            length = 0
            lines = self.buffer[:end].split(b"\r\n")
            for line in lines:
                if line[:15].lower() == b"content-length:":
                    length = int(line[15:])
            if len(self.buffer) < end + 4 + length:
                break
            self.buffer = self.buffer[end + 4 + length :]
            path = lines[0].split(b" ", 2)[1:2]
            answers.append(self._answer(path[0]) if path else self.answer)
        if answers:
            self.transport.write(answers[0] if len(answers) == 1 else b"".join(answers))

    def _answer(self, path: bytes) -> bytes:
        turns = self.in_turn.get(path)
        return next(turns) if turns is not None else self.by_path.get(path, self.answer)


async def _serve_canned() -> None:
    """A server costing next to nothing per request, to see the client alone; stdin EOF stops it."""

    def answer_of(body: bytes, rate: dict[str, str] = RATE_HEADERS) -> bytes:
        head = "".join(f"{k}: {v}\r\n" for k, v in rate.items())
        return (
            "HTTP/1.1 200 OK\r\nContent-Type: application/json; charset=utf-8\r\n"
            f"Content-Length: {len(body)}\r\nDate: Mon, 23 Nov 2026 12:00:00 GMT\r\n{head}\r\n"
        ).encode() + body

    small = FIXTURE.read_bytes()
    answer = answer_of(small)
    paced = [answer_of(small, rate) for rate in itertools.islice(_countdown(), COUNTDOWN)]
    items = _payloads.entries(max(n for *_, n in CANNED_ENTRIES.values()), 3)
    by_path = {
        path.encode(): answer_of(orjson.dumps(items[:n])) for *_, path, n in CANNED_ENTRIES.values()
    }
    in_turn = {PACED_PATH.encode(): itertools.cycle(paced)}
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: _Canned(answer, by_path, in_turn), "127.0.0.1", 0, backlog=1024
    )
    try:
        await h.announce_and_wait(server.sockets[0].getsockname()[1], SERVER_LIFETIME)
    finally:
        server.close()


# ------------------------------------------------------------------ client side

Call = Callable[[], Awaitable[Any]]


def _meter_provider() -> Any:
    """An OpenTelemetry SDK meter provider with a reader that is never collected: what
    ``Client(metrics=...)`` costs per call when a service exports its metrics."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    return MeterProvider(metric_readers=[InMemoryMetricReader()])


class Clients:
    """The long-lived clients of every candidate, opened and closed together."""

    def __init__(self, base: str) -> None:
        self.base = base

    async def __aenter__(self) -> Clients:
        self.sdk = await Client(self.base, token=TOKEN, rate_limit=False).__aenter__()
        self.paced = await Client(self.base, token=TOKEN, rate_limit=True).__aenter__()
        self.metered = await Client(
            self.base, token=TOKEN, rate_limit=True, metrics=_meter_provider()
        ).__aenter__()
        # metrics=True with no SDK configured: the API's no-op meters, the SDK's own cost
        self.metered_api = await Client(
            self.base, token=TOKEN, rate_limit=True, metrics=True
        ).__aenter__()
        on_httpx = HttpxTransport(trust_env=False)
        self.sdk_httpx = await Client(
            self.base, token=TOKEN, rate_limit=False, transport=on_httpx
        ).__aenter__()
        self.session = aiohttp.ClientSession()
        limits = httpx.Limits(max_connections=100, max_keepalive_connections=100)
        self.httpx = httpx.AsyncClient(limits=limits)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.sdk.aclose()
        await self.paced.aclose()
        await self.metered.aclose()
        await self.metered_api.aclose()
        await self.sdk_httpx.aclose()
        await self.session.close()
        await self.httpx.aclose()

    def small(self) -> dict[str, Call]:
        """One call of each candidate for the small body."""
        url = self.base + JOB_PATH

        async def raw() -> Any:
            async with self.session.get(url, headers=HEADERS) as resp:
                return orjson.loads(await resp.read())

        async def raw_typed() -> Any:
            async with self.session.get(url, headers=HEADERS) as resp:
                return structure(orjson.loads(await resp.read()), VerificationJob)

        async def via_httpx() -> Any:
            return orjson.loads((await self.httpx.get(url, headers=HEADERS)).content)

        return {
            "aiohttp": raw,
            "aiohttp+structure": raw_typed,
            "sdk": lambda: self.sdk.jobs.get(4),
            "sdk+pacing": lambda: self.paced.jobs.get(PACED_JOB),
            "sdk+metrics": lambda: self.metered.jobs.get(PACED_JOB),
            "sdk+metrics[api]": lambda: self.metered_api.jobs.get(PACED_JOB),
            "sdk[httpx]": lambda: self.sdk_httpx.jobs.get(4),
            "httpx": via_httpx,
        }

    def big(self) -> dict[str, Call]:
        """One call of each candidate for the 1,000-entry body."""
        url = self.base + ENTRIES_PATH

        async def raw() -> Any:
            async with self.session.post(url, headers=HEADERS) as resp:
                return orjson.loads(await resp.read())

        async def via_httpx() -> Any:
            return orjson.loads((await self.httpx.post(url, headers=HEADERS)).content)

        return {
            "aiohttp": raw,
            "sdk": lambda: self.sdk.entries.for_event(1),
            "httpx": via_httpx,
            "sdk[httpx]": lambda: self.sdk_httpx.entries.for_event(1),
        }

    def entries(self, label: str) -> dict[str, Call]:
        """The typed ceiling and the SDK for one of ``CANNED_ENTRIES`` (canned server only).

        The ceiling is raw aiohttp (the same method and headers) + ``orjson.loads`` + the
        SDK's ``structure`` into ``list[Entry]`` (the collector left alone, as by the SDK).
        """
        method, ident, path, _ = CANNED_ENTRIES[label]
        url = self.base + path

        async def raw_typed() -> Any:
            async with self.session.post(url, headers=HEADERS) as resp:
                return structure(orjson.loads(await resp.read()), list[Entry])

        return {
            "aiohttp+structure": raw_typed,
            "sdk": lambda: getattr(self.sdk.entries, method)(ident),
            "sdk+pacing": lambda: getattr(self.paced.entries, method)(ident),
        }


def _sampler(loop: asyncio.AbstractEventLoop, call: Call, calls: int, conc: int) -> h.Sample:
    return lambda: loop.run_until_complete(h.run_calls(call, calls, conc))


def measure(
    loop: asyncio.AbstractEventLoop, clients: Clients, quick: bool
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every (body, concurrency) case; returns the detailed rows and the summary figures."""
    big_data = orjson.loads(_payloads.entries_json(BIG_ENTRIES))
    plan = [
        ("small", 1, 300 if quick else 2000, 2 if quick else 3),
        # The headline figure: its ratio moves by 0.03 between runs of 3 rounds, so 9.
        ("small", 32, 300 if quick else 2000, 2 if quick else 9),
        ("big", 1, 3 if quick else 8, 2 if quick else 3),
        ("big", 32, 8 if quick else 32, 2 if quick else 3),
    ]
    rows, summary = [], []
    for body, conc, calls, repeats in plan:
        calls_of = clients.small() if body == "small" else clients.big()
        cases = {name: _sampler(loop, call, calls, conc) for name, call in calls_of.items()}
        if body == "big":
            cases["structure alone"] = h.timed(lambda: structure(big_data, list[Entry]), 2)
        stats = h.compare(cases, repeats=repeats, warmup=1)
        limit = stats["aiohttp"].median
        row: dict[str, Any] = {
            "body": body,
            "concurrency": conc,
            "calls_per_sample": calls,
            "repeats": repeats,
            "calls_per_second": {
                n: round(1 / s.median, 1) for n, s in stats.items() if n != "structure alone"
            },
            "timings_per_call": {n: s.as_dict() for n, s in stats.items()},
        }
        label = f"{body} c={conc}"
        if body == "small":
            row["throughput_vs_aiohttp"] = {
                n: h.ratio(limit, s.median) for n, s in stats.items() if n != "aiohttp"
            }
            for name, value in row["throughput_vs_aiohttp"].items():
                summary.append(h.figure(f"{label}: {name} throughput / aiohttp", value))
            typed = stats["aiohttp+structure"].median
            row["sdk_vs_aiohttp_plus_structure"] = h.ratio(typed, stats["sdk"].median)
            row["sdk_pacing_vs_aiohttp_plus_structure"] = h.ratio(typed, stats["sdk+pacing"].median)
            for name in ("sdk", "sdk+pacing"):
                value = h.ratio(typed, stats[name].median)
                # The target is against the typed ceiling: raw aiohttp builds no model at all.
                target, met = (">= 0.9", value >= 0.9) if conc == 32 else (None, None)
                summary.append(
                    h.figure(
                        f"{label}: {name} throughput / (aiohttp+structure)",
                        value,
                        target=target,
                        met=met,
                    )
                )
        else:
            alone = stats["structure alone"].median
            allowance = limit + alone
            row["structure_alone_s"] = round(alone, 6)
            row["sdk_vs_aiohttp_plus_structure"] = h.ratio(stats["sdk"].median, allowance)
            row["time_per_call_vs_aiohttp"] = {
                n: h.ratio(s.median, limit) for n, s in stats.items() if n != "aiohttp"
            }
            value = row["sdk_vs_aiohttp_plus_structure"]
            summary.append(
                h.figure(
                    f"{label}: sdk time / (aiohttp + structure)",
                    value,
                    target="<= 1.05",
                    met=value <= 1.05,
                )
            )
            for name in ("sdk", "sdk[httpx]", "httpx", "structure alone"):
                summary.append(
                    h.figure(
                        f"{label}: {name} time / aiohttp", row["time_per_call_vs_aiohttp"][name]
                    )
                )
        rows.append(row)
        print(f"  {label}: {row['calls_per_second']}", flush=True)
    return rows, summary


def measure_canned(
    loop: asyncio.AbstractEventLoop, clients: Clients, quick: bool
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Small body at concurrency 32 against the canned server: the client's cost alone.

    The aiohttp server costs about as much per request as raw aiohttp's client, so there
    a slower client leaves it idle and waking it costs both sides; against a server that
    costs next to nothing, the ratio shows the client's own overhead.
    """
    calls = 300 if quick else 2000
    small = clients.small()
    cases = {n: _sampler(loop, small[n], calls, 32) for n in ("aiohttp", "sdk")}
    stats = h.compare(cases, repeats=2 if quick else 5, warmup=1)
    value = h.ratio(stats["aiohttp"].median, stats["sdk"].median)
    row = {
        "body": "small",
        "concurrency": 32,
        "server": "canned (asyncio.Protocol answering from one buffer)",
        "calls_per_sample": calls,
        "calls_per_second": {n: round(1 / st.median, 1) for n, st in stats.items()},
        "timings_per_call": {n: st.as_dict() for n, st in stats.items()},
        "throughput_vs_aiohttp": {"sdk": value},
    }
    print(f"  small c=32, canned server: {row['calls_per_second']}", flush=True)
    return row, [h.figure("small c=32, canned server: sdk throughput / aiohttp", value)]


def _package(filename: str, func: str) -> str:
    """Which package a profiled function belongs to (generated attrs/cattrs code by model)."""
    if "generated" in filename:
        return (
            "svc_async (generated attrs/cattrs)" if "svc_async" in filename else "attrs generated"
        )
    if "svc_async" in filename:
        return "svc_async"
    for name in ("aiohttp", "multidict", "yarl", "asyncio", "cattrs", "attr"):
        if f"/{name}/" in filename:
            return name
    if filename == "~" and "orjson" in func:
        return "orjson.loads"
    if filename == "~":
        return "socket send/recv" if "_socket.socket" in func else "other builtins"
    return "other"


def profile(
    loop: asyncio.AbstractEventLoop, calls_of: dict[str, Call], calls: int
) -> dict[str, Any]:
    """cProfile of ``calls`` calls at concurrency 32 per candidate (client process only).

    Returns, per candidate, profiled microseconds per call by package and, for the SDK,
    its own functions by self time. Profiling inflates every figure about 2x; compare
    the rows with each other, not with the timings.
    """
    out: dict[str, Any] = {}
    for name, call in calls_of.items():
        profiler = cProfile.Profile()
        profiler.enable()
        loop.run_until_complete(h.run_calls(call, calls, 32))
        profiler.disable()
        stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
        by_package: dict[str, float] = {}
        own = []
        for (filename, line, func), (_, _, tottime, cumtime, _) in stats.items():
            package = _package(filename, func)
            by_package[package] = by_package.get(package, 0.0) + tottime
            if "svc_async" in filename:
                where = (
                    filename.rsplit("svc_async/", 1)[-1] if "svc_async/" in filename else filename
                )
                own.append(
                    {
                        "function": func,
                        "where": f"{where}:{line}",
                        "self_us": round(1e6 * tottime / calls, 1),
                        "cum_us": round(1e6 * cumtime / calls, 1),
                    }
                )
        out[name] = {
            "profiled_us_per_call": round(1e6 * sum(by_package.values()) / calls, 1),
            "by_package_us": {
                k: round(1e6 * v / calls, 1)
                for k, v in sorted(by_package.items(), key=lambda kv: -kv[1])
            },
        }
        if own:
            own.sort(key=lambda r: -r["self_us"])
            out[name]["svc_async_self_time"] = own[:15]
    return out


def main() -> None:
    """Start the server process, measure, write results/throughput.json."""
    if "--serve" in sys.argv[1:]:
        asyncio.run(_serve())
        return
    if "--serve-canned" in sys.argv[1:]:
        asyncio.run(_serve_canned())
        return
    quick = h.is_quick()
    loop = asyncio.new_event_loop()
    try:
        with h.ServerProcess(__file__, "--serve-canned") as base:
            clients = loop.run_until_complete(Clients(base).__aenter__())
            try:
                canned_row, canned_summary = measure_canned(loop, clients, quick)
            finally:
                loop.run_until_complete(clients.__aexit__(None, None, None))
        with h.ServerProcess(__file__) as base:
            clients = loop.run_until_complete(Clients(base).__aenter__())
            try:
                rows, summary = measure(loop, clients, quick)
                rows.append(canned_row)
                summary.extend(canned_summary)
                small = clients.small()
                profiles = {
                    "small_c32": profile(
                        loop, {k: small[k] for k in ("aiohttp", "sdk")}, 300 if quick else 1000
                    ),
                    "big_c32": profile(
                        loop,
                        {"aiohttp": clients.big()["aiohttp"], "sdk": clients.big()["sdk"]},
                        4 if quick else 16,
                    ),
                }
            finally:
                loop.run_until_complete(clients.__aexit__(None, None, None))
    finally:
        loop.close()
    h.write_result(
        "throughput",
        {
            "server": "aiohttp in a separate process on 127.0.0.1 (and, for one row, a"
            " canned asyncio server)",
            "baseline": "aiohttp ClientSession + orjson.loads (ratio 1.0)",
            "cases": rows,
            "profiles": profiles,
            "summary": summary,
        },
    )
    for case, per_candidate in profiles.items():
        print(f"\nprofile {case} (client process, profiled us per call by package):")
        names = list(per_candidate)
        packages = list(
            dict.fromkeys(p for c in per_candidate.values() for p in c["by_package_us"])
        )
        print(
            h.format_table(
                ("package", *names),
                (
                    [p, *(per_candidate[n]["by_package_us"].get(p, 0.0) for n in names)]
                    for p in packages[:10]
                ),
            )
        )
        print(f"svc_async functions ({case}), by self time:")
        print(
            h.format_table(
                ("function", "where", "self us", "cum us"),
                (list(r.values()) for r in per_candidate["sdk"]["svc_async_self_time"][:10]),
            )
        )


if __name__ == "__main__":
    main()
