"""A webhook replica or a client of the fleet chaos test (run as a script).

    python tests/fleet/fleet_chaos_node.py replica FLEET_URL LOG SEED CLAIM_AFTER
    python tests/fleet/fleet_chaos_node.py client FLEET_URL SERVICE_URL CALLS CONCURRENCY

A replica serves ``WebhookReceiver("s", fleet=FLEET_URL, claim_after=CLAIM_AFTER)`` on a free
loopback port and prints ``ready <port>`` once it listens. Its status callback appends
JSON lines to LOG (``{"pid", "job", "status", "event": "start"|"end", "t"}``, one
``O_APPEND`` write each, so lines of several processes never mix) around a sleep whose
length depends only on SEED, the job and the status (the same wherever it runs): mostly
short, sometimes longer than CLAIM_AFTER (a live replica must keep such a delivery).
It runs until killed.

A client is the fleet benchmark's worker (``svc_async.testing.fleet.run_worker``): it
connects ``Client(SERVICE_URL, fleet=FLEET_URL)`` with the fake's token, prints ``ready``,
waits for a line on stdin, then makes CALLS ``orgs.list()`` calls, CONCURRENCY at a time,
and prints ``{"ok": n, "failed": n, "elapsed": s}``.

Both log the fleet's INFO lines (the store lost and back, deliveries added again) to
stderr with wall times, for a failure's story.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
import sys
import time

from aiohttp import web

from svc_async.testing.fleet import run_worker
from svc_async.webhooks import JobStatusUpdate, WebhookReceiver

LONG_SHARE = 0.12
"""The share of deliveries whose callback outlasts ``claim_after``."""


def callback_seconds(seed: int, job: int, status: str, claim_after: float) -> float:
    """How long the callback of one delivery sleeps (the same in every replica)."""
    rng = random.Random(f"{seed}:{job}:{status}")
    if rng.random() < LONG_SHARE:
        return rng.uniform(1.2 * claim_after, 1.8 * claim_after)
    return rng.uniform(0.01, 0.15)


def _writer(log: str) -> tuple[int, int]:
    return os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644), os.getpid()


async def replica(fleet: str, log: str, seed: int, claim_after: float) -> None:
    fd, pid = _writer(log)

    def note(update: JobStatusUpdate, event: str) -> None:
        line = {"pid": pid, "job": update.job_id, "status": str(update.status)}
        line.update(event=event, t=time.time())
        os.write(fd, json.dumps(line).encode() + b"\n")  # unbuffered: on disk when killed

    receiver = WebhookReceiver("s", fleet=fleet, claim_after=claim_after)

    @receiver.on_status_update
    async def record(update: JobStatusUpdate) -> None:
        note(update, "start")
        await asyncio.sleep(callback_seconds(seed, update.job_id, str(update.status), claim_after))
        note(update, "end")

    runner = web.AppRunner(receiver.app(), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    print("ready", runner.addresses[0][1], flush=True)
    await asyncio.Event().wait()  # until killed


if __name__ == "__main__":
    logging.basicConfig(
        format="%(created).3f %(process)d %(name)s %(levelname)s %(message)s",
        level=logging.WARNING,
    )
    logging.getLogger("svc_async.fleet").setLevel(logging.INFO)
    logging.getLogger("svc_async.webhooks").setLevel(logging.INFO)
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "replica":
        asyncio.run(replica(args[0], args[1], int(args[2]), float(args[3])))
    else:
        asyncio.run(run_worker(args[1], args[0], int(args[2]), int(args[3])))
