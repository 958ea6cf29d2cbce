"""The SDK from sync code: one loop thread per process, shared by every call, fork-safe."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import signal
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from svc_async import (
    Client,
    JobWaitTimeout,
    LoopThread,
    MockTransport,
    NotFoundError,
    Request,
    json_response,
)
from svc_async.testing import FakeService

TOKEN = FakeService.DEFAULT_TOKEN


@pytest.fixture
def portal() -> Any:
    thread = LoopThread(name="test-loop")
    yield thread
    thread.close()


def _counting_transport(seen: list[tuple[str, int]]) -> MockTransport:
    """Answers every call with an empty list, noting the thread and loop it ran on."""

    def handler(request: Request) -> Any:
        seen.append((threading.current_thread().name, id(asyncio.get_running_loop())))
        if request.url.path.endswith("/404"):
            return json_response({"message": "no such job"}, status=404)
        return json_response([])

    return MockTransport(handler)


def test_calls_from_many_threads_share_one_client_and_one_loop(portal: LoopThread) -> None:
    seen: list[tuple[str, int]] = []

    def make_client() -> Client:
        return Client("http://svc.test", token="t0k3n", transport=_counting_transport(seen))

    svc = portal.shared(make_client)
    assert portal.shared(make_client) is svc

    def view() -> int:
        return len(portal.run(portal.shared(make_client).orgs.list()))

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda _: view(), range(32)))
    assert results == [0] * 32
    assert len(seen) == 32
    assert {name for name, _ in seen} == {"test-loop"}
    assert len({loop for _, loop in seen}) == 1


def test_an_error_comes_back_to_the_sync_caller_as_itself(portal: LoopThread) -> None:
    svc = Client("http://svc.test", token="t0k3n", transport=_counting_transport([]))
    with pytest.raises(NotFoundError) as caught:
        portal.run(svc.request("GET", "/api/public/v1/verification-job/404"))
    assert caught.value.status == 404
    portal.run(svc.aclose())


def test_run_refuses_what_would_deadlock_or_is_not_a_coroutine(portal: LoopThread) -> None:
    async def inner() -> None:
        coro = asyncio.sleep(0)
        portal.run(coro)

    with pytest.raises(RuntimeError, match="its own loop"):
        portal.run(inner())
    with pytest.raises(TypeError, match="coroutine"):
        portal.run(lambda: None)  # type: ignore[arg-type]


def test_a_timeout_cancels_the_coroutine_on_the_loop(portal: LoopThread) -> None:
    cancelled = threading.Event()
    release = asyncio.Event()

    async def stuck() -> None:
        try:
            await release.wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    with pytest.raises(TimeoutError):
        portal.run(stuck(), timeout=0.05)
    assert cancelled.wait(5)


@pytest.mark.parametrize("timeout", [None, 30.0])
def test_a_timeout_the_coroutine_raises_is_raised_as_it_is(
    portal: LoopThread, timeout: float | None
) -> None:
    """``jobs.wait``'s ``JobWaitTimeout`` (a ``TimeoutError``) keeps its class, message
    and ``job``: only the wait of ``run`` itself running out is its own TimeoutError."""

    async def waits() -> None:
        raise JobWaitTimeout("job 7 is still Matching", job="last seen")

    with pytest.raises(JobWaitTimeout, match="job 7") as info:
        portal.run(waits(), timeout=timeout)
    assert info.value.job == "last seen"


@pytest.mark.parametrize(
    ("timeout", "error"),
    [("5", TypeError), (True, TypeError), (float("nan"), ValueError), (-1, ValueError)],
)
def test_a_bad_timeout_is_refused_before_the_coroutine_starts(
    portal: LoopThread, timeout: Any, error: type[Exception]
) -> None:
    started = threading.Event()

    async def work() -> None:
        started.set()

    with pytest.raises(error, match="timeout"):
        portal.run(work(), timeout=timeout)
    assert portal.run(asyncio.sleep(0.05, "after")) == "after"
    assert not started.is_set()


def test_an_infinite_timeout_is_no_limit(portal: LoopThread) -> None:
    assert portal.run(asyncio.sleep(0, "done"), timeout=float("inf")) == "done"


@pytest.mark.skipif(
    threading.current_thread() is not threading.main_thread(), reason="signals: main thread"
)
def test_an_interrupted_wait_cancels_the_coroutine(portal: LoopThread) -> None:
    """Whatever ends the caller's wait (Ctrl-C: a ``KeyboardInterrupt``) ends the
    coroutine too: nothing runs on for a caller that is gone."""
    cancelled = threading.Event()

    async def stuck() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    ctrl_c = threading.Timer(0.1, os.kill, (os.getpid(), signal.SIGINT))
    ctrl_c.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            portal.run(stuck(), timeout=30)
    finally:
        ctrl_c.cancel()
    assert cancelled.wait(5)


def test_close_closes_the_shared_client_and_refuses_more_calls() -> None:
    portal = LoopThread()
    svc = portal.shared(
        lambda: Client(
            "http://svc.test", token="t", transport=MockTransport(lambda r: json_response([]))
        )
    )
    portal.run(svc.orgs.list())
    portal.close()
    portal.close()  # idempotent
    assert "closed" in repr(portal)
    with pytest.raises(RuntimeError, match="closed"):
        portal.run(asyncio.sleep(0))
    assert portal._thread is not None and not portal._thread.is_alive()
    assert "closed" in repr(svc)


def test_for_process_is_one_per_process() -> None:
    first = LoopThread.for_process()
    assert LoopThread.for_process() is first
    assert first.pid == os.getpid()


def _child(url: str, parent_loop: int, answer: Any) -> None:
    """In a forked child: the process's loop thread is a new one, and it works."""
    portal = LoopThread.for_process()
    loop_id = id(portal.loop)
    svc = portal.shared(_make_fake_client_factory(url))
    orgs = portal.run(svc.orgs.list())
    answer.put((portal.pid == os.getpid(), loop_id != parent_loop, len(orgs)))
    portal.close()


_FACTORIES: dict[str, Any] = {}


def _make_fake_client_factory(url: str) -> Any:
    if url not in _FACTORIES:
        _FACTORIES[url] = lambda: Client(url, token=TOKEN)
    return _FACTORIES[url]


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX")
def test_a_forked_child_starts_its_own_loop_thread_and_calls_through_it() -> None:
    """Celery's prefork pool and gunicorn --preload fork after the parent used the SDK."""
    server = LoopThread(name="fake-server")
    fake = FakeService(seed=1)
    serving = fake.serve()
    url = server.run(serving.__aenter__())
    try:
        parent = LoopThread.for_process()
        svc = parent.shared(_make_fake_client_factory(url))
        expected = len(parent.run(svc.orgs.list()))
        context = multiprocessing.get_context("fork")
        answer = context.Queue()
        child = context.Process(target=_child, args=(url, id(parent.loop), answer))
        child.start()
        result = answer.get(timeout=60)
        child.join(60)
        assert child.exitcode == 0
        assert result == (True, True, expected)
        # the parent's thread and client still serve the parent
        assert len(parent.run(svc.orgs.list())) == expected
        parent.close()
    finally:
        server.run(serving.__aexit__(None, None, None))
        server.close()
