"""``WebhookReceiver``: the one entry point every adapter calls, over one delivery backend.

``await receiver.receive(body, query, headers)`` applies the rules of
``svc_async.webhooks.core`` (secret, size, parse) and answers with an ``Answer``; an
accepted delivery is claimed and queued in the backend chosen when the receiver was
made, as redis-py's ``ConnectionPool(connection_class=...)`` chooses its connections:
``MemoryBackend`` (this process), or with ``fleet=`` (or ``SVC_FLEET_URL``) the fleet's
``RedisBackend``. Callbacks run in the background and failed ones are retried
(``delivery``); duplicates are dropped, test deliveries ignored, and the ``jobs.wait``
calls of a ``Client(..., webhooks=receiver)`` woken. The aiohttp adapter
(``routes``, ``app``, ``handle``) is ``svc_async.webhooks.aiohttp``.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Self, TypeVar

from .._core import validate as _validate
from .._core.loop_thread import LoopThread
from ..clock import SYSTEM_CLOCK, Clock, wait_tasks
from ..errors import WebhookPayloadError, WebhookVerificationError
from ..fleet import fleet_url
from ..retry import RetryPolicy
from . import aiohttp as adapter
from .asgi import AsgiApp
from .body import read_body
from .core import (
    ACCEPTED,
    CLOSING,
    DEFAULT_PATH,
    MAX_BODY,
    TOO_LARGE,
    UNAUTHORIZED,
    Answer,
    Inbound,
    Secrets,
    refusal,
)
from .delivery import Callbacks, MemoryBackend, ReceiverStats
from .payloads import (
    Delivery,
    EntryCallback,
    EntryUpdate,
    JobStatusUpdate,
    OutputFileCallback,
    OutputFileUpdate,
    StatusCallback,
    describe,
)
from .waiters import JobSubscription, Waiters
from .wsgi import WsgiApp

if TYPE_CHECKING:
    from aiohttp import web
    from opentelemetry.metrics import MeterProvider

    from .._pipeline.metrics import Metrics

logger = logging.getLogger(__name__)

__all__ = ["DEFAULT_CALLBACK_RETRY", "Verifier", "WebhookPayloadError", "WebhookReceiver"]

DEFAULT_CALLBACK_RETRY = RetryPolicy(attempts=5, wait_initial=1.0, wait_max=30.0)
"""How failed callbacks are retried by default: 5 runs, waits of up to 1, 2, 4, 8 s."""

_U = TypeVar("_U", JobStatusUpdate, EntryUpdate, OutputFileUpdate)

Verifier = Callable[[Any, bytes], Awaitable[None] | None]
"""A hook run on each delivery (the adapter's request, aiohttp's ``web.Request``, and the
raw body) before parsing; it raises ``WebhookVerificationError`` to refuse the delivery
(for a future signature scheme)."""

Body = bytes | bytearray | memoryview | AsyncIterable[bytes]
"""A request body: whole, or streamed in chunks (read within the receiver's timeouts)."""


def _check_arguments(
    *,
    verifier: object,
    callback_retry: object,
    clock: object,
    seconds: dict[str, object],
    account: object,
) -> None:
    """``WebhookReceiver``'s arguments checked, in order (``seconds``: the durations)."""
    if verifier is not None and not callable(verifier):
        raise TypeError("verifier must be callable")
    if not isinstance(callback_retry, RetryPolicy):
        raise TypeError("callback_retry must be a RetryPolicy")
    if clock is not None and not isinstance(clock, Clock):
        raise TypeError("clock must implement the Clock protocol (now, wall and sleep)")
    for name, value in seconds.items():
        _validate.positive_seconds(value, name)
    _validate.account_name(account)


def _metrics(setting: object) -> Metrics | None:
    """The instruments of ``WebhookReceiver(metrics=...)``: None when off (nothing of
    OpenTelemetry imported), as ``Client(metrics=...)``."""
    if setting is False or setting is None:
        return None
    try:
        from .._pipeline.metrics import metrics_for
    except ImportError as exc:
        raise ImportError(
            "WebhookReceiver(metrics=...) needs OpenTelemetry: pip install 'svc-async[otel]'"
        ) from exc
    return metrics_for(setting)


class WebhookReceiver:
    """Receives the service's webhooks, in aiohttp (``routes``, ``app``) or through
    ``receive`` from any framework.

    ``secret`` (a string, or several during a rotation) must equal the ``secret_param``
    query parameter of each delivery (compared with ``hmac.compare_digest``); without it
    the request gets 401 and nothing is dispatched. The body is then read whole, up to
    ``MAX_BODY`` bytes (413 beyond); a streamed one piece by piece within
    ``read_timeout`` seconds and all of it within ``body_timeout`` (408 otherwise).
    ``verifier`` runs next, for a future signature scheme. An accepted delivery is
    answered 204 once it is queued (a malformed one 400); callbacks registered with
    ``on_status_update``, ``on_entry_update`` and ``on_output_file`` run in the
    background (``drain``/``aclose`` wait for them), and the ones that raise are run
    again as ``callback_retry`` says. Duplicates within the last ``dedupe_size``
    delivery slots are dropped: the same (job id, status); an entry delivered with the
    same content as its previous delivery; the same output file status. A delivery
    counts as seen from its arrival, but is forgotten again if its callbacks are given
    up, so a redelivery is handled anew. Test deliveries never reach callbacks or
    waiters. ``clock`` is where the waits between callback attempts run (default: the
    system clock).

    ``fleet`` (default ``SVC_FLEET_URL``), a Redis URL, makes replicas act as one
    (``svc_async.webhooks.redis``): deduplicated fleet-wide over the last ``dedupe_size``
    deliveries within ``dedupe_window`` seconds, callbacks run by one replica that has
    them (a crashed one's taken over after ``claim_after`` seconds; a live one's never),
    in order per job, and ``jobs.wait`` woken in every process. Replicas that share a
    secret share its deliveries, through a rotation too; ``account`` (any name: the same
    one on every replica and on ``Client(account=...)``) puts all of them in the
    account's namespace instead, where a fleet client alone wakes on them.

    ``metrics=True`` (the ``otel`` extra) counts the deliveries received, run and given
    up (``svc_async.webhook.deliveries``) and, in a fleet, the store's outages, on the
    global OpenTelemetry meter provider, or on the ``MeterProvider`` given, as
    ``Client(metrics=...)`` does.
    """

    def __init__(
        self,
        secret: str | Sequence[str] | None = None,
        secret_param: str = "key",
        *,
        verifier: Verifier | None = None,
        dedupe_size: int = 10_000,
        callback_retry: RetryPolicy = DEFAULT_CALLBACK_RETRY,
        read_timeout: float = 10.0,
        body_timeout: float = 60.0,
        clock: Clock | None = None,
        fleet: str | None = None,
        claim_after: float = 30.0,
        account: str | None = None,
        dedupe_window: float = 600.0,
        metrics: bool | MeterProvider = False,
    ) -> None:
        self._secrets = Secrets(secret, secret_param)
        _check_arguments(
            verifier=verifier,
            callback_retry=callback_retry,
            clock=clock,
            seconds={
                "read_timeout": read_timeout,
                "body_timeout": body_timeout,
                "claim_after": claim_after,
                "dedupe_window": dedupe_window,
            },
            account=account,
        )
        self.secret_param = secret_param
        self._verifier = verifier
        self.callback_retry = callback_retry
        self.read_timeout = float(read_timeout)
        self.body_timeout = float(body_timeout)
        self.clock: Clock = SYSTEM_CLOCK if clock is None else clock
        """Where the waits between callback attempts and the drain deadlines run."""
        self.stats = ReceiverStats()
        """Counters of what the receiver did."""
        self.metrics = _metrics(metrics)
        """The OpenTelemetry instruments of ``metrics=`` (None when off)."""
        self._callbacks = Callbacks(self.stats, callback_retry, self.metrics)
        self._waiters = Waiters()
        self._backend: MemoryBackend
        url = fleet_url(fleet)
        if url is None:
            self._backend = MemoryBackend(
                self._callbacks, self._waiters, dedupe_size=dedupe_size, clock=self.clock
            )
        else:
            from .redis import RedisBackend  # redis is imported only for a fleet

            self._backend = RedisBackend(
                url,
                self._callbacks,
                self._waiters,
                secrets=self._secrets,
                account=account,
                clock=self.clock,
                claim_after=claim_after,
                dedupe_window=dedupe_window,
                dedupe_size=dedupe_size,
                metrics=self.metrics,
            )
        self._tasks: set[asyncio.Task[Any]] = set()  # dispatches still settling
        self._closed = False
        self._warned_open = False

    def __repr__(self) -> str:
        secured = "secret" if self._secrets else "NO secret"
        return (
            f"<WebhookReceiver {secured} param={self.secret_param!r}"
            f" callbacks={len(self._callbacks)} pending={self.pending}>"
        )

    # ------------------------------------------------------------ registration

    def on_status_update(self, callback: StatusCallback) -> StatusCallback:
        """Register ``callback`` (sync or async) for real status updates; works as a decorator."""
        return self._register(self._callbacks.status, callback)

    def on_entry_update(self, callback: EntryCallback) -> EntryCallback:
        """Register ``callback`` (sync or async) for entry updates (``EntryUpdate``)."""
        return self._register(self._callbacks.entry, callback)

    def on_output_file(self, callback: OutputFileCallback) -> OutputFileCallback:
        """Register ``callback`` (sync or async) for output files (``OutputFileUpdate``)."""
        return self._register(self._callbacks.output, callback)

    def _register(
        self,
        into: list[Callable[[_U], Awaitable[None] | None]],
        callback: Callable[[_U], Awaitable[None] | None],
    ) -> Callable[[_U], Awaitable[None] | None]:
        if not callable(callback):
            raise TypeError("callback must be callable")
        into.append(callback)
        self._backend.refresh()
        return callback

    # ------------------------------------------------------------ ASGI, WSGI, sync code

    max_body = MAX_BODY
    """Largest body accepted (bytes); a larger one is answered 413."""

    def asgi(self) -> AsgiApp:
        """An ASGI 3 app (http and lifespan): ``app.mount("/webhooks/svc", receiver.asgi())``
        in FastAPI or Starlette, Litestar's ``asgi(..., is_mount=True)``, or alone under
        uvicorn or hypercorn. A mounted app gets no lifespan of its own: pass
        ``lifespan=receiver.lifespan`` to the parent."""
        return AsgiApp(self)

    @contextlib.asynccontextmanager
    async def lifespan(self, app: object = None) -> AsyncIterator[None]:
        """A Starlette/FastAPI/Litestar lifespan: takes the fleet's deliveries from startup
        and drains the receiver at shutdown (``FastAPI(lifespan=receiver.lifespan)``)."""
        self.start()
        try:
            yield
        finally:
            await self.aclose()

    def wsgi(self, portal: LoopThread | None = None) -> WsgiApp:
        """A WSGI app for Flask, Django on WSGI and gunicorn's sync workers; the receiver
        runs on the process's ``LoopThread`` (or ``portal``)."""
        return WsgiApp(self, portal)

    def close(self, timeout: float | None = 10.0, *, portal: LoopThread | None = None) -> None:
        """``aclose`` from sync code (a WSGI server's SIGTERM handler), on the loop thread the
        WSGI app runs the receiver on: new deliveries get 503, running callbacks finish."""
        (portal or LoopThread.for_process()).run(self.aclose(timeout))

    # ------------------------------------------------------------ the aiohttp adapter

    def routes(self, path: str = DEFAULT_PATH) -> list[web.RouteDef]:
        """Route definitions to add to your app: ``app.add_routes(receiver.routes())``."""
        return adapter.routes(self, path)

    def app(self, path: str = DEFAULT_PATH) -> web.Application:
        """A small aiohttp application serving only the receiver; it drains on shutdown."""
        return adapter.app(self, path)

    async def handle(self, request: web.Request) -> web.Response:
        """The aiohttp handler: ``receive`` with the request's streamed body."""
        return await adapter.handle(self, request)

    def warn_if_open(self) -> None:
        """Warn once that a receiver without a secret is being served."""
        if not self._secrets and not self._warned_open:
            self._warned_open = True
            logger.warning(
                "WebhookReceiver has no secret: anyone who can reach it can post status updates"
            )

    # ------------------------------------------------------------ the entry point

    def check_secret(self, value: str | None) -> bool:
        """Whether ``value`` (the query parameter, None when absent) is an accepted secret."""
        return self._secrets.index(value) is not None

    async def receive(
        self, body: Body, query: Any, headers: Mapping[str, str], *, request: Any = None
    ) -> Answer:
        """Answer one POSTed delivery from its parts: the ``body`` (bytes, or an async
        iterable of chunks), the ``query`` (a multi-mapping: a repeated secret is
        refused) and the ``headers``. ``request`` is handed to the ``verifier``."""
        self.stats.received += 1
        self.warn_if_open()
        secret = self._secrets.of_query(query)
        if secret is None:
            return self._refused(UNAUTHORIZED, "wrong or missing secret")
        if self._closed:
            self._callbacks.received(None, "closing")
            return CLOSING
        raw = await self._read(body, headers)
        if isinstance(raw, Answer):  # too large, too slow or cut short
            return self._refused(raw, raw.body.decode())
        try:
            if self._verifier is not None:
                verdict = self._verifier(request, raw)
                if inspect.isawaitable(verdict):
                    await verdict
            inbound = Inbound.from_body(raw, headers)
        except WebhookVerificationError as exc:
            return self._refused(UNAUTHORIZED, f"refused by verifier: {exc}")
        except WebhookPayloadError as exc:
            return self._refused(refusal(400, str(exc)), f"bad payload: {exc}")
        await self._take(inbound, secret)
        return ACCEPTED

    async def _read(self, body: Body, headers: Mapping[str, str]) -> bytes | Answer:
        """The whole body, or the answer refusing it."""
        if isinstance(body, bytes | bytearray | memoryview):
            return TOO_LARGE if len(body) > MAX_BODY else bytes(body)
        length = headers.get("Content-Length", "")
        if length.isdigit() and int(length) > MAX_BODY:
            return TOO_LARGE
        return await read_body(body, read_timeout=self.read_timeout, body_timeout=self.body_timeout)

    def _refused(self, answer: Answer, reason: str) -> Answer:
        self.stats.rejected += 1
        self._callbacks.received(None, "rejected")
        logger.warning("webhook refused: %s", reason)
        return answer

    # ------------------------------------------------------------ dispatching

    def dispatch(self, update: Delivery) -> bool:
        """Hand a parsed delivery to waiters and its kind's callbacks, in the background.

        Use it from sync code of the event loop's thread, once you have checked the
        secret yourself. Returns False for a test delivery; a duplicate is dropped in
        the background (``await accept(update)`` waits for the verdict).
        """
        if update.is_test:
            return self._test_delivery(update)
        task = asyncio.get_running_loop().create_task(self.accept(update))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return True

    async def accept(self, update: Delivery) -> bool:
        """Take a parsed delivery: True once it is queued, False when it was a test
        delivery or a duplicate. In a fleet it counts as having come with the first
        secret."""
        return await self._take(Inbound.of(update), 0)

    async def _take(self, inbound: Inbound, secret: int) -> bool:
        """Claim and queue a delivery that came with the ``secret``-th secret."""
        update = inbound.update
        if update.is_test:
            return self._test_delivery(update)
        key = self._backend.key(inbound, secret)
        if not await self._backend.claim(key):
            self.stats.duplicates += 1
            self._callbacks.received(update, "duplicate")
            logger.debug("duplicate webhook delivery dropped: %s", describe(update))
            return False
        self.stats.dispatched += 1
        self._callbacks.received(update, "accepted")
        if isinstance(update, JobStatusUpdate):
            self._backend.announce(update)
        await self._backend.submit(self._callbacks.job(key, update, inbound.body))
        return True

    def _test_delivery(self, update: Delivery) -> bool:
        self.stats.tests += 1
        self._callbacks.received(update, "test")
        logger.info("webhook test delivery received and ignored")
        return False

    # ------------------------------------------------------------ waiters (for jobs.wait)

    def subscribe(self, job_id: int, event: asyncio.Event | None = None) -> JobSubscription:
        """Register interest in ``job_id``; ``event`` (shared or new) is set on each update.

        Pair every call with ``unsubscribe`` (in a ``finally``), or the receiver keeps it.
        In a fleet, updates received by any replica wake this process too.
        """
        self._backend.start()
        return self._waiters.subscribe(job_id, event)

    def unsubscribe(self, sub: JobSubscription) -> None:
        """Drop a subscription; dropping one twice is harmless."""
        self._waiters.unsubscribe(sub)

    @property
    def subscribed_jobs(self) -> frozenset[int]:
        """The job ids someone is subscribed to now."""
        return self._waiters.subscribed_jobs

    # ------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Take the fleet's deliveries and wake-ups from now on (needs a running loop;
        ``app()`` and ``async with`` call it)."""
        self._backend.start()

    @property
    def pending(self) -> int:
        """Deliveries whose callbacks are still queued, running or waiting to retry."""
        return len(self._tasks) + self._backend.pending

    async def drain(self, timeout: float | None = None) -> None:
        """Wait until the deliveries taken so far are done or given up (or ``timeout``)."""
        await self._backend.drain(await self._dispatched(timeout))

    async def aclose(self, timeout: float | None = 10.0) -> None:
        """Refuse new deliveries (503), let running callbacks finish, give up stragglers."""
        self._closed = True
        await self._backend.aclose(await self._dispatched(timeout))
        for task in set(self._tasks):
            task.cancel()

    async def _dispatched(self, timeout: float | None) -> float | None:
        """Wait for the ``dispatch`` hand-overs within ``timeout``; what is left of it."""
        end = None if timeout is None else self.clock.now() + timeout
        if self._tasks:
            await wait_tasks(self.clock, self._tasks, timeout)
        return None if end is None else max(0.0, end - self.clock.now())

    async def __aenter__(self) -> Self:
        self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
