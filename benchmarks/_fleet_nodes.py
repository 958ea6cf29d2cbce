"""The processes of ``bench_fleet.py``'s cross-process measures (run as a script).

    python benchmarks/_fleet_nodes.py caller URL FLEET ACCOUNT CONCURRENCY TOKEN
    python benchmarks/_fleet_nodes.py replica FLEET
    python benchmarks/_fleet_nodes.py waiter FLEET COUNT

* ``caller``: a ``Client(URL, fleet=FLEET, account=ACCOUNT)``; prints ``ready`` once
  connected, starts on a ``go`` line, makes ``orgs.list`` calls CONCURRENCY at a time
  until a ``stop`` line (or end of input), then prints one JSON line: the wall times
  (``time.time()``) at which calls succeeded and the count of failed ones. Pointed at a
  server that never answers it holds its grants in flight until it is killed.
* ``replica``: a ``WebhookReceiver("s", fleet=FLEET)`` with a status callback, served on
  a free 127.0.0.1 port (printed once the receiver listens); ends when its input closes.
* ``waiter``: a ``WebhookReceiver("s", fleet=FLEET)`` subscribed to jobs 1..COUNT; prints
  ``ready`` once subscribed to the fleet's wake-ups, then ``"<job id> <wall time>"`` as
  each job's update wakes it, in order.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

from aiohttp import web

from svc_async import Client
from svc_async.webhooks import JobStatusUpdate, WebhookReceiver


async def _line() -> str:
    return await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)


async def caller(url: str, fleet: str, account: str, concurrency: int, token: str) -> None:
    async with Client(url, token=token, fleet=fleet, account=account) as svc:
        from redis.asyncio import Redis

        probe = Redis.from_url(fleet)
        await probe.ping()  # connected before the start, like a warm process
        await probe.aclose()
        print("ready", flush=True)
        await _line()  # go
        done: list[float] = []
        failed = 0

        async def one() -> None:
            nonlocal failed
            while True:
                try:
                    await svc.orgs.list()
                    done.append(time.time())
                except Exception:  # counted: a failed call is a figure
                    failed += 1

        workers = [asyncio.create_task(one()) for _ in range(concurrency)]
        await _line()  # stop
        for task in workers:
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
    print(json.dumps({"done": done, "failed": failed}), flush=True)


async def replica(fleet: str) -> None:
    receiver = WebhookReceiver("s", fleet=fleet)

    @receiver.on_status_update
    async def handled(update: JobStatusUpdate) -> None:
        pass

    runner = web.AppRunner(receiver.app(), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    receiver.subscribe(0)  # listen to the wake-up channel too, as a replica with waiters
    await asyncio.wait_for(receiver._backend.wake.ready.wait(), 10)
    print(runner.addresses[0][1], flush=True)
    while await _line():
        pass
    await runner.cleanup()


async def waiter(fleet: str, count: int) -> None:
    async with WebhookReceiver("s", fleet=fleet) as receiver:
        subs = [receiver.subscribe(job_id) for job_id in range(1, count + 1)]
        await asyncio.wait_for(receiver._backend.wake.ready.wait(), 10)
        print("ready", flush=True)
        for sub in subs:  # woken in this order, one at a time
            await asyncio.wait_for(sub.event.wait(), 30)
            print(sub.job_id, time.time(), flush=True)


if __name__ == "__main__":
    role, args = sys.argv[1], sys.argv[2:]
    if role == "caller":
        asyncio.run(caller(args[0], args[1], args[2], int(args[3]), args[4]))
    elif role == "replica":
        asyncio.run(replica(args[0]))
    elif role == "waiter":
        asyncio.run(waiter(args[0], int(args[1])))
    else:
        raise SystemExit(f"unknown role {role!r}")
