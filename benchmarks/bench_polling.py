"""Polling cost and latency of ``jobs.wait`` and ``jobs.wait_many``, in simulated time.

Jobs take 2, 10 and 60 seconds. Each configuration runs many concurrent waits on an
event loop whose clock jumps straight to the next timer (nothing really sleeps), against
a MockTransport that derives each job's status from that clock. With webhooks, the
receiver gets the job's status update ``WEBHOOK_LATENCY`` seconds after it finishes.

Measured: ``get`` calls per wait and the latency from the job finishing to ``wait``
returning; and for ``wait_many`` over 50 jobs, the calls made against 50 separate waits.
Writes ``benchmarks/results/polling.json`` and prints a table.

    python benchmarks/bench_polling.py
"""

from __future__ import annotations

import asyncio
import json
import platform
import random
import selectors
import statistics
import time
from collections import Counter
from pathlib import Path
from typing import Any

import orjson

from svc_async import Client, MockTransport, PollPolicy, Request, Response, json_response
from svc_async.webhooks import JobStatusUpdate, WebhookReceiver

DURATIONS = (2.0, 10.0, 60.0)
WAITS_PER_CASE = 200
WEBHOOK_LATENCY = 0.2
MANY = 50
RESULTS = Path(__file__).parent / "results" / "polling.json"
JOB = "/api/public/v1/verification-job"


class _VirtualSelector(selectors.BaseSelector):
    """Polls real file descriptors without blocking; a wait moves the virtual clock instead."""

    def __init__(self, loop: VirtualTimeLoop) -> None:
        self._inner = selectors.DefaultSelector()
        self._loop = loop

    def register(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self._inner.register(fileobj, events, data)

    def unregister(self, fileobj: Any) -> selectors.SelectorKey:
        return self._inner.unregister(fileobj)

    def modify(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self._inner.modify(fileobj, events, data)

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        ready = self._inner.select(0)
        if not ready:
            if timeout is None:
                raise RuntimeError("simulation idle: nothing scheduled and nothing to read")
            self._loop.now += timeout
        return ready

    def close(self) -> None:
        self._inner.close()

    def get_map(self) -> Any:
        return self._inner.get_map()


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """An event loop whose ``time()`` is virtual: sleeping costs no wall time."""

    def __init__(self) -> None:
        self.now = 0.0
        super().__init__(_VirtualSelector(self))

    def time(self) -> float:
        return self.now


class Service:
    """Jobs whose status follows the virtual clock; counts calls per job and per kind."""

    def __init__(self, receiver: WebhookReceiver | None = None) -> None:
        self.loop = asyncio.get_running_loop()
        self.jobs: dict[int, tuple[float, float, list[str]]] = {}
        self.gets: Counter[int] = Counter()
        self.searches = 0
        self.receiver = receiver

    def add(self, job_id: int, duration: float, tags: list[str] | None = None) -> None:
        start = self.loop.time()
        self.jobs[job_id] = (start, duration, tags or [])
        if self.receiver is not None:
            update = JobStatusUpdate(job_id=job_id, status="Processed")
            self.loop.call_at(start + duration + WEBHOOK_LATENCY, self.receiver.dispatch, update)

    def finish_at(self, job_id: int) -> float:
        start, duration, _ = self.jobs[job_id]
        return start + duration

    def render(self, job_id: int) -> dict[str, Any]:
        start, duration, tags = self.jobs[job_id]
        elapsed = self.loop.time() - start
        status = "Processed" if elapsed >= duration else ("Created", "Matching")[elapsed > 1]
        return {"id": job_id, "organisationId": 1, "status": status, "tags": tags}

    def handler(self, request: Request) -> Response:
        path = request.url.path
        if path == JOB + "/search":
            self.searches += 1
            body = orjson.loads(request.content or b"{}")
            rendered = [self.render(i) for i in self.jobs]
            hits = [
                j
                for j in rendered
                if set(body["tags"]) <= set(j["tags"])
                and (not body["statuses"] or j["status"] in body["statuses"])
            ]
            page = hits[body["offset"] : body["offset"] + body["limit"]]
            return json_response({"results": page, "count": len(hits)})
        job_id = int(path.rsplit("/", 1)[1])
        self.gets[job_id] += 1
        return json_response(self.render(job_id))


def _client(service: Service, receiver: WebhookReceiver | None) -> Client:
    return Client(
        "http://svc.bench",
        token="bench-token",
        transport=MockTransport(service.handler),
        rate_limit=False,
        webhooks=receiver,
    )


def _summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "mean": round(statistics.fmean(ordered), 3),
        "p50": round(ordered[len(ordered) // 2], 3),
        "p95": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))], 3),
        "max": round(ordered[-1], 3),
    }


async def _waits(duration: float, webhooks: bool, policy: PollPolicy) -> dict[str, Any]:
    receiver = WebhookReceiver("bench-secret") if webhooks else None
    service = Service(receiver)
    loop = asyncio.get_running_loop()
    latencies: list[float] = []
    rng = random.Random(int(duration * 10) + webhooks)

    async with _client(service, receiver) as svc:

        async def one(job_id: int) -> None:
            await asyncio.sleep(rng.uniform(0, 5))  # spread the starts
            service.add(job_id, duration)
            await svc.jobs.wait(job_id, policy=policy)
            latencies.append(loop.time() - service.finish_at(job_id))

        await asyncio.gather(*(one(i) for i in range(1, WAITS_PER_CASE + 1)))
    gets = [float(n) for n in service.gets.values()]
    return {
        "job_seconds": duration,
        "webhooks": webhooks,
        "waits": WAITS_PER_CASE,
        "gets_per_wait": _summary(gets),
        "latency_after_completion_s": _summary(latencies),
    }


async def _many(duration: float) -> dict[str, Any]:
    results: dict[str, Any] = {"jobs": MANY, "job_seconds": f"{duration / 2:g}-{duration:g}"}
    for mode in ("wait_many(tag)", "wait_many(found tag)", "separate waits"):
        service = Service()
        rng = random.Random(7)
        ids = list(range(1, MANY + 1))
        for job_id in ids:
            tags = ["batch-bench", f"svc-async-create:{job_id:032x}"]
            service.add(job_id, rng.uniform(duration / 2, duration), tags)
        async with _client(service, None) as svc:
            if mode == "separate waits":
                await asyncio.gather(*(svc.jobs.wait(i) for i in ids))
            else:
                tag = "batch-bench" if mode == "wait_many(tag)" else None
                done = [job async for job in svc.jobs.wait_many(ids, tag=tag)]
                assert len(done) == MANY
        results[mode] = {
            "gets": sum(service.gets.values()),
            "searches": service.searches,
            "calls": sum(service.gets.values()) + service.searches,
        }
    return results


def _run(coro: Any) -> Any:
    loop = VirtualTimeLoop()
    try:
        return loop.run_until_complete(coro)
    finally:
        loop.close()


def main() -> None:
    started = time.perf_counter()
    policy = PollPolicy()
    cases = [_run(_waits(d, hooks, policy)) for d in DURATIONS for hooks in (False, True)]
    many = [_run(_many(d)) for d in (10.0, 60.0)]
    report = {
        "benchmark": "polling",
        "python": platform.python_version(),
        "policy": {
            "wait_initial": policy.wait_initial,
            "wait_exp_base": policy.wait_exp_base,
            "wait_max": policy.wait_max,
            "wait_jitter": policy.wait_jitter,
            "webhook_factor": policy.webhook_factor,
        },
        "webhook_latency_s": WEBHOOK_LATENCY,
        "simulated_time": True,
        "wait": cases,
        "wait_many": many,
        "wall_seconds": round(time.perf_counter() - started, 2),
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")

    print(f"jobs.wait, default PollPolicy, {WAITS_PER_CASE} waits per row (simulated time)")
    print(
        f"{'job':>5} {'webhooks':>8} | {'gets mean':>9} {'max':>4} | {'latency mean':>12} {'p95':>6} {'max':>6}"
    )
    for case in cases:
        gets, late = case["gets_per_wait"], case["latency_after_completion_s"]
        print(
            f"{case['job_seconds']:>4g}s {'yes' if case['webhooks'] else 'no':>8} |"
            f" {gets['mean']:>9.2f} {gets['max']:>4g} |"
            f" {late['mean']:>11.2f}s {late['p95']:>5.2f}s {late['max']:>5.2f}s"
        )
    print(f"\n{MANY} jobs: calls (gets + searches)")
    for row in many:
        parts = ", ".join(
            f"{mode}: {row[mode]['calls']}"
            for mode in ("wait_many(tag)", "wait_many(found tag)", "separate waits")
        )
        print(f"  jobs of {row['job_seconds']} s -> {parts}")
    print(f"\nwrote {RESULTS} in {report['wall_seconds']} s wall time")


if __name__ == "__main__":
    main()
