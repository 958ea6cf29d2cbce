"""A process that takes calls from a fleet's budget and never answers them (run as a script).

    python tests/fleet/fleet_holder.py FLEET_URL NAMESPACE CALLS

It learns the budget with one call (limit 10, a window of 60 s), takes CALLS grants in
as many tasks, prints ``holding`` and waits to be killed: its leases are calls in flight
whose holder then dies with them.
"""

from __future__ import annotations

import asyncio
import sys

from multidict import CIMultiDict, CIMultiDictProxy

from svc_async.fleet.budget import FleetPacer
from svc_async.fleet.store import Store


async def main(url: str, namespace: str, calls: int) -> None:
    pacer = FleetPacer(Store(url), namespace)
    await pacer.acquire()
    headers = {"x-ratelimit-limit": "10", "x-ratelimit-remaining": "9", "x-ratelimit-reset": "60"}
    pacer.release(CIMultiDictProxy(CIMultiDict(headers)), 200)
    await pacer.flush()
    held = asyncio.Event()

    async def hold() -> None:
        await pacer.acquire()
        await held.wait()  # the call never ends

    tasks = [asyncio.create_task(hold()) for _ in range(calls)]
    await asyncio.sleep(0.2)
    assert not any(task.done() for task in tasks)
    print("holding", flush=True)
    await held.wait()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
