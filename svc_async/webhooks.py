"""Job status webhooks: parse the ``{id, status}`` payload and receive deliveries in aiohttp.

The service signs nothing; its advice is a shared secret in the webhook URL's query
string (``https://you.example/webhooks/svc?key=...``), which ``WebhookReceiver`` checks
in constant time before anything else happens. Parsing is pure (``parse_status_update``);
the receiver answers at once and runs callbacks in background tasks it tracks, drops
duplicate deliveries, ignores test deliveries, and wakes ``jobs.wait`` calls of a
``Client(..., webhooks=receiver)``.
"""

from __future__ import annotations

import asyncio
import hmac
import inspect
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

import attrs
import orjson

from .errors import SvcError, WebhookVerificationError
from .models import JobStatus

if TYPE_CHECKING:
    from aiohttp import web

logger = logging.getLogger("svc_async.webhooks")

__all__ = [
    "DEFAULT_PATH",
    "JobStatusUpdate",
    "ReceiverStats",
    "StatusCallback",
    "Verifier",
    "WebhookPayloadError",
    "WebhookReceiver",
    "parse_status_update",
]

DEFAULT_PATH = "/webhooks/svc"
"""Where ``WebhookReceiver.routes`` and ``app`` mount the handler by default."""

MAX_BODY = 64 * 1024
"""Largest delivery body accepted (the real payload is a few dozen bytes)."""

_JOB_STATUSES = {s.value: s for s in JobStatus}


class WebhookPayloadError(SvcError, ValueError):
    """A webhook body is not a valid job status update (bad JSON, missing or mistyped field)."""


@attrs.frozen(slots=True, kw_only=True)
class JobStatusUpdate:
    """The "Verification Job - Status Update" event: which job, its status, and whether
    it is a test delivery (``is_test``: never about a real job)."""

    job_id: int
    status: JobStatus | str
    is_test: bool = False


StatusCallback = Callable[[JobStatusUpdate], Awaitable[None] | None]
"""A status-update callback: a plain function or a coroutine function."""

Verifier = Callable[["web.Request", bytes], Awaitable[None] | None]
"""A hook run on each delivery (request and raw body) before parsing; it raises
``WebhookVerificationError`` to refuse the delivery (for a future signature scheme)."""


def _load(body: bytes | str | Mapping[str, Any]) -> Mapping[str, Any]:
    if isinstance(body, Mapping):
        return body
    if not isinstance(body, bytes | bytearray | memoryview | str):
        raise WebhookPayloadError(
            f"webhook body must be bytes, str or a mapping, got {type(body).__name__}"
        )
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise WebhookPayloadError(f"webhook body is not valid JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise WebhookPayloadError(f"webhook body must be a JSON object, got {type(data).__name__}")
    return data


def _job_id(value: Any) -> int:
    if isinstance(value, bool):
        raise WebhookPayloadError("webhook field 'id' must be an integer, got a boolean")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if value is None:
        raise WebhookPayloadError("webhook field 'id' is missing")
    raise WebhookPayloadError(f"webhook field 'id' must be an integer, got {type(value).__name__}")


def _is_test(value: Any) -> bool:
    if value is None or isinstance(value, bool):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise WebhookPayloadError(f"webhook field 'isTest' must be a boolean, got {value!r:.40}")


def parse_status_update(
    body: bytes | str | Mapping[str, Any], headers: Mapping[str, str] | None = None
) -> JobStatusUpdate:
    """Parse a status-update delivery (``{"id", "status"}``, maybe ``"isTest": true``).

    ``body`` is the raw body or already-decoded JSON. ``headers`` is accepted for a future
    signature scheme and not read today. Unknown statuses are kept as plain strings;
    extra fields are ignored. Raises ``WebhookPayloadError`` for anything else.
    """
    del headers  # reserved: the service sends no signature or event-type header yet
    data = _load(body)
    is_test = _is_test(data.get("isTest"))
    job_id = _job_id(data.get("id"))
    if job_id < 0 or (job_id == 0 and not is_test):
        raise WebhookPayloadError(f"webhook field 'id' must be a positive job id, got {job_id}")
    status = data.get("status")
    if not isinstance(status, str) or not status.strip():
        what = "missing" if status is None else f"not a non-empty string ({type(status).__name__})"
        raise WebhookPayloadError(f"webhook field 'status' is {what}")
    status = status.strip()
    return JobStatusUpdate(job_id=job_id, status=_JOB_STATUSES.get(status, status), is_test=is_test)


@attrs.define(slots=True)
class ReceiverStats:
    """What a receiver did with the deliveries it got, for metrics and tests."""

    received: int = 0
    """Every request that reached the handler."""
    rejected: int = 0
    """Refused: wrong or missing secret, a verifier's refusal, or a bad payload."""
    tests: int = 0
    """Test deliveries (``isTest``), acknowledged and ignored."""
    duplicates: int = 0
    """Deliveries of a (job id, status) pair seen recently, acknowledged and dropped."""
    dispatched: int = 0
    """Real updates handed to callbacks and waiters."""
    callback_errors: int = 0
    """Callbacks that raised (logged, never propagated)."""


@attrs.define(eq=False)
class _Subscription:
    """One ``jobs.wait`` waiting for news of ``job_id``; ``event`` is set on delivery."""

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


class WebhookReceiver:
    """Receives job status webhooks in an aiohttp application.

    ``secret`` (a string, or several during a rotation) must equal the ``secret_param``
    query parameter of each delivery (compared with ``hmac.compare_digest``); without it
    the request gets 401 and nothing is dispatched. ``verifier`` runs next, for a future
    signature scheme. Accepted deliveries are answered 204 at once; callbacks registered
    with ``on_status_update`` run in background tasks (``drain``/``aclose`` wait for them).
    The same (job id, status) delivered again within the last ``dedupe_size`` updates is
    dropped, and test deliveries never reach callbacks or waiters.
    """

    def __init__(
        self,
        secret: str | Sequence[str] | None = None,
        secret_param: str = "key",
        *,
        verifier: Verifier | None = None,
        dedupe_size: int = 10_000,
    ) -> None:
        if not isinstance(secret_param, str) or not secret_param:
            raise ValueError("secret_param must be a non-empty string")
        if isinstance(dedupe_size, bool) or not isinstance(dedupe_size, int) or dedupe_size < 0:
            raise ValueError("dedupe_size must be a non-negative int")
        if verifier is not None and not callable(verifier):
            raise TypeError("verifier must be callable")
        self._secrets = _secrets(secret)
        if not self._secrets:
            logger.warning(
                "WebhookReceiver has no secret: anyone who can reach it can post status updates"
            )
        self.secret_param = secret_param
        self._verifier = verifier
        self._dedupe_size = dedupe_size
        self._seen: OrderedDict[tuple[int, str], None] = OrderedDict()
        self._callbacks: list[StatusCallback] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._subscriptions: dict[int, set[_Subscription]] = {}
        self._closed = False
        self.stats = ReceiverStats()
        """Counters of what the receiver did."""

    def __repr__(self) -> str:
        secured = "secret" if self._secrets else "NO secret"
        return (
            f"<WebhookReceiver {secured} param={self.secret_param!r}"
            f" callbacks={len(self._callbacks)} pending={len(self._tasks)}>"
        )

    # ------------------------------------------------------------ registration

    def on_status_update(self, callback: StatusCallback) -> StatusCallback:
        """Register ``callback`` (sync or async) for real status updates; works as a decorator."""
        if not callable(callback):
            raise TypeError("callback must be callable")
        self._callbacks.append(callback)
        return callback

    def routes(self, path: str = DEFAULT_PATH) -> list[web.RouteDef]:
        """Route definitions to add to your app: ``app.add_routes(receiver.routes())``."""
        if not path.startswith("/"):
            raise ValueError("path must start with '/'")
        from aiohttp import web  # the server half of aiohttp, only when receiving

        return [web.post(path, self.handle)]

    def app(self, path: str = DEFAULT_PATH) -> web.Application:
        """A small aiohttp application serving only the receiver; it drains on shutdown."""
        from aiohttp import web

        application = web.Application(client_max_size=MAX_BODY)
        application.add_routes(self.routes(path))

        async def _drain(_: web.Application) -> None:
            await self.aclose()

        application.on_shutdown.append(_drain)
        return application

    # ------------------------------------------------------------ the handler

    def check_secret(self, value: str | None) -> bool:
        """Whether ``value`` (the query parameter, None when absent) is an accepted secret."""
        if not self._secrets:
            return True
        if value is None:
            return False
        given = value.encode()
        ok = False
        for secret in self._secrets:
            ok |= hmac.compare_digest(given, secret)
        return ok

    async def handle(self, request: web.Request) -> web.Response:
        """The aiohttp handler: check, parse, acknowledge, then dispatch in the background."""
        from aiohttp import web

        self.stats.received += 1
        if request.method != "POST":
            return web.Response(status=405, headers={"Allow": "POST"})
        values = request.query.getall(self.secret_param, [])
        if not self.check_secret(values[0] if len(values) == 1 else None):
            self.stats.rejected += 1
            logger.warning("webhook refused: wrong or missing secret (%s)", request.path)
            return web.Response(status=401, text="unauthorized")
        if self._closed:
            return web.Response(status=503, headers={"Retry-After": "5"})
        if request.content_length is not None and request.content_length > MAX_BODY:
            self.stats.rejected += 1
            return web.Response(status=413)
        body = await request.content.read(MAX_BODY + 1)
        if len(body) > MAX_BODY:
            self.stats.rejected += 1
            return web.Response(status=413)
        try:
            if self._verifier is not None:
                verdict = self._verifier(request, body)
                if inspect.isawaitable(verdict):
                    await verdict
            update = parse_status_update(body, request.headers)
        except WebhookVerificationError as exc:
            self.stats.rejected += 1
            logger.warning("webhook refused by verifier (%s): %s", request.path, exc)
            return web.Response(status=401, text="unauthorized")
        except WebhookPayloadError as exc:
            self.stats.rejected += 1
            logger.warning("webhook with a bad payload (%s): %s", request.path, exc)
            return web.Response(status=400, text=str(exc))
        self.dispatch(update)
        return web.Response(status=204)

    def dispatch(self, update: JobStatusUpdate) -> bool:
        """Hand an update to waiters and callbacks (in a background task).

        Use it from another web framework once you have checked the secret yourself.
        Returns False when the update was dropped as a test delivery or a duplicate.
        """
        if update.is_test:
            self.stats.tests += 1
            logger.info("webhook test delivery received and ignored")
            return False
        if self._is_duplicate(update):
            self.stats.duplicates += 1
            logger.debug("duplicate webhook for job %d (%s) dropped", update.job_id, update.status)
            return False
        self.stats.dispatched += 1
        for sub in self._subscriptions.get(update.job_id, ()):
            sub.update = update
            sub.event.set()
        if self._callbacks:
            task = asyncio.get_running_loop().create_task(self._run_callbacks(update))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        return True

    def _is_duplicate(self, update: JobStatusUpdate) -> bool:
        if self._dedupe_size == 0:
            return False
        key = (update.job_id, str(update.status))
        if key in self._seen:
            self._seen.move_to_end(key)
            return True
        self._seen[key] = None
        while len(self._seen) > self._dedupe_size:
            self._seen.popitem(last=False)
        return False

    async def _run_callbacks(self, update: JobStatusUpdate) -> None:
        for callback in list(self._callbacks):
            try:
                result = callback(update)
                if inspect.isawaitable(result):
                    await result
            except Exception:
                self.stats.callback_errors += 1
                logger.exception("webhook callback %r failed for job %d", callback, update.job_id)

    # ------------------------------------------------------------ waiters (for jobs.wait)

    def _subscribe(self, job_id: int, event: asyncio.Event | None = None) -> _Subscription:
        """Register interest in ``job_id``; ``event`` (shared or new) is set on each update."""
        sub = _Subscription(job_id) if event is None else _Subscription(job_id, event)
        self._subscriptions.setdefault(job_id, set()).add(sub)
        return sub

    def _unsubscribe(self, sub: _Subscription) -> None:
        subs = self._subscriptions.get(sub.job_id)
        if subs is not None:
            subs.discard(sub)
            if not subs:
                del self._subscriptions[sub.job_id]

    # ------------------------------------------------------------ lifecycle

    @property
    def pending(self) -> int:
        """Callback tasks still running."""
        return len(self._tasks)

    async def drain(self, timeout: float | None = None) -> None:
        """Wait until the callbacks started so far have finished (or ``timeout`` passes)."""
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=timeout)

    async def aclose(self, timeout: float | None = 10.0) -> None:
        """Refuse new deliveries (503), let running callbacks finish, cancel stragglers."""
        self._closed = True
        tasks = set(self._tasks)
        if tasks:
            _, late = await asyncio.wait(tasks, timeout=timeout)
            for task in late:
                task.cancel()
            if late:
                await asyncio.wait(late)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
