"""Webhook payloads: the three kinds of delivery, parsed from raw bodies (pure, no I/O).

A job status update ``{id, status}``, an entry update ``{entry, eventId}`` or
``{entry, seasonId}`` (the full Entry), and an output file (``{id, verificationJobId,
status, downloadURL, ...}``). Ids are read exactly: orjson turns an integer beyond 64 bits
into a float, so a body with such a number is decoded again by the standard library.
``svc_async.webhooks`` re-exports every public name.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import attrs
import orjson

from .._core.exact_json import has_long_number, loads_exact, too_deep
from ..errors import ResponseDecodeError, WebhookPayloadError
from ..models import Entry, JobStatus, OutputFile

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

_EXACT_FLOAT_LIMIT = 2**53
"""Floats at or beyond this size are not exact integers: they are refused as ids."""


def decode_body(body: bytes | str | Mapping[str, Any]) -> Mapping[str, Any]:
    """A delivery body as JSON data (a JSON object, every integer exact); no kind yet."""
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
    raw = body.encode() if isinstance(body, str) else bytes(body)
    if has_long_number(raw):
        data = _exact(raw)
    if not isinstance(data, dict):
        raise WebhookPayloadError(f"webhook body must be a JSON object, got {type(data).__name__}")
    return data


def _exact(raw: bytes) -> Any:
    """``raw`` (valid JSON: orjson read it) decoded with every integer exact."""
    if too_deep(raw):
        raise WebhookPayloadError("webhook body is nested too deeply")
    try:
        return loads_exact(raw)
    except ValueError as exc:  # an integer of more than 4,300 digits
        raise WebhookPayloadError(f"webhook body holds a number too long to read ({exc})") from None


def _job_id(value: Any, field: str = "id") -> int:
    if isinstance(value, bool):
        raise WebhookPayloadError(f"webhook field {field!r} must be an integer, got a boolean")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isascii() and value.isdigit():
        try:
            return int(value)
        except ValueError:  # more digits than Python converts (4,300)
            raise WebhookPayloadError(f"webhook field {field!r} is too long to be an id") from None
    if isinstance(value, float) and value.is_integer():
        if abs(value) >= _EXACT_FLOAT_LIMIT:
            raise WebhookPayloadError(
                f"webhook field {field!r} is a float too large to be an exact id"
            )
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
    data = decode_body(body)
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
    from ..converter import structure

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
    data = decode_body(body)
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
    data = decode_body(body)
    is_test = _is_test(data.get("isTest"))
    fields = {key: value for key, value in data.items() if key != "isTest"}
    for key in ("id", "verificationJobId"):  # read as a status update's id ("12" is 12)
        fields[key] = _positive(data.get(key), key, is_test)
    output: OutputFile = _structured(fields, OutputFile, "outputFile")
    return OutputFileUpdate(output_file=output, is_test=is_test)


_OUTPUT_FILE_KEYS = ("verificationJobId", "operation", "fileType")


def parse_delivery(
    body: bytes | str | Mapping[str, Any], headers: Mapping[str, str] | None = None
) -> Delivery:
    """Parse any delivery, telling the kinds apart by shape: an ``entry`` makes an entry
    update (as does an ``eventId`` or ``seasonId``), ``verificationJobId`` (or
    ``operation``/``fileType``) an output file, and anything else must be a status
    update ``{id, status}`` (an ``"entry": null`` beside them included)."""
    del headers
    return delivery_of(decode_body(body))


def delivery_of(data: Mapping[str, Any]) -> Delivery:
    """The delivery a decoded body holds, its kind told by its shape."""
    if data.get("entry") is not None or "eventId" in data or "seasonId" in data:
        return parse_entry_update(data)
    if any(key in data for key in _OUTPUT_FILE_KEYS):
        return parse_output_file(data)
    return parse_status_update(data)


def describe(update: Delivery) -> str:
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
