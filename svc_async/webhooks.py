"""Webhooks: parse every published payload and receive deliveries in aiohttp.

Three kinds arrive, told apart by their shape: a job status update ``{id, status}``, an
entry update ``{entry, eventId}`` or ``{entry, seasonId}`` (the full Entry), and an
output file (``{id, verificationJobId, status, downloadURL, ...}``, POSTed to the
``callbackURL`` given at job creation). The service signs nothing; its advice is a
shared secret in the webhook URL's query string (``https://you.example/webhooks/svc?key=...``),
which ``WebhookReceiver`` checks in constant time before anything else happens. Parsing
is pure (``parse_delivery`` and one ``parse_...`` per kind); the receiver answers at once
and runs each kind's callbacks in background tasks it tracks, drops duplicate
deliveries, ignores test deliveries, and wakes ``jobs.wait`` calls of a
``Client(..., webhooks=receiver)``. ``feed_sync_state`` lets entry updates advance an
``entries.sync`` state, so a later sync does not report them again.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import inspect
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, TypeVar

import attrs
import orjson

from .errors import ResponseDecodeError, WebhookPayloadError, WebhookVerificationError
from .models import Entry, JobStatus, OutputFile

if TYPE_CHECKING:
    from aiohttp import web

    from .sync import SyncState

logger = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_PATH",
    "Delivery",
    "EntryCallback",
    "EntryUpdate",
    "JobStatusUpdate",
    "JobSubscription",
    "OutputFileCallback",
    "OutputFileUpdate",
    "ReceiverStats",
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

_JOB_STATUSES = {s.value: s for s in JobStatus}


@attrs.frozen(slots=True, kw_only=True)
class JobStatusUpdate:
    """The "Verification Job - Status Update" event: which job, its status, and whether
    it is a test delivery (``is_test``: never about a real job)."""

    job_id: int
    status: JobStatus | str
    is_test: bool = False


@attrs.frozen(slots=True, kw_only=True)
class EntryUpdate:
    """An entry changed: the full ``entry`` and the event or season it belongs to
    (exactly one of ``event_id``/``season_id`` is set). ``is_test``: a test delivery."""

    entry: Entry
    event_id: int | None = None
    season_id: int | None = None
    is_test: bool = False


@attrs.frozen(slots=True, kw_only=True)
class OutputFileUpdate:
    """An output file made for a job (e.g. its muted audio) was POSTed to the job's
    ``callbackURL``; ``output_file.download_url`` is valid for at most 7 days."""

    output_file: OutputFile
    is_test: bool = False

    @property
    def job_id(self) -> int:
        """The verification job the file was made for."""
        return self.output_file.verification_job_id


Delivery = JobStatusUpdate | EntryUpdate | OutputFileUpdate
"""Any parsed webhook delivery."""

StatusCallback = Callable[[JobStatusUpdate], Awaitable[None] | None]
"""A status-update callback: a plain function or a coroutine function."""

EntryCallback = Callable[[EntryUpdate], Awaitable[None] | None]
"""An entry-update callback: a plain function or a coroutine function."""

OutputFileCallback = Callable[[OutputFileUpdate], Awaitable[None] | None]
"""An output-file callback: a plain function or a coroutine function."""

_U = TypeVar("_U", JobStatusUpdate, EntryUpdate, OutputFileUpdate)

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


def _job_id(value: Any, field: str = "id") -> int:
    if isinstance(value, bool):
        raise WebhookPayloadError(f"webhook field {field!r} must be an integer, got a boolean")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if value is None:
        raise WebhookPayloadError(f"webhook field {field!r} is missing")
    raise WebhookPayloadError(
        f"webhook field {field!r} must be an integer, got {type(value).__name__}"
    )


def _positive(value: Any, field: str, is_test: bool) -> int:
    """An id field: a positive integer (0 allowed in test deliveries)."""
    number = _job_id(value, field)
    if number < 0 or (number == 0 and not is_test):
        raise WebhookPayloadError(f"webhook field {field!r} must be a positive id, got {number}")
    return number


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
    return _status_update(_load(body))


def _status_update(data: Mapping[str, Any]) -> JobStatusUpdate:
    is_test = _is_test(data.get("isTest"))
    job_id = _positive(data.get("id"), "id", is_test)
    status = data.get("status")
    if not isinstance(status, str) or not status.strip():
        what = "missing" if status is None else f"not a non-empty string ({type(status).__name__})"
        raise WebhookPayloadError(f"webhook field 'status' is {what}")
    status = status.strip()
    return JobStatusUpdate(job_id=job_id, status=_JOB_STATUSES.get(status, status), is_test=is_test)


def _structured(data: Any, tp: type[Any], field: str) -> Any:
    """``data`` as model ``tp``; a shape that does not fit is a WebhookPayloadError."""
    if not isinstance(data, Mapping):
        what = "missing" if data is None else f"not an object ({type(data).__name__})"
        raise WebhookPayloadError(f"webhook field {field!r} is {what}")
    from .converter import structure

    try:
        return structure(dict(data), tp)
    except ResponseDecodeError as exc:
        where = (exc.path or "$").replace("$", field, 1)
        raise WebhookPayloadError(
            f"webhook field {field!r} is not a valid {tp.__name__} (at {where})"
        ) from None


def parse_entry_update(
    body: bytes | str | Mapping[str, Any], headers: Mapping[str, str] | None = None
) -> EntryUpdate:
    """Parse an entry-update delivery: ``{"entry": {...}, "eventId": N}`` or ``"seasonId"``.

    The entry is structured like an entries answer (``Entry``, unknown keys kept in
    ``extra``). Raises ``WebhookPayloadError`` when the entry does not fit or when not
    exactly one of ``eventId``/``seasonId`` is given.
    """
    del headers
    return _entry_update(_load(body))


def _entry_update(data: Mapping[str, Any]) -> EntryUpdate:
    is_test = _is_test(data.get("isTest"))
    scopes = [key for key in ("eventId", "seasonId") if data.get(key) is not None]
    if len(scopes) != 1:
        raise WebhookPayloadError(
            "webhook entry update must carry exactly one of 'eventId' and 'seasonId'"
        )
    scope_id = _positive(data[scopes[0]], scopes[0], is_test)
    entry: Entry = _structured(data.get("entry"), Entry, "entry")
    if scopes[0] == "eventId":
        return EntryUpdate(entry=entry, event_id=scope_id, is_test=is_test)
    return EntryUpdate(entry=entry, season_id=scope_id, is_test=is_test)


def parse_output_file(
    body: bytes | str | Mapping[str, Any], headers: Mapping[str, str] | None = None
) -> OutputFileUpdate:
    """Parse an output-file callback (``{id, verificationJobId, status, downloadURL,
    operation, fileType}``) into an ``OutputFile``; ``WebhookPayloadError`` otherwise."""
    del headers
    return _output_file(_load(body))


def _output_file(data: Mapping[str, Any]) -> OutputFileUpdate:
    is_test = _is_test(data.get("isTest"))
    _positive(data.get("id"), "id", is_test)
    _positive(data.get("verificationJobId"), "verificationJobId", is_test)
    fields = {key: value for key, value in data.items() if key != "isTest"}
    output: OutputFile = _structured(fields, OutputFile, "outputFile")
    return OutputFileUpdate(output_file=output, is_test=is_test)


_OUTPUT_FILE_KEYS = ("verificationJobId", "operation", "fileType")


def parse_delivery(
    body: bytes | str | Mapping[str, Any], headers: Mapping[str, str] | None = None
) -> Delivery:
    """Parse any delivery, telling the kinds apart by shape: ``entry`` makes an entry
    update, ``verificationJobId`` (or ``operation``/``fileType``) an output file, and
    anything else must be a status update ``{id, status}``."""
    del headers
    data = _load(body)
    if "entry" in data:
        return _entry_update(data)
    if any(key in data for key in _OUTPUT_FILE_KEYS):
        return _output_file(data)
    return _status_update(data)


def feed_sync_state(state: SyncState, update: EntryUpdate) -> SyncState:
    """``state`` advanced by an entry update, so the next ``entries.sync`` does not report
    the delivered version of the entry again (a later change still is).

    Only events the state already tracks are fed: an event never synced is fetched in
    full by its first sync anyway, and season updates have no sync cursor. Test
    deliveries change nothing. The state is immutable: use the returned one.
    """
    from .sync import SyncState

    if not isinstance(state, SyncState):
        raise TypeError(f"state must be a SyncState, got {type(state).__name__}")
    if not isinstance(update, EntryUpdate):
        raise TypeError(f"update must be an EntryUpdate, got {type(update).__name__}")
    if update.is_test or update.event_id is None:
        return state
    cursor = state.cursor(update.event_id)
    if cursor is None:
        return state
    recording = update.entry.sound_recording
    stamp = None if recording is None else recording.updated_at
    # The same (entry id, recording updatedAt) pairs the sync uses to drop repeats; a
    # version at or before the watermark is not fetched again and needs no record.
    if cursor.since is not None and (stamp is None or stamp <= cursor.since):
        return state
    pair = (update.entry.id, stamp)
    if pair in cursor.seen:
        return state
    events = dict(state.events)
    events[update.event_id] = attrs.evolve(cursor, seen=cursor.seen | {pair})
    return attrs.evolve(state, events=events)


def _entry_digest(entry: Entry) -> bytes:
    """A short digest of an entry's content, to tell a re-delivery from a new change."""
    from .converter import unstructure

    try:
        raw = orjson.dumps(unstructure(entry), option=orjson.OPT_SORT_KEYS)
    except TypeError:
        raw = repr(entry).encode()
    return hashlib.blake2b(raw, digest_size=16).digest()


def _dedupe_key(update: Delivery) -> tuple[Hashable, Hashable]:
    """What makes two deliveries the same: (key, value); same key and value = duplicate."""
    if isinstance(update, JobStatusUpdate):
        return ("status", update.job_id, str(update.status)), None
    if isinstance(update, OutputFileUpdate):
        output = update.output_file
        return ("output", output.id, str(output.status)), None
    scope = (
        ("event", update.event_id) if update.event_id is not None else ("season", update.season_id)
    )
    return ("entry", *scope, update.entry.id), _entry_digest(update.entry)


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
    """Re-deliveries (same job id and status; same entry content as the entry's last
    delivery; same output file status), acknowledged and dropped."""
    dispatched: int = 0
    """Real updates handed to callbacks and waiters."""
    callback_errors: int = 0
    """Callbacks that raised (logged, never propagated)."""


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


class WebhookReceiver:
    """Receives the service's webhooks in an aiohttp application.

    ``secret`` (a string, or several during a rotation) must equal the ``secret_param``
    query parameter of each delivery (compared with ``hmac.compare_digest``); without it
    the request gets 401 and nothing is dispatched. ``verifier`` runs next, for a future
    signature scheme. Accepted deliveries are answered 204 at once (a malformed one 400);
    callbacks registered with ``on_status_update``, ``on_entry_update`` and
    ``on_output_file`` run in background tasks (``drain``/``aclose`` wait for them).
    Duplicates within the last ``dedupe_size`` deliveries are dropped: the same (job id,
    status); an entry delivered with the same content as its previous delivery; the same
    output file status. Test deliveries never reach callbacks or waiters.
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
        self._seen: OrderedDict[Hashable, Hashable] = OrderedDict()
        self._callbacks: list[StatusCallback] = []
        self._entry_callbacks: list[EntryCallback] = []
        self._output_callbacks: list[OutputFileCallback] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._subscriptions: dict[int, set[JobSubscription]] = {}
        self._closed = False
        self.stats = ReceiverStats()
        """Counters of what the receiver did."""

    def __repr__(self) -> str:
        secured = "secret" if self._secrets else "NO secret"
        callbacks = len(self._callbacks) + len(self._entry_callbacks) + len(self._output_callbacks)
        return (
            f"<WebhookReceiver {secured} param={self.secret_param!r}"
            f" callbacks={callbacks} pending={len(self._tasks)}>"
        )

    # ------------------------------------------------------------ registration

    def on_status_update(self, callback: StatusCallback) -> StatusCallback:
        """Register ``callback`` (sync or async) for real status updates; works as a decorator."""
        if not callable(callback):
            raise TypeError("callback must be callable")
        self._callbacks.append(callback)
        return callback

    def on_entry_update(self, callback: EntryCallback) -> EntryCallback:
        """Register ``callback`` (sync or async) for entry updates (``EntryUpdate``)."""
        if not callable(callback):
            raise TypeError("callback must be callable")
        self._entry_callbacks.append(callback)
        return callback

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
            update = parse_delivery(body, request.headers)
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

    def dispatch(self, update: Delivery) -> bool:
        """Hand a parsed delivery to waiters and its kind's callbacks (in a background task).

        Use it from another web framework once you have checked the secret yourself.
        Returns False when the update was dropped as a test delivery or a duplicate.
        """
        if update.is_test:
            self.stats.tests += 1
            logger.info("webhook test delivery received and ignored")
            return False
        if self._is_duplicate(update):
            self.stats.duplicates += 1
            logger.debug("duplicate webhook delivery dropped: %s", _describe(update))
            return False
        self.stats.dispatched += 1
        if isinstance(update, JobStatusUpdate):
            for sub in self._subscriptions.get(update.job_id, ()):
                sub.update = update
                sub.event.set()
            self._start(self._callbacks, update)
        elif isinstance(update, EntryUpdate):
            self._start(self._entry_callbacks, update)
        else:
            self._start(self._output_callbacks, update)
        return True

    def _start(
        self, callbacks: Sequence[Callable[[_U], Awaitable[None] | None]], update: _U
    ) -> None:
        if callbacks:
            task = asyncio.get_running_loop().create_task(
                self._run_callbacks(list(callbacks), update)
            )
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def _is_duplicate(self, update: Delivery) -> bool:
        if self._dedupe_size == 0:
            return False
        key, value = _dedupe_key(update)
        if key in self._seen and self._seen[key] == value:
            self._seen.move_to_end(key)
            return True
        self._seen[key] = value
        self._seen.move_to_end(key)
        while len(self._seen) > self._dedupe_size:
            self._seen.popitem(last=False)
        return False

    async def _run_callbacks(
        self, callbacks: list[Callable[[_U], Awaitable[None] | None]], update: _U
    ) -> None:
        for callback in callbacks:
            try:
                result = callback(update)
                if inspect.isawaitable(result):
                    await result
            except Exception:
                self.stats.callback_errors += 1
                logger.exception("webhook callback %r failed for %s", callback, _describe(update))

    # ------------------------------------------------------------ waiters (for jobs.wait)

    def subscribe(self, job_id: int, event: asyncio.Event | None = None) -> JobSubscription:
        """Register interest in ``job_id``; ``event`` (shared or new) is set on each update.

        Pair every call with ``unsubscribe`` (in a ``finally``), or the receiver keeps it.
        """
        sub = JobSubscription(job_id) if event is None else JobSubscription(job_id, event)
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


def _describe(update: Delivery) -> str:
    """A log-safe one-liner (no download links: they are signed)."""
    if isinstance(update, JobStatusUpdate):
        return f"job {update.job_id} ({update.status})"
    if isinstance(update, OutputFileUpdate):
        output = update.output_file
        return f"output file {output.id} of job {output.verification_job_id} ({output.status})"
    where = (
        f"event {update.event_id}" if update.event_id is not None else f"season {update.season_id}"
    )
    return f"entry {update.entry.id} in {where}"
