"""Webhooks: parse every published payload and receive deliveries in aiohttp.

Three kinds arrive, told apart by their shape: a job status update ``{id, status}``, an
entry update ``{entry, eventId}`` or ``{entry, seasonId}`` (the full Entry), and an
output file (``{id, verificationJobId, status, downloadURL, ...}``, POSTed to the
``callbackURL`` given at job creation). The service signs nothing; its advice is a
shared secret in the webhook URL's query string (``https://you.example/webhooks/svc?key=...``),
which ``WebhookReceiver`` checks in constant time before anything else happens. Parsing
is pure (``parse_delivery`` and one ``parse_...`` per kind, in ``_webhook_payloads``); the
receiver reads each body whole (``_webhook_body``), answers once a delivery is queued,
and runs each kind's callbacks in the background, retrying failed ones
(``_webhook_delivery``: the dedupe ledger and the dispatcher). It drops duplicate
deliveries, ignores test deliveries, and wakes ``jobs.wait`` calls of a
``Client(..., webhooks=receiver)``. ``feed_sync_state`` lets entry updates advance an
``entries.sync`` state, so a later sync does not report them again.
"""

from __future__ import annotations

import asyncio
import hmac
import inspect
import logging
from collections.abc import Awaitable, Callable, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

import attrs
import yarl
from aiohttp.web_log import AccessLogger

from .._core import validate as _validate
from ..clock import SYSTEM_CLOCK, Clock, wait_tasks
from ..errors import WebhookPayloadError, WebhookVerificationError
from ..fleet import fleet_url
from ..redact import redact_url
from ..resources.sync import feed_sync_state
from ..retry import RetryPolicy
from .body import BodyRefused, read_body
from .delivery import (
    DeliveryDispatcher,
    DeliveryJob,
    DeliveryKey,
    LocalDispatcher,
    MemoryLedger,
    delivery_key,
)
from .payloads import (
    Delivery,
    EntryCallback,
    EntryUpdate,
    JobStatusUpdate,
    OutputFileCallback,
    OutputFileUpdate,
    StatusCallback,
    describe,
    parse_delivery,
    parse_entry_update,
    parse_output_file,
    parse_status_update,
)

if TYPE_CHECKING:
    from aiohttp import web
    from aiohttp.web_request import BaseRequest
    from aiohttp.web_response import StreamResponse

logger = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_CALLBACK_RETRY",
    "DEFAULT_PATH",
    "MAX_BODY",
    "Delivery",
    "EntryCallback",
    "EntryUpdate",
    "JobStatusUpdate",
    "JobSubscription",
    "OutputFileCallback",
    "OutputFileUpdate",
    "ReceiverStats",
    "RedactedAccessLogger",
    "StatusCallback",
    "Verifier",
    "WebhookPayloadError",
    "WebhookReceiver",
    "feed_sync_state",
    "parse_delivery",
    "parse_entry_update",
    "parse_output_file",
    "parse_status_update",
]

DEFAULT_PATH = "/webhooks/svc"
"""Where ``WebhookReceiver.routes`` and ``app`` mount the handler by default."""

MAX_BODY = 4 * 1024 * 1024
"""Largest delivery body accepted: a status update is a few dozen bytes, but an entry
update carries the whole Entry with its songs and licence data."""

DEFAULT_CALLBACK_RETRY = RetryPolicy(attempts=5, wait_initial=1.0, wait_max=30.0)
"""How failed callbacks are retried by default: 5 runs, waits of up to 1, 2, 4, 8 s."""

_U = TypeVar("_U", JobStatusUpdate, EntryUpdate, OutputFileUpdate)

Verifier = Callable[["web.Request", bytes], Awaitable[None] | None]
"""A hook run on each delivery (request and raw body) before parsing; it raises
``WebhookVerificationError`` to refuse the delivery (for a future signature scheme)."""


@attrs.define(slots=True)
class ReceiverStats:
    """What a receiver did with the deliveries it got, for metrics and tests."""

    received: int = 0
    """Every request that reached the handler."""
    rejected: int = 0
    """Refused: wrong or missing secret, a verifier's refusal, a bad payload, a body too
    large (413), too slow (408) or cut short."""
    tests: int = 0
    """Test deliveries (``isTest``), acknowledged and ignored."""
    duplicates: int = 0
    """Re-deliveries (same job id and status; same entry content as the entry's last
    delivery; same output file status) of one handled or in hand, acknowledged and
    dropped."""
    dispatched: int = 0
    """Real updates handed to callbacks and waiters."""
    callback_errors: int = 0
    """Each time a callback raised (logged, never propagated; retried)."""
    retries: int = 0
    """Runs of a delivery's callbacks after a failed run."""
    given_up: int = 0
    """Deliveries whose callbacks still failed after the last attempt, or were unfinished
    when the receiver closed; their redelivery is handled again."""


@attrs.define(eq=False)
class JobSubscription:
    """Interest in news of one job, from ``WebhookReceiver.subscribe``.

    Each status update for ``job_id`` is stored in ``update`` and sets ``event``; the
    subscriber clears them when it has looked. ``jobs.wait``, ``watch`` and
    ``wait_many`` use this to wake early; an application may too.
    """

    job_id: int
    event: asyncio.Event = attrs.Factory(asyncio.Event)
    update: JobStatusUpdate | None = None


def _secrets(secret: str | Sequence[str] | None) -> tuple[bytes, ...]:
    if secret is None:
        return ()
    items = [secret] if isinstance(secret, str) else list(secret)
    if not items:
        raise ValueError("secret must be a non-empty string or a non-empty list of them")
    out = []
    for item in items:
        if not isinstance(item, str) or not item:
            raise ValueError("each webhook secret must be a non-empty string")
        out.append(item.encode())
    return tuple(out)


def _check_arguments(
    *,
    secret_param: object,
    verifier: object,
    callback_retry: object,
    clock: object,
    seconds: dict[str, object],
    account: object,
) -> None:
    """``WebhookReceiver``'s arguments checked, in order (``seconds``: the durations)."""
    if not isinstance(secret_param, str) or not secret_param:
        raise ValueError("secret_param must be a non-empty string")
    if verifier is not None and not callable(verifier):
        raise TypeError("verifier must be callable")
    if not isinstance(callback_retry, RetryPolicy):
        raise TypeError("callback_retry must be a RetryPolicy")
    if clock is not None and not isinstance(clock, Clock):
        raise TypeError("clock must implement the Clock protocol (now, wall and sleep)")
    for name, value in seconds.items():
        _validate.positive_seconds(value, name)
    _validate.account_name(account)


class WebhookReceiver:
    """Receives the service's webhooks in an aiohttp application.

    ``secret`` (a string, or several during a rotation) must equal the ``secret_param``
    query parameter of each delivery (compared with ``hmac.compare_digest``); without it
    the request gets 401 and nothing is dispatched. The body is then read whole, up to
    ``MAX_BODY`` bytes (413 beyond), each piece within ``read_timeout`` seconds and all of
    it within ``body_timeout`` (408 otherwise). ``verifier`` runs next, for a future
    signature scheme. An accepted delivery is answered 204 once it is queued (a
    malformed one 400); callbacks registered with ``on_status_update``,
    ``on_entry_update`` and ``on_output_file`` run in the background (``drain``/``aclose``
    wait for them), and the ones that raise are run again as ``callback_retry`` says.
    Duplicates within the last ``dedupe_size`` delivery slots are dropped: the same (job
    id, status); an entry delivered with the same content as its previous delivery; the
    same output file status. A delivery counts as seen from its arrival, but is
    forgotten again if its callbacks are given up, so a redelivery is handled anew. Test
    deliveries never reach callbacks or waiters. ``clock`` is where the waits between
    callback attempts run (default: the system clock).

    ``fleet`` (default ``SVC_FLEET_URL``), a Redis URL, makes replicas act as one
    (``svc_async.webhooks.redis``): deduplicated fleet-wide over the last ``dedupe_size``
    deliveries within ``dedupe_window`` seconds, callbacks run by one replica that has
    them (a crashed one's taken over after ``claim_after`` seconds; a live one's never),
    in order per job, and ``jobs.wait`` woken in every process. Replicas that share a
    secret share its deliveries, through a rotation too; ``account`` (any name: the same
    one on every replica and on ``Client(account=...)``) puts all of them in the
    account's namespace instead, where a fleet client alone wakes on them.
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
    ) -> None:
        _check_arguments(
            secret_param=secret_param,
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
        self._memory = MemoryLedger(dedupe_size)
        self._secrets = _secrets(secret)
        self._warned_open = False
        self.secret_param = secret_param
        self._verifier = verifier
        self.callback_retry = callback_retry
        self.read_timeout = float(read_timeout)
        self.body_timeout = float(body_timeout)
        self.clock: Clock = SYSTEM_CLOCK if clock is None else clock
        """Where the waits between callback attempts and the drain deadlines run."""
        self._local = LocalDispatcher(
            self._attempt, self._finish, policy=callback_retry, clock=self.clock
        )
        self._dispatcher: DeliveryDispatcher = self._local
        self._fleet: Any = None
        fleet = fleet_url(fleet)
        if fleet is not None:
            # Replicas act as one: a shared ledger, streams of deliveries, job wake-ups.
            from .redis import FleetDeliveries

            self._fleet = FleetDeliveries(
                fleet,
                secrets=self._secrets,
                account=account,
                attempt=self._attempt,
                finish=self._finish,
                policy=callback_retry,
                clock=self.clock,
                make_job=self._job,
                wake=self._wake,
                kinds=self._kinds,  # a waiter's receiver takes no delivery at all
                claim_after=claim_after,
                dedupe_window=dedupe_window,
                dedupe_size=dedupe_size,
            )
            self._dispatcher = self._fleet.dispatcher
        self._callbacks: list[StatusCallback] = []
        self._entry_callbacks: list[EntryCallback] = []
        self._output_callbacks: list[OutputFileCallback] = []
        self._tasks: set[asyncio.Task[None]] = set()  # claims and queueing still settling
        self._subscriptions: dict[int, set[JobSubscription]] = {}
        self._closed = False
        self.stats = ReceiverStats()
        """Counters of what the receiver did."""

    def __repr__(self) -> str:
        secured = "secret" if self._secrets else "NO secret"
        callbacks = len(self._callbacks) + len(self._entry_callbacks) + len(self._output_callbacks)
        return (
            f"<WebhookReceiver {secured} param={self.secret_param!r}"
            f" callbacks={callbacks} pending={self.pending}>"
        )

    # ------------------------------------------------------------ registration

    def on_status_update(self, callback: StatusCallback) -> StatusCallback:
        """Register ``callback`` (sync or async) for real status updates; works as a decorator."""
        if not callable(callback):
            raise TypeError("callback must be callable")
        self._callbacks.append(callback)
        if self._fleet is not None:
            self._fleet.callbacks_added()
        return callback

    def on_entry_update(self, callback: EntryCallback) -> EntryCallback:
        """Register ``callback`` (sync or async) for entry updates (``EntryUpdate``)."""
        if not callable(callback):
            raise TypeError("callback must be callable")
        self._entry_callbacks.append(callback)
        if self._fleet is not None:
            self._fleet.callbacks_added()
        return callback

    def _kinds(self) -> frozenset[str]:
        """The kinds of the fleet's shared deliveries this receiver can run: only those
        it has callbacks for (a replica never takes a delivery it cannot run)."""
        kinds = ("status",) if self._callbacks else ()
        return frozenset(kinds + (("entry",) if self._entry_callbacks else ()))

    def on_output_file(self, callback: OutputFileCallback) -> OutputFileCallback:
        """Register ``callback`` (sync or async) for output files (``OutputFileUpdate``)."""
        if not callable(callback):
            raise TypeError("callback must be callable")
        self._output_callbacks.append(callback)
        return callback

    def routes(self, path: str = DEFAULT_PATH) -> list[web.RouteDef]:
        """Route definitions to add to your app: ``app.add_routes(receiver.routes())``."""
        if not path.startswith("/"):
            raise ValueError("path must start with '/'")
        self._warn_if_open()
        from aiohttp import web  # the server half of aiohttp, only when receiving

        return [web.post(path, self.handle)]

    def app(self, path: str = DEFAULT_PATH) -> web.Application:
        """A small aiohttp application serving only the receiver; it drains on shutdown."""
        from aiohttp import web

        application = web.Application(client_max_size=MAX_BODY)
        application.add_routes(self.routes(path))

        async def _drain(_: web.Application) -> None:
            await self.aclose()

        async def _join(_: web.Application) -> None:
            if self._fleet is not None:
                self._fleet.listen()  # take the fleet's deliveries from the start

        application.on_startup.append(_join)
        application.on_shutdown.append(_drain)
        return application

    # ------------------------------------------------------------ the handler

    def _warn_if_open(self) -> None:
        if not self._secrets and not self._warned_open:
            self._warned_open = True
            logger.warning(
                "WebhookReceiver has no secret: anyone who can reach it can post status updates"
            )

    def check_secret(self, value: str | None) -> bool:
        """Whether ``value`` (the query parameter, None when absent) is an accepted secret."""
        return self._secret_index(value) is not None

    def _secret_index(self, value: str | None) -> int | None:
        """Which secret ``value`` is (0 with none configured), compared in constant time."""
        if not self._secrets:
            return 0
        if value is None:
            return None
        given = value.encode()
        found = None
        for index, secret in enumerate(self._secrets):
            if hmac.compare_digest(given, secret):
                found = index
        return found

    async def handle(self, request: web.Request) -> web.Response:
        """The aiohttp handler: check, read, parse, queue, acknowledge."""
        from aiohttp import web

        self.stats.received += 1
        self._warn_if_open()
        if request.method != "POST":
            return web.Response(status=405, headers={"Allow": "POST"})
        values = request.query.getall(self.secret_param, [])
        secret = self._secret_index(values[0] if len(values) == 1 else None)
        if secret is None:
            self.stats.rejected += 1
            logger.warning("webhook refused: wrong or missing secret (%s)", request.path)
            return web.Response(status=401, text="unauthorized")
        if self._closed:
            return web.Response(status=503, headers={"Retry-After": "5"})
        body = await self._read(request)
        if isinstance(body, web.Response):  # refused: too large, too slow or cut short
            self.stats.rejected += 1
            return body
        try:
            if self._verifier is not None:
                verdict = self._verifier(request, body)
                if inspect.isawaitable(verdict):
                    await verdict
            update = parse_delivery(body, request.headers)
        except WebhookVerificationError as exc:
            self.stats.rejected += 1
            logger.warning("webhook refused by verifier (%s): %s", request.path, exc)
            return web.Response(status=401, text="unauthorized")
        except WebhookPayloadError as exc:
            self.stats.rejected += 1
            logger.warning("webhook with a bad payload (%s): %s", request.path, exc)
            return web.Response(status=400, text=str(exc))
        await self._take(update, secret)
        return web.Response(status=204)

    async def _read(self, request: web.Request) -> bytes | web.Response:
        """The whole body, or the answer refusing it (the connection is then closed)."""
        from aiohttp import web

        body: bytes | BodyRefused
        if request.content_length is not None and request.content_length > MAX_BODY:
            body = BodyRefused(status=413, reason=f"body over {MAX_BODY} bytes")
        else:
            body = await read_body(
                request.content,
                MAX_BODY,
                read_timeout=self.read_timeout,
                body_timeout=self.body_timeout,
            )
        if isinstance(body, bytes):
            return body
        logger.warning("webhook refused (%s): %s", request.path, body.reason)
        answer = web.Response(status=body.status, text=f"webhook {body.reason}")
        answer.force_close()
        return answer

    # ------------------------------------------------------------ dispatching

    def dispatch(self, update: Delivery) -> bool:
        """Hand a parsed delivery to waiters and its kind's callbacks (in the background).

        Use it from another web framework once you have checked the secret yourself.
        Returns False when the update was dropped as a test delivery or a duplicate.
        In a fleet the shared store decides in the background, and the update counts as
        taken (``await accept(update)`` waits for the verdict).
        """
        if update.is_test:
            return self._test_delivery()
        if self._fleet is not None:
            self._background(self._take(update, 0))
            return True
        key = delivery_key(update)
        if not self._memory.claim(key):
            return self._duplicate(update)
        self._announce(update)
        job = self._job(key, update)
        if job.todo:
            self._local.submit(job)
        else:
            self._memory.complete(key)
        return True

    async def accept(self, update: Delivery) -> bool:
        """``dispatch``, awaiting the shared store if any: True once the update is queued,
        False when it was a test delivery or a duplicate. In a fleet it counts as having
        come with the first secret."""
        return await self._take(update, 0)

    async def _take(self, update: Delivery, secret: int) -> bool:
        """``accept`` for an update that came with the ``secret``-th secret."""
        if self._fleet is None or update.is_test:
            return self.dispatch(update)
        key = self._fleet.scoped(delivery_key(update), secret)
        if not await self._fleet.ledger.claim(key):
            return self._duplicate(update)
        self._announce(update)
        # Queued even without a callback here: another replica may have one.
        await self._fleet.dispatcher.submit(self._job(key, update))
        return True

    def _test_delivery(self) -> bool:
        self.stats.tests += 1
        logger.info("webhook test delivery received and ignored")
        return False

    def _duplicate(self, update: Delivery) -> bool:
        self.stats.duplicates += 1
        logger.debug("duplicate webhook delivery dropped: %s", describe(update))
        return False

    def _announce(self, update: Delivery) -> None:
        """Count a claimed update and wake its waiters, here and in the fleet."""
        self.stats.dispatched += 1
        if isinstance(update, JobStatusUpdate):
            self._wake(update)
            if self._fleet is not None:
                self._background(self._fleet.publish(update))  # every process's waiters

    def _wake(self, update: JobStatusUpdate) -> None:
        """Hand a status update to this process's subscriptions (``jobs.wait``)."""
        for sub in self._subscriptions.get(update.job_id, ()):
            sub.update = update
            sub.event.set()

    def _job(self, key: DeliveryKey, update: Delivery) -> DeliveryJob:
        """The job running ``update`` through its kind's callbacks."""
        callbacks: Sequence[Callable[[Any], Awaitable[None] | None]]
        if isinstance(update, JobStatusUpdate):
            callbacks = self._callbacks
        elif isinstance(update, EntryUpdate):
            callbacks = self._entry_callbacks
        else:
            callbacks = self._output_callbacks
        return DeliveryJob(key=key, update=update, todo=list(callbacks))

    def _background(self, work: Awaitable[Any]) -> None:
        async def settle() -> None:
            await work

        task = asyncio.get_running_loop().create_task(settle())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _attempt(self, job: DeliveryJob) -> bool:
        """Run the callbacks of ``job`` that have not succeeded yet; True when all have."""
        if job.attempts > 1:
            self.stats.retries += 1
        last = job.attempts >= self.callback_retry.attempts
        failed = []
        for callback in job.todo:
            try:
                result = callback(job.update)
                if inspect.isawaitable(result):
                    await result
            except Exception:
                self.stats.callback_errors += 1
                logger.log(
                    logging.ERROR if last else logging.WARNING,
                    "webhook callback %r failed for %s (attempt %d of %d)",
                    callback,
                    describe(job.update),
                    job.attempts,
                    self.callback_retry.attempts,
                    exc_info=True,
                )
                failed.append(callback)
        job.todo = failed
        return not failed

    async def _finish(self, job: DeliveryJob, done: bool) -> None:
        """Settle a job in the ledger: handled, or given up (a redelivery is handled)."""
        if done:
            if self._fleet is None:
                self._memory.complete(job.key)
            else:
                await self._fleet.ledger.complete(job.key)
            return
        self.stats.given_up += 1
        logger.error(
            "webhook delivery given up after %d attempt(s), %d callback(s) unfinished: %s",
            job.attempts,
            len(job.todo),
            describe(job.update),
        )
        if self._fleet is None:
            self._memory.release(job.key)
        else:
            await self._fleet.ledger.release(job.key)

    # ------------------------------------------------------------ waiters (for jobs.wait)

    def subscribe(self, job_id: int, event: asyncio.Event | None = None) -> JobSubscription:
        """Register interest in ``job_id``; ``event`` (shared or new) is set on each update.

        Pair every call with ``unsubscribe`` (in a ``finally``), or the receiver keeps it.
        """
        sub = JobSubscription(job_id) if event is None else JobSubscription(job_id, event)
        if self._fleet is not None:
            self._fleet.listen()  # updates received by any replica wake this process too
        self._subscriptions.setdefault(job_id, set()).add(sub)
        return sub

    def unsubscribe(self, sub: JobSubscription) -> None:
        """Drop a subscription; dropping one twice is harmless."""
        subs = self._subscriptions.get(sub.job_id)
        if subs is not None:
            subs.discard(sub)
            if not subs:
                del self._subscriptions[sub.job_id]

    @property
    def subscribed_jobs(self) -> frozenset[int]:
        """The job ids someone is subscribed to now."""
        return frozenset(self._subscriptions)

    # ------------------------------------------------------------ lifecycle

    @property
    def pending(self) -> int:
        """Deliveries whose callbacks are still queued, running or waiting to retry."""
        return len(self._tasks) + self._dispatcher.pending

    async def drain(self, timeout: float | None = None) -> None:
        """Wait until the deliveries taken so far are done or given up (or ``timeout``)."""
        end = None if timeout is None else self.clock.now() + timeout
        if self._tasks:
            await wait_tasks(self.clock, self._tasks, timeout)
        await self._dispatcher.drain(None if end is None else max(0.0, end - self.clock.now()))

    async def aclose(self, timeout: float | None = 10.0) -> None:
        """Refuse new deliveries (503), let running callbacks finish, give up stragglers."""
        self._closed = True
        end = None if timeout is None else self.clock.now() + timeout
        if self._tasks:
            await wait_tasks(self.clock, self._tasks, timeout)
        left = None if end is None else max(0.0, end - self.clock.now())
        await self._dispatcher.aclose(left)
        if self._fleet is not None:
            await self._fleet.aclose(0.0)
        for task in set(self._tasks):
            task.cancel()

    async def __aenter__(self) -> Self:
        if self._fleet is not None:
            self._fleet.listen()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


class RedactedAccessLogger(AccessLogger):
    """aiohttp's access log with every query value hidden: the webhook secret rides in
    the query string. Pass it as ``web.AppRunner(app, access_log_class=...)`` or
    ``web.run_app(app, access_log_class=...)``; the format options are aiohttp's."""

    def log(self, request: BaseRequest, response: StreamResponse, time: float) -> None:
        if request.rel_url.raw_query_string:
            request = cast("BaseRequest", _RedactedRequest(request))
        super().log(request, response, time)


class _RedactedRequest:
    """A request as the access log sees it: the same, but its URL's query values hidden."""

    __slots__ = ("_request", "rel_url")

    def __init__(self, request: BaseRequest) -> None:
        self._request = request
        self.rel_url = yarl.URL(redact_url(request.rel_url), encoded=True)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._request, name)

    @property
    def path_qs(self) -> str:
        return self.rel_url.path_qs

    @property
    def raw_path(self) -> str:
        return self.rel_url.raw_path_qs

    @property
    def query_string(self) -> str:
        return self.rel_url.query_string
