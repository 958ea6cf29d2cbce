"""A webhook replica or a waiter process of the fleet tests (run as a script).

    python tests/fleet/fleet_replica.py replica FLEET_URL PORT LOG HANG_JOB
    python tests/fleet/fleet_replica.py waiter FLEET_URL JOB_ID...

A replica serves ``WebhookReceiver(secret="s", fleet=..., claim_after=0.5)`` on PORT; its
status callback appends ``"<pid> <job id>"`` to LOG, and the fleet's first run of
HANG_JOB hangs for good (after logging ``"<pid> <job id> started"``). A waiter subscribes
to each JOB_ID and prints the wall time at which each update woke it, in the order given.
Both print ``ready`` once they listen.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

from aiohttp import web

from svc_async.webhooks import JobStatusUpdate, WebhookReceiver


def _append(log: str, line: str) -> bool:
    """Log ``<pid> line``; True when no process had logged ``line`` before."""
    path = Path(log)
    before = path.read_text() if path.exists() else ""
    with path.open("a") as out:
        out.write(f"{os.getpid()} {line}\n")
    return f" {line}\n" not in before


async def replica(fleet: str, port: int, log: str, hang: int) -> None:
    receiver = WebhookReceiver("s", fleet=fleet, claim_after=0.5)

    @receiver.on_status_update
    async def record(update: JobStatusUpdate) -> None:
        first = _append(log, f"{update.job_id} started")
        if update.job_id == hang and first:
            await asyncio.Event().wait()  # the first run of HANG_JOB hangs: killed here
        _append(log, str(update.job_id))

    runner = web.AppRunner(receiver.app(), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    receiver.subscribe(0)  # join the wake-up channel too
    await asyncio.wait_for(receiver._backend.wake.ready.wait(), 10)
    print("ready", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    await runner.cleanup()


async def waiter(fleet: str, job_ids: list[int]) -> None:
    async with WebhookReceiver("s", fleet=fleet) as receiver:
        subs = [receiver.subscribe(job_id) for job_id in job_ids]
        await asyncio.wait_for(receiver._backend.wake.ready.wait(), 10)
        print("ready", flush=True)
        for sub in subs:  # woken in this order
            await asyncio.wait_for(sub.event.wait(), 30)
            print(time.time(), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "replica":
        asyncio.run(replica(sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5])))
    else:
        asyncio.run(waiter(sys.argv[2], [int(job_id) for job_id in sys.argv[3:]]))
