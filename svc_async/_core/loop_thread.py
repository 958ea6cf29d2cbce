"""One event loop in a background thread per process: the SDK from sync code.

A Flask or Django view, a Celery task or a WSGI server's thread has no event loop of its
own. ``asyncio.run`` per call would make a new loop, a new connection pool and a new pacer
each time (and a ``Client`` refuses a second loop). A ``LoopThread`` keeps one loop running
in a daemon thread, so every call of the process shares one client, one pool, one pacer
and one budget; ``run`` hands a coroutine to that loop and blocks until it is done.

Ours rather than anyio's blocking portal: the default install then needs no anyio, and
the one promise a portal does not keep for us, a fork (Celery's prefork pool, gunicorn
``--preload``), is kept here: a child process never uses its parent's thread (which does
not exist in the child) but starts its own on first use. The check is the process id,
read on each use, so the library registers no process-wide fork hook.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import math
import os
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, ClassVar, TypeVar

from .validate import seconds

T = TypeVar("T")

__all__ = ["LoopThread"]


class LoopThread:
    """An event loop running in a daemon thread, for calling async code from sync code.

    ``LoopThread.for_process()`` gives the process's own (started on first use, anew in a
    forked child); ``LoopThread()`` makes a private one. ``run(coro)`` runs a coroutine
    there and returns its result or raises its exception; ``shared(factory)`` keeps one
    object per thread (a ``Client``), made on first use; ``close()`` closes those objects
    (``aclose``), stops the loop and joins the thread.
    """

    _process: ClassVar[LoopThread | None] = None
    _process_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, *, name: str = "svc_async-loop") -> None:
        self.name = name
        self.pid = os.getpid()
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._shared: dict[Callable[[], Any], Any] = {}
        self._closed = False

    def __repr__(self) -> str:
        state = "closed" if self._closed else "running" if self._thread else "not started"
        return f"<LoopThread {self.name} pid={self.pid} {state}>"

    @classmethod
    def for_process(cls) -> LoopThread:
        """The process's loop thread: one per process, a new one in a forked child."""
        with cls._process_lock:
            current = cls._process
            if current is None or current.pid != os.getpid() or current.closed:
                current = cls._process = cls()
            return current

    @property
    def closed(self) -> bool:
        """Whether ``close()`` was called."""
        return self._closed

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The running loop (the thread starts on first use)."""
        return self._start()

    def _start(self) -> asyncio.AbstractEventLoop:
        if self.pid != os.getpid():
            raise RuntimeError(
                "this LoopThread belongs to the parent process: use LoopThread.for_process()"
            )
        with self._lock:
            if self._closed:
                raise RuntimeError("this LoopThread is closed")
            if self._loop is None:
                loop = asyncio.new_event_loop()
                started = threading.Event()
                thread = threading.Thread(
                    target=self._serve, args=(loop, started), name=self.name, daemon=True
                )
                thread.start()
                started.wait()
                self._loop, self._thread = loop, thread
            return self._loop

    @staticmethod
    def _serve(loop: asyncio.AbstractEventLoop, started: threading.Event) -> None:
        asyncio.set_event_loop(loop)
        loop.call_soon(started.set)
        try:
            loop.run_forever()
        finally:
            loop.close()

    def run(self, coro: Coroutine[Any, Any, T], *, timeout: float | None = None) -> T:
        """Run ``coro`` on the loop thread and wait for its result (or exception).

        ``timeout`` (seconds; None or infinite: no limit) cancels it there and raises
        ``TimeoutError``; the SDK's own ``timeout=`` options bound a call better, since
        they end it where it is. Whatever else ends the wait (a ``KeyboardInterrupt``)
        cancels it too. Called from the loop thread itself, it raises ``RuntimeError``
        instead of deadlocking.
        """
        if not asyncio.iscoroutine(coro):
            raise TypeError(f"run() takes a coroutine, not {type(coro).__name__}")
        try:
            limit = None if timeout is None or timeout == math.inf else seconds(timeout, "timeout")
            loop = self._start()
            if threading.current_thread() is self._thread:
                raise RuntimeError("LoopThread.run() called from its own loop: await instead")
        except (RuntimeError, TypeError, ValueError):
            coro.close()  # never started: no "never awaited" warning on the caller
            raise
        future = asyncio.run_coroutine_threadsafe(coro, loop)
        try:
            done, _ = concurrent.futures.wait([future], limit)
        except BaseException:
            future.cancel()
            raise
        if not done:
            future.cancel()
            raise TimeoutError(f"not done within {timeout} s")
        return future.result()  # its own exception as it is, a TimeoutError included

    def shared(self, factory: Callable[[], T]) -> T:
        """The one object ``factory`` makes for this thread, made on first use.

        Keyed by the factory itself, so give a module-level function (``make_client``).
        In a forked child, ``for_process()`` is a new thread with objects of its own.
        """
        with self._lock:
            if factory not in self._shared:
                self._shared[factory] = factory()
            value: T = self._shared[factory]
            return value

    def close(self, *, timeout: float = 10.0) -> None:
        """Close the shared objects (their ``aclose``), stop the loop and join the thread.

        Idempotent; from the loop thread itself it raises ``RuntimeError``.
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
            loop, thread, shared = self._loop, self._thread, list(self._shared.values())
            self._shared.clear()
        if loop is None or thread is None or self.pid != os.getpid():
            return
        if threading.current_thread() is thread:
            raise RuntimeError("LoopThread.close() called from its own loop")
        closers = [obj.aclose() for obj in shared if callable(getattr(obj, "aclose", None))]
        if closers:
            done = asyncio.run_coroutine_threadsafe(_gather(closers), loop)
            try:
                done.result(timeout)
            except concurrent.futures.TimeoutError:
                done.cancel()
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout)


async def _gather(closers: list[Awaitable[Any]]) -> None:
    await asyncio.gather(*closers, return_exceptions=True)
