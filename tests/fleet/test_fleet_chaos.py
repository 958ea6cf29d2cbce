"""A seeded chaos test of the fleet: webhook replicas and clients while processes and Redis die.

Three replica processes (``fleet_chaos_node.py``) serve a ``WebhookReceiver`` with a short
``claim_after``; their status callback logs ``start``/``end`` lines to one file around a
sleep that is sometimes longer than ``claim_after``. The test posts two deliveries per job
(``Matching``, then ``Processed`` once ``Matching`` was answered 204), each to a replica of
the seeded plan, some also to a second replica (at once or after the first's answer),
while a seeded schedule SIGKILLs replicas (each replaced by a new one) and restarts Redis
(SIGKILL, then an empty store on the same port). Two client processes spend one shared
rate budget of a FakeService meanwhile. Once the callbacks have settled, ``check`` reads
the log against what the test did and saw, and Redis is inspected.

The rules (``check``), each exemption being what the fleet documents, no more:

* at least once: every (job, status) answered 204 by some replica has an ``end``; except
  a double failure: a replica it was posted to was killed and a Redis restart came while
  it may still have been in that replica's hands (receiving replica gone: no re-adding);
* once: a second ``start`` of a (job, status) needs the earlier runner killed before its
  ``end`` and the ``start`` after that kill (a live replica's delivery is never taken
  over); or a restart while the delivery was in flight (from its first post until the
  receiving replica's sweep can have seen it settled: ``claim_after`` after its end);
* taken over in time: that second ``start`` comes within ``claim_after`` +
  ``TAKEOVER_SLACK`` of the kill (for ``Processed``: of the kill or ``Matching``'s end);
* order: ``Processed``'s first ``start`` comes after ``Matching``'s first ``end``, or after
  the kill of a replica that was running ``Matching``; or a restart came in between;
* Redis: the delivery streams are empty, every ``svc:*`` key has a TTL, memory is small;
* clients: no 429 from the service, and no failed call; except 429s while Redis is away
  (from a restart's SIGKILL until ``OUTAGE_429_GRACE`` after the new server answers):
  each process paces on its own then, as the fleet page says, and may draw a few.

A restart counts from its SIGKILL until ``RESTART_GRACE`` after the new server answers
(a replica whose store failed tries it again at most once per second). The schedule keeps
kills and restarts a few seconds apart, so the double-failure exemption rarely applies.

``SVC_CHAOS_SEED`` picks the seed (default ``DEFAULT_SEED``); every message names it.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import random
import sys
import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from svc_async.testing.service import FakeService

from ..redis_server import RedisServer, require_binary

NODE = Path(__file__).with_name("fleet_chaos_node.py")

DEFAULT_SEED = 20250611
REPLICAS = 3
CLAIM_AFTER = 1.0
JOBS = 40
SPACING = 0.3
"""Seconds between the starts of consecutive jobs' deliveries (jittered)."""
STATUSES = ("Matching", "Processed")
DUPLICATE_SHARE = 0.2
RESTART_GRACE = 1.5
"""After a restart the store may still count as down in a replica for its retry interval
(1 s) and a command's timeout (0.5 s): deliveries there are deduplicated locally only."""
TAKEOVER_SLACK = 2.0
"""Seconds past ``claim_after`` a takeover may take on a loaded machine (it takes the
renewal period, a 200 ms read and a script: well under ``claim_after`` + 1 s)."""
SETTLE_TIMEOUT = 15.0
CLIENTS = 2
BUDGET, WINDOW = 10, 1.0
MEMORY_BOUND = 1_000_000
OUTAGE_429_GRACE = RESTART_GRACE + 2 * WINDOW
"""After a restart a process may pace locally for its store's retry interval and a
command's timeout; the restarted store learns the budget again from the next answer, so
the window the fleet over-spent in and the next one may still answer 429."""


def _seed() -> int:
    return int(os.environ.get("SVC_CHAOS_SEED", DEFAULT_SEED))


# ---------------------------------------------------------------- the plan


@dataclass(frozen=True)
class Step:
    status: str
    gap: float
    """Seconds after the previous status of the job was answered 204."""
    slot: int
    second: int | None
    """Also posted to this slot's replica (a duplicate), or not."""
    at_once: bool
    """The duplicate goes at the same time as the first post (else after its answer)."""


@dataclass(frozen=True)
class JobPlan:
    job: int
    at: float
    steps: tuple[Step, ...]


@dataclass(frozen=True)
class Event:
    kind: str
    """``kill`` (a replica, replaced at once) or ``restart`` (Redis, empty)."""
    gap: float
    """Seconds after the previous event ended (the first: after the start)."""
    slot: int
    down: float
    """Seconds Redis stays down (restarts)."""


def make_plan(seed: int) -> tuple[list[JobPlan], list[Event]]:
    """The deliveries and the chaos schedule of ``seed``."""
    rng = random.Random(seed)
    jobs = []
    for index in range(JOBS):
        steps = []
        for status in STATUSES:
            slot = rng.randrange(REPLICAS)
            second = None
            if rng.random() < DUPLICATE_SHARE:
                second = (slot + rng.randrange(1, REPLICAS)) % REPLICAS
            steps.append(Step(status, rng.uniform(0, 0.4), slot, second, rng.random() < 0.5))
        jobs.append(JobPlan(1000 + index, (index + rng.random()) * SPACING, tuple(steps)))
    kinds = ["kill", "kill"] + ["restart"] * rng.randint(1, 2)
    rng.shuffle(kinds)
    events = []
    for index, kind in enumerate(kinds):
        if index == 0:
            gap = rng.uniform(1.0, 2.0)
        elif kind != kinds[index - 1]:
            gap = rng.uniform(3.0, 3.5)  # a kill and a restart: far apart (see the module)
        else:
            gap = rng.uniform(1.5, 2.5)
        events.append(Event(kind, gap, rng.randrange(REPLICAS), rng.uniform(0.2, 0.8)))
    return jobs, events


# ---------------------------------------------------------------- what happened, and the checker


@dataclass(frozen=True)
class Post:
    job: int
    status: str
    pid: int
    t: float
    answer: int | str
    """The HTTP status, or what went wrong."""


@dataclass
class Record:
    """What the test did and saw (wall times, ``time.time()``)."""

    posts: list[Post] = field(default_factory=list)
    kills: dict[int, tuple[float, float]] = field(default_factory=dict)
    """pid: (SIGKILL sent, process reaped)."""
    restarts: list[tuple[float, float]] = field(default_factory=list)
    """(SIGKILL sent to Redis, new server answering)."""
    calls: list[tuple[float, int]] = field(default_factory=list)
    """The clients' calls as the service saw them: (arrival, status)."""


@dataclass
class Verdict:
    problems: list[str] = field(default_factory=list)
    exempt: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    takeovers: int = 0


def read_log(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return sorted(lines, key=lambda line: line["t"])


def _show(lines: Iterable[dict[str, Any]], t0: float) -> str:
    return "; ".join(f"{line['event']} pid={line['pid']} t={line['t'] - t0:.3f}" for line in lines)


def check(lines: list[dict[str, Any]], record: Record, claim_after: float) -> Verdict:
    """The fleet's promises against the log (see the module docstring for the rules)."""
    verdict = Verdict()
    t0 = min([p.t for p in record.posts] + [line["t"] for line in lines], default=0.0)
    runs: dict[tuple[int, str], list[dict[str, Any]]] = defaultdict(list)
    for line in lines:
        runs[(line["job"], line["status"])].append(line)
    posted: dict[tuple[int, str], list[Post]] = defaultdict(list)
    for post in record.posts:
        posted[(post.job, post.status)].append(post)
    windows = [(stop, up + RESTART_GRACE) for stop, up in record.restarts]

    def restart_between(start: float, end: float) -> bool:
        return any(stop <= end and start <= until for stop, until in windows)

    def context(key: tuple[int, str]) -> str:
        posts = ", ".join(
            f"pid={p.pid} t={p.t - t0:.3f} -> {p.answer}" for p in posted.get(key, [])
        )
        kills = {pid: round(sent - t0, 3) for pid, (sent, _) in record.kills.items()}
        restarts = [(round(a - t0, 3), round(b - t0, 3)) for a, b in record.restarts]
        return (
            f"job={key[0]} {key[1]}: log [{_show(runs.get(key, []), t0)}]; posts [{posts}];"
            f" kills {kills}; restarts {restarts} (t from the first post)"
        )

    def ended_by(line: dict[str, Any], key: tuple[int, str]) -> bool:
        return any(
            e["event"] == "end" and e["pid"] == line["pid"] and e["t"] >= line["t"]
            for e in runs[key]
        )

    for key in runs:
        if key not in posted:
            verdict.problems.append(f"ran but never posted: {context(key)}")

    # At least once.
    for key, posts in posted.items():
        if not any(p.answer == 204 for p in posts) or any(
            line["event"] == "end" for line in runs.get(key, [])
        ):
            continue
        first = min(p.t for p in posts)
        killed = [record.kills[p.pid][0] for p in posts if p.pid in record.kills]
        if killed and restart_between(first, max(killed) + claim_after + 1.0):
            verdict.exempt["lost to a kill and a restart together"] += 1
            continue
        verdict.problems.append(f"at least once: answered 204, never ended: {context(key)}")

    first_ends = {
        key: [line["t"] for line in key_runs if line["event"] == "end"]
        for key, key_runs in runs.items()
    }

    # Once, and taken over in time.
    for key, key_runs in runs.items():
        starts = [line for line in key_runs if line["event"] == "start"]
        if len(starts) < 2:
            continue
        ends = [line["t"] for line in key_runs if line["event"] == "end"]
        first_post = min((p.t for p in posted.get(key, [])), default=starts[0]["t"])
        settled = (min(ends) if ends else starts[-1]["t"]) + claim_after
        if restart_between(first_post, settled):
            verdict.exempt["ran again after a restart"] += 1
            continue
        for earlier, later in itertools.pairwise(starts):
            kill = record.kills.get(earlier["pid"])
            if kill is None or ended_by(earlier, key):
                verdict.problems.append(
                    f"once: ran again, though its runner pid {earlier['pid']} was not killed"
                    f" before its end: {context(key)}"
                )
            elif later["t"] < kill[0]:
                verdict.problems.append(
                    f"once: taken over before pid {earlier['pid']} was killed: {context(key)}"
                )
            else:
                verdict.takeovers += 1
                # Taken over ``claim_after`` after the kill; Processed, once Matching ended.
                ready, since = kill[0], f"pid {earlier['pid']} was killed"
                job, other = key[0], STATUSES[1 - STATUSES.index(key[1])]
                if key[1] == STATUSES[1]:
                    ready = max(ready, min(first_ends.get((job, other)) or [ready]))
                    since += f" and {other} ended"
                if later["t"] - ready > claim_after + TAKEOVER_SLACK:
                    verdict.problems.append(
                        f"takeover: started {later['t'] - ready:.2f} s after {since}, beyond"
                        f" claim_after + {TAKEOVER_SLACK}: {context(key)} || {context((job, other))}"
                    )

    # Order per job.
    jobs = {job for job, _ in posted}
    for job in sorted(jobs):
        first_key, second_key = (job, STATUSES[0]), (job, STATUSES[1])
        seconds = [line for line in runs.get(second_key, []) if line["event"] == "start"]
        if not seconds:
            continue
        started = seconds[0]["t"]
        allowed = min(
            (line["t"] for line in runs.get(first_key, []) if line["event"] == "end"),
            default=float("inf"),
        )
        for line in runs.get(first_key, []):
            kill = record.kills.get(line["pid"])
            if line["event"] == "start" and kill is not None and not ended_by(line, first_key):
                allowed = min(allowed, kill[0])
        if started >= allowed:
            if started < min(first_ends.get(first_key) or [float("inf")]):
                verdict.exempt["order: the earlier one's runner killed"] += 1
            continue
        first_post = min((p.t for p in posted.get(first_key, [])), default=started)
        if restart_between(first_post, started):
            verdict.exempt["order across a restart"] += 1
            continue
        verdict.problems.append(
            f"order: {STATUSES[1]} started at {started - t0:.3f} before {STATUSES[0]} ended:"
            f" {context(first_key)} || {context(second_key)}"
        )
    return verdict


# ---------------------------------------------------------------- the processes


@dataclass
class Node:
    proc: asyncio.subprocess.Process
    port: int

    @property
    def pid(self) -> int:
        return self.proc.pid


class Fleet:
    """The replica processes in their slots, the Redis server, and what was done to them."""

    def __init__(self, redis: RedisServer, log: Path, errors: Path, seed: int) -> None:
        self.redis = redis
        self.log = log
        self.errors = errors
        self.seed = seed
        self.slots: list[Node | None] = [None] * REPLICAS
        self.all: list[Node] = []
        self.spawned = 0
        self.record = Record()
        self.env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        self.env.pop("SVC_FLEET_URL", None)

    async def spawn(self, name: str, *args: str) -> tuple[asyncio.subprocess.Process, str]:
        """A node process (its stderr in ``errors/<name>-<n>.err``), once it printed
        ``ready``; the rest of that line."""
        self.spawned += 1
        err = self.errors / f"{name}-{self.spawned}.err"
        with err.open("wb") as stderr:
            proc = await asyncio.create_subprocess_exec(
                *(sys.executable, str(NODE), *args),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=stderr,
                env=self.env,
            )
        self.all.append(Node(proc, 0))
        assert proc.stdout is not None
        line = (await asyncio.wait_for(proc.stdout.readline(), 60)).decode()
        word, _, rest = line.strip().partition(" ")
        assert word == "ready", (self.seed, line, err.read_text()[-2000:])
        return proc, rest

    async def start(self, slot: int) -> None:
        args = (self.redis.url, str(self.log), str(self.seed), str(CLAIM_AFTER))
        proc, port = await self.spawn(f"replica{slot}", "replica", *args)
        self.slots[slot] = Node(proc, int(port))

    async def clients(self, url: str, calls: int) -> list[asyncio.subprocess.Process]:
        """``CLIENTS`` client processes, connected and waiting for a line on stdin."""
        args = ("client", self.redis.url, url, str(calls), "3")
        started = await asyncio.gather(*(self.spawn("client", *args) for _ in range(CLIENTS)))
        return [proc for proc, _ in started]

    def running(self) -> set[int]:
        """The pids of live replicas inside a callback now."""
        open_runs: dict[tuple[int, int, str], int] = defaultdict(int)
        for line in read_log(self.log):
            key = (line["pid"], line["job"], line["status"])
            open_runs[key] += 1 if line["event"] == "start" else -1
        return {pid for (pid, _, _), n in open_runs.items() if n > 0} - set(self.record.kills)

    async def kill(self, slot: int) -> asyncio.Task[None]:
        """SIGKILL the replica of ``slot`` (inside a callback if it gets into one within 1 s)
        and start its successor; the task ends when the successor is ready."""
        if self.slots[slot] is None:
            slot = next(i for i, node in enumerate(self.slots) if node is not None)
        node = self.slots[slot]
        assert node is not None
        for _ in range(20):
            if node.pid in self.running():
                break
            await asyncio.sleep(0.05)
        self.slots[slot] = None
        sent = time.time()
        node.proc.kill()
        await node.proc.wait()
        self.record.kills[node.pid] = (sent, time.time())
        return asyncio.get_running_loop().create_task(self.start(slot))

    async def restart_redis(self, down: float) -> None:
        stop = time.time()
        await asyncio.to_thread(self.redis.stop)
        await asyncio.sleep(down)
        await asyncio.to_thread(self.redis.start)
        self.record.restarts.append((stop, time.time()))

    async def close(self) -> None:
        for node in self.all:
            if node.proc.returncode is None:
                node.proc.kill()
            await node.proc.wait()


class Driver:
    """Posts the plan's deliveries to the replicas, as the service would (retrying)."""

    def __init__(self, fleet: Fleet, session: aiohttp.ClientSession) -> None:
        self.fleet = fleet
        self.session = session

    async def post_once(self, job: int, status: str, slot: int) -> bool:
        node = self.fleet.slots[slot]
        if node is None:
            return False
        sent = time.time()
        answer: int | str
        try:
            async with self.session.post(
                f"http://127.0.0.1:{node.port}/webhooks/svc?key=s",
                json={"id": job, "status": status},
            ) as response:
                answer = response.status
        except (aiohttp.ClientError, TimeoutError) as exc:
            answer = type(exc).__name__
        self.fleet.record.posts.append(Post(job, status, node.pid, sent, answer))
        return answer == 204

    async def post(self, job: int, status: str, slot: int) -> None:
        """Until a replica answers 204: the planned one first, then the next ones."""
        deadline = time.monotonic() + 30
        while not await self.post_once(job, status, slot):
            assert time.monotonic() < deadline, (self.fleet.seed, job, status, "never 204")
            slot = (slot + 1) % REPLICAS
            await asyncio.sleep(0.05)

    async def job(self, plan: JobPlan, start: float) -> None:
        await asyncio.sleep(max(0.0, start + plan.at - time.monotonic()))
        for index, step in enumerate(plan.steps):
            if index:
                await asyncio.sleep(step.gap)
            if step.second is None:
                await self.post(plan.job, step.status, step.slot)
            elif step.at_once:
                await asyncio.gather(
                    self.post(plan.job, step.status, step.slot),
                    self.post_once(plan.job, step.status, step.second),
                )
            else:
                await self.post(plan.job, step.status, step.slot)
                await self.post_once(plan.job, step.status, step.second)


async def chaos(fleet: Fleet, events: list[Event]) -> None:
    successors = []
    for event in events:
        await asyncio.sleep(event.gap)
        if event.kind == "kill":
            successors.append(await fleet.kill(event.slot))
        else:
            await fleet.restart_redis(event.down)
    await asyncio.gather(*successors)


async def settle(fleet: Fleet, redis: Any) -> str:
    """Wait until every delivered (job, status) has ended, no callback runs and the
    streams are empty, for ``CLAIM_AFTER`` + 0.5 s in a row (or ``SETTLE_TIMEOUT``)."""
    delivered = {(p.job, p.status) for p in fleet.record.posts if p.answer == 204}
    end = time.monotonic() + SETTLE_TIMEOUT
    calm_since = None
    state = ""
    while time.monotonic() < end:
        lines = read_log(fleet.log)
        ended = {(line["job"], line["status"]) for line in lines if line["event"] == "end"}
        running = fleet.running()
        queued, trouble = 0, ""
        try:
            async for key in redis.scan_iter(match="svc:*:deliveries:*"):
                queued += await redis.xlen(key)
        except Exception as exc:  # reported below, as not settled
            trouble = f" ({exc!r})"
        missing = delivered - ended
        state = f"missing ends {sorted(missing)[:10]}, running {running}, queued {queued}"
        state += trouble
        if not missing and not running and queued == 0 and not trouble:
            calm_since = calm_since or time.monotonic()
            if time.monotonic() - calm_since >= CLAIM_AFTER + 0.5:
                return ""
        else:
            calm_since = None
        await asyncio.sleep(0.1)
    return state


async def redis_snapshot(redis: Any) -> dict[str, Any]:
    keys: dict[str, dict[str, Any]] = {}
    async for raw in redis.scan_iter(match="svc:*"):
        name = raw.decode()
        keys[name] = {
            "type": (await redis.type(raw)).decode(),
            "pttl": await redis.pttl(raw),
            "memory": await redis.memory_usage(raw) or 0,
        }
        if keys[name]["type"] == "stream":
            keys[name]["xlen"] = await redis.xlen(raw)
    return keys


# ---------------------------------------------------------------- the test


@pytest.mark.slow
async def test_the_fleet_keeps_its_promises_under_chaos(tmp_path: Path) -> None:
    import redis.asyncio as aioredis

    seed = _seed()
    print(f"fleet chaos seed {seed} (replay: SVC_CHAOS_SEED={seed})")
    jobs, events = make_plan(seed)
    server = RedisServer(require_binary())
    server.start()
    log, errors = tmp_path / "runs.jsonl", tmp_path / "stderr"
    errors.mkdir()
    fleet = Fleet(server, log, errors, seed)
    began = time.monotonic()
    settled = "not reached"
    answers_429 = failed_calls = -1
    try:
        async with (
            asyncio.timeout(120),
            FakeService(seed=1, rate_limit=(BUDGET, WINDOW)) as fake,
            fake.serve() as url,
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as session,
        ):
            calls = int(JOBS * SPACING * BUDGET / WINDOW / CLIENTS)  # as long as the posting
            replicas = asyncio.gather(*(fleet.start(slot) for slot in range(REPLICAS)))
            clients, _ = await asyncio.gather(fleet.clients(url, calls), replicas)
            fake.reset_counters()
            for proc in clients:
                assert proc.stdin is not None
                proc.stdin.write(b"go\n")
            driver = Driver(fleet, session)
            start = time.monotonic()
            await asyncio.gather(chaos(fleet, events), *(driver.job(p, start) for p in jobs))
            redis = aioredis.Redis.from_url(server.url, socket_timeout=5)
            try:
                settled = await settle(fleet, redis)
                reports = [
                    json.loads(await asyncio.wait_for(proc.stdout.readline(), 60))
                    for proc in clients
                    if proc.stdout is not None
                ]
                await fleet.close()
                snapshot = await redis_snapshot(redis)
            finally:
                await redis.aclose()
            answers_429 = fake.rate_limited
            fleet.record.calls = [(r.time, r.status or 0) for r in fake.requests]
            failed_calls = sum(r["failed"] for r in reports)
    finally:
        await fleet.close()
        server.close()
        (tmp_path / "record.json").write_text(json.dumps(asdict(fleet.record)))
    wall = time.monotonic() - began
    verdict = check(read_log(log), fleet.record, CLAIM_AFTER)
    summary = (
        f"seed={seed} (SVC_CHAOS_SEED={seed}) wall={wall:.1f}s"
        f" posts={len(fleet.record.posts)} kills={len(fleet.record.kills)}"
        f" restarts={len(fleet.record.restarts)} takeovers={verdict.takeovers}"
        f" exempt={dict(verdict.exempt)} 429s={answers_429} failed_calls={failed_calls}"
        f" log={log} (and record.json)"
    )
    print(summary)
    assert not verdict.problems, summary + "\n" + "\n".join(verdict.problems)
    assert settled == "", f"{summary}: not settled within {SETTLE_TIMEOUT} s: {settled}"
    streams = {k: v["xlen"] for k, v in snapshot.items() if v["type"] == "stream"}
    assert all(n == 0 for n in streams.values()), f"{summary}: streams left {streams}"
    no_ttl = {k: v for k, v in snapshot.items() if v["pttl"] <= 0}
    assert not no_ttl, f"{summary}: keys without a TTL {no_ttl}"
    memory = sum(v["memory"] for v in snapshot.values())
    assert memory < MEMORY_BOUND, f"{summary}: {memory} bytes in {len(snapshot)} svc:* keys"
    t0 = min(p.t for p in fleet.record.posts)
    outages = [(stop, up + OUTAGE_429_GRACE) for stop, up in fleet.record.restarts]
    stray = [
        round(t - t0, 3)
        for t, status in fleet.record.calls
        if status == 429 and not any(a <= t <= b for a, b in outages)
    ]
    restarts = [(round(a - t0, 3), round(b - t0, 3)) for a, b in fleet.record.restarts]
    assert not stray, f"{summary}: 429s at {stray}, restarts {restarts} (s from 1st post)"
    assert failed_calls == 0, summary


# ---------------------------------------------------------------- the checker, checked


def _line(pid: int, job: int, status: str, event: str, t: float) -> dict[str, Any]:
    return {"pid": pid, "job": job, "status": status, "event": event, "t": t}


def _clean() -> tuple[list[dict[str, Any]], Record]:
    """A run with one takeover: pid 2 killed inside job 1's Matching, pid 3 takes it over."""
    record = Record(
        posts=[Post(1, "Matching", 1, 0.0, 204), Post(1, "Processed", 2, 0.2, 204)],
        kills={2: (1.0, 1.01)},
    )
    lines = [
        _line(2, 1, "Matching", "start", 0.1),
        _line(3, 1, "Matching", "start", 2.1),
        _line(3, 1, "Matching", "end", 2.2),
        _line(1, 1, "Processed", "start", 2.3),
        _line(1, 1, "Processed", "end", 2.4),
    ]
    return lines, record


def test_the_checker_passes_a_run_with_a_takeover() -> None:
    lines, record = _clean()
    verdict = check(lines, record, CLAIM_AFTER)
    assert (verdict.problems, verdict.takeovers) == ([], 1)


@pytest.mark.parametrize(
    ("change", "rule"),
    [
        (lambda lines, _: lines.append(_line(1, 1, "Processed", "start", 2.5)), "once"),
        (lambda lines, _: lines.append(_line(3, 1, "Matching", "start", 0.5)), "once"),
        (lambda lines, _: lines.__setitem__(3, _line(1, 1, "Processed", "start", 0.9)), "order"),
        (lambda lines, _: lines.pop(), "at least once"),
        (lambda _, record: record.posts.append(Post(9, "Matching", 1, 3.0, 204)), "at least"),
        (lambda lines, _: lines.append(_line(1, 7, "Matching", "start", 2.5)), "never posted"),
        (lambda lines, _: [line.update(t=line["t"] + 2) for line in lines[1:]], "takeover"),
    ],
)
def test_the_checker_catches_each_broken_promise(change: Any, rule: str) -> None:
    lines, record = _clean()
    change(lines, record)
    verdict = check(sorted(lines, key=lambda line: line["t"]), record, CLAIM_AFTER)
    assert any(rule in problem for problem in verdict.problems), verdict.problems


def test_a_restart_in_flight_excuses_a_second_run() -> None:
    lines, record = _clean()
    lines.append(_line(1, 1, "Processed", "start", 3.5))  # re-added: the restart lost it
    record.restarts.append((3.3, 3.35))
    verdict = check(sorted(lines, key=lambda line: line["t"]), record, CLAIM_AFTER)
    assert verdict.problems == []
    assert verdict.exempt == {"ran again after a restart": 1}
