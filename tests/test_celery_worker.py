"""The sync-code recipe under a real Celery worker: prefork children, each with its own
loop thread and client, every task's call through it; a Redis broker and result backend."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from svc_async import LoopThread
from svc_async.testing import FakeService

from .redis_server import RedisServer

HERE = Path(__file__).parent


@pytest.mark.slow
def test_prefork_children_each_call_through_a_loop_thread_of_their_own(
    redis_server: RedisServer,
) -> None:
    server = LoopThread(name="fake-server")
    fake = FakeService(seed=1)
    serving = fake.serve()
    url = server.run(serving.__aenter__())
    env = {
        **os.environ,
        "PYTHONPATH": str(HERE.parent),
        "SVC_TEST_BROKER": redis_server.url,
        "SVC_TEST_FAKE_URL": url,
        "SVC_TEST_TOKEN": FakeService.DEFAULT_TOKEN,
    }
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "tests.celery_tasks",
            "worker",
            "-P",
            "prefork",
            "-c",
            "2",
            "--loglevel=WARNING",
            "--without-heartbeat",
            "--without-gossip",
            "--without-mingle",
        ],
        cwd=HERE.parent,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    os.environ["SVC_TEST_BROKER"] = redis_server.url
    try:
        from . import celery_tasks

        celery_tasks.app.conf.update(broker_url=redis_server.url, result_backend=redis_server.url)
        results = [celery_tasks.org_count.delay() for _ in range(12)]
        answers = [r.get(timeout=60) for r in results]
        expected = len(server.run(_org_count(url)))
        assert {count for _, _, count in answers} == {expected}
        clients: dict[int, set[int]] = defaultdict(set)
        for pid, client, _ in answers:
            clients[pid].add(client)
        assert worker.pid not in clients  # the tasks ran in the children
        assert 1 <= len(clients) <= 2
        assert all(len(ids) == 1 for ids in clients.values())  # one client per child
        failed = celery_tasks.missing_job.delay()
        with pytest.raises(Exception) as caught:
            failed.get(timeout=60)
        assert "404" in str(caught.value) or type(caught.value).__name__ == "NotFoundError"
    finally:
        worker.send_signal(signal.SIGTERM)
        try:
            worker.wait(30)
        finally:
            if worker.poll() is None:
                worker.kill()
        os.environ.pop("SVC_TEST_BROKER", None)
        server.run(serving.__aexit__(None, None, None))
        server.close()
    assert worker.stderr is not None
    errors = worker.stderr.read().decode()
    worker.stderr.close()
    assert worker.returncode == 0, errors[-2000:]


async def _org_count(url: str) -> Any:
    from svc_async import Client

    async with Client(url, token=FakeService.DEFAULT_TOKEN) as svc:
        return await svc.orgs.list()
