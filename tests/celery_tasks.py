"""Celery tasks that call the SDK as docs/guides/sync-code.md shows, for a real worker.

The worker's parent process touches its loop thread at import (as an app that warms up
would), so its prefork children prove they start their own after the fork.
"""

from __future__ import annotations

import os

from celery import Celery

from svc_async import Client, LoopThread, NotFoundError

BROKER = os.environ.get("SVC_TEST_BROKER", "redis://127.0.0.1:6379/0")
app = Celery("svc_tests", broker=BROKER, backend=BROKER)
app.conf.update(worker_hijack_root_logger=False, broker_connection_retry_on_startup=True)

PARENT_LOOP = LoopThread.for_process().loop  # the parent's thread, started before the fork


def make_client() -> Client:
    return Client(os.environ["SVC_TEST_FAKE_URL"], token=os.environ["SVC_TEST_TOKEN"])


@app.task
def org_count() -> tuple[int, int, int]:
    """(this process's id, its client's id, the number of organisations)."""
    portal = LoopThread.for_process()
    svc = portal.shared(make_client)
    return os.getpid(), id(svc), len(portal.run(svc.orgs.list(timeout=10)))


@app.task
def missing_job() -> None:
    portal = LoopThread.for_process()
    portal.run(portal.shared(make_client).jobs.get(987654, timeout=10))


__all__ = ["NotFoundError", "app", "missing_job", "org_count"]
