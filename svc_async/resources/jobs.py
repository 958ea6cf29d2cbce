"""Verification jobs: create (exactly once), read, and search by tags."""

from __future__ import annotations

import asyncio
import builtins
import datetime as dt
import hashlib
import logging
import uuid
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Any, Unpack

import attrs

from .._core import validate as v
from .._pipeline.answers import Decoder
from .._pipeline.run import Ambiguous, deadline_scope
from ..converter import unstructure
from ..errors import AmbiguousCreateError, SvcError
from ..models import (
    CREATION_TAG_PREFIX,
    CURRENT_JOB_STATUSES,
    LEGACY_JOB_STATUSES,
    JobRequest,
    JobSearchResults,
    JobType,
    LicenseSource,
    OutputFileOperation,
    OutputFileType,
    VerificationJob,
)
from ..types import CallOptions, check_options
from ._base import Resource
from .pagination import iter_counted

if TYPE_CHECKING:  # the poller loads on first use, to keep `import svc_async` light
    from .polling import JobIds, OnStatus, PollPolicy

logger = logging.getLogger(__name__)

CREATE_PATH = "/api/public/v1/verification-job"
GET_PATH = "/api/public/v1/verification-job/{id}"
GET_PATH_PREFIX = GET_PATH.removesuffix("{id}")
SEARCH_PATH = "/api/public/v1/verification-job/search"
_JOB = Decoder(VerificationJob)
_FOUND = Decoder(JobSearchResults)


RESOLVE_INTERVAL = 1.0
"""Longest pause between searches for the tag of an ambiguous create (seconds)."""
RESOLVE_SEARCH_TIMEOUT = 10.0
RESOLVE_DEFAULT = 120.0
"""How long an ambiguous create is resolved when its call has no deadline (seconds)."""


def tag_for_key(idempotency_key: str) -> str:
    """The creation tag for a caller's idempotency key: the same key, the same tag."""
    if not isinstance(idempotency_key, str) or not idempotency_key.strip():
        raise ValueError("idempotency_key must be a non-empty string")
    digest = hashlib.sha256(idempotency_key.encode("utf-8")).hexdigest()[:48]
    return f"{CREATION_TAG_PREFIX}key-{digest}"


_SOURCES, _JOB_TYPES = tuple(LicenseSource), tuple(JobType)
_OPERATIONS, _FILE_TYPES = tuple(OutputFileOperation), tuple(OutputFileType)
"""What a create request may name, as the models' enums state it (checked before sending)."""


def validate_request(request: JobRequest) -> JobRequest:
    """Check a JobRequest against the service's rules before it is sent.

    Returns the request as it goes out (territories in upper case); raises
    ValueError/TypeError naming the field (e.g. ``request.tags[2]``) otherwise. The rules
    are the service's published ones: ``email`` an address or None, ``external_id`` a string or
    None, territories of two characters, tags of 2 to 255 characters, licence sources
    among the six (no file URLs for Service and Pending License), ``type`` VOD or
    Routine, ``output_file`` operation Mute.
    """
    if not isinstance(request, JobRequest):
        raise TypeError(f"request must be a JobRequest, got {type(request).__name__}")
    v.string(request.name, "request.name", allow_empty=True)
    v.optional_email(request.email, "request.email")
    v.positive_id(request.organisation_id, "request.organisation_id")
    v.http_url(request.audio_file_url, "request.audio_file_url")
    territories = v.country_codes(request.required_territories, "request.required_territories")
    v.optional_string(request.external_id, "request.external_id")
    v.tags(request.tags, "request.tags")
    for name in ("start_date", "end_date"):
        value = getattr(request, name)
        # A datetime is a date too, but would go out with a time: the service wants YYYY-MM-DD.
        if not isinstance(value, dt.date) or isinstance(value, dt.datetime):
            raise TypeError(f"request.{name} must be a datetime.date (not a datetime)")
    if request.start_date > request.end_date:
        raise ValueError("request.start_date must not be after request.end_date")
    details = request.license_details
    if isinstance(details, str | bytes) or not isinstance(details, list | tuple):
        raise TypeError(
            "request.license_details must be a list of LicenseDetails,"
            f" got {type(details).__name__}"
        )
    for i, item in enumerate(details):
        v.license_details(item, f"request.license_details[{i}]", _SOURCES)
    if request.type is not None:
        v.one_of(request.type, _JOB_TYPES, "request.type")
    if request.output_file is not None:
        v.output_file(request.output_file, "request.output_file", _OPERATIONS, _FILE_TYPES)
    if territories != request.required_territories:
        return attrs.evolve(request, required_territories=territories)
    return request


def _search_statuses(value: Any, name: str = "statuses") -> builtins.list[str]:
    """Statuses a search may carry: only the service's current list (legacy ones refused)."""
    allowed = [str(s) for s in CURRENT_JOB_STATUSES]
    items = v.string_list(value, name)
    for i, status in enumerate(items):
        if str(status) not in allowed:
            hint = (
                " (a legacy name the service still shows but refuses in a search:"
                " ask for Processed or Submitted)"
                if str(status) in LEGACY_JOB_STATUSES
                else ""
            )
            raise ValueError(
                f"{name}[{i}] is {str(status)!r}, not one of the service's current job"
                f" statuses: {', '.join(allowed)}{hint}"
            )
    return [str(status) for status in items]


def _search_tags(value: Any) -> builtins.list[str]:
    """Search tags: at most 100 strings, of any length."""
    return v.tags(value, "tags", maximum=v.MAX_SEARCH_TAGS, lengths=None)


class Jobs(Resource):
    """Create verification jobs, read them, search them by tags, and wait for verdicts."""

    @property
    def webhooks(self) -> Any:
        """The client's webhook receiver (None: polling only), for ``jobs.wait``."""
        return self._owner.webhooks

    @property
    def metrics(self) -> Any:
        """The client's OpenTelemetry instruments (None: ``metrics=`` off), for ``jobs.wait``."""
        return getattr(self._owner, "metrics", None)

    async def create(
        self,
        request: JobRequest,
        *,
        creation_tag: bool | None = None,
        idempotency_key: str | None = None,
        **options: Unpack[CallOptions],
    ) -> VerificationJob:
        """Create a job exactly once, even when the service's answer is lost.

        The service has no idempotency key, so each create carries a tag
        (``svc-async-create:<uuid4 hex>``, or derived from ``idempotency_key``; turn off
        with ``creation_tag=False`` or ``Client(creation_tags=False)``). The request is
        re-sent only when the failure proves the service never processed it (refused
        connection, 429, 503 with Retry-After). After any other failure the SDK searches
        for the tag until it finds the job or the call's ``timeout`` passes, then raises
        ``AmbiguousCreateError`` (with the tag): it never POSTs again.

        With ``idempotency_key`` the tag is derived from the key, and the job carrying it
        is looked up first: a repeat of the same create (e.g. by a restarted process)
        returns the existing job instead of making another, once the search index shows
        it (the index lags writes by a few seconds).
        """
        request = validate_request(request)
        use_tag = self._owner.creation_tags if creation_tag is None else creation_tag
        if idempotency_key is not None:
            if creation_tag is False:
                raise ValueError(
                    "idempotency_key needs creation_tag; do not pass creation_tag=False"
                )
            tag: str | None = tag_for_key(idempotency_key)
        else:
            tag = f"{CREATION_TAG_PREFIX}{uuid.uuid4().hex}" if use_tag else None
        body: dict[str, Any] = unstructure(request)
        if tag is not None:
            body["tags"] = [*body["tags"], tag]
            if idempotency_key is not None:
                check_options("jobs.create", options)  # before the lookup sends anything
                existing = await self._lookup(tag, None)
                if existing is not None:
                    return existing
        try:
            data = await self._send(
                "POST",
                CREATE_PATH,
                body,
                options,
                decode=_JOB,
                idempotent=False,
                ambiguous=tag is not None,
                operation="jobs.create",
            )
            if isinstance(data, Ambiguous):
                assert tag is not None
                with deadline_scope(data.deadline):  # its searches end by the create's
                    return await self._settle(tag, data.failure, data.deadline)
        except asyncio.CancelledError:
            if tag is not None:
                logger.warning(
                    "job create cancelled; it may exist: search for tag %s",
                    tag,
                    extra={"operation": "jobs.create", "method": "POST"},
                )
            raise
        return data

    async def _settle(self, tag: str, failure: SvcError, deadline: float | None) -> VerificationJob:
        """After an ambiguous failure: search for ``tag`` until the create's deadline."""
        clock = self.clock
        end = clock.now() + RESOLVE_DEFAULT if deadline is None else deadline
        looks = 0
        while True:
            looks += 1
            left = end - clock.now()
            if left > 0.05:
                found = await self._lookup(tag, min(left, RESOLVE_SEARCH_TIMEOUT))
                if found is not None:
                    return found
            pause = min(end - clock.now() - 0.05, RESOLVE_INTERVAL * min(looks, 4) / 4)
            if pause < 0.001:
                break  # a shorter sleep may not move the clock: the loop would spin
            await clock.sleep(pause)
        logger.warning(
            "job create ended ambiguous after %s: search for tag %s later",
            type(failure).__name__,
            tag,
            extra={
                "operation": "jobs.create",
                "method": "POST",
                "request_id": failure.request_id,
                "reason": type(failure).__name__,
            },
        )
        raise AmbiguousCreateError(
            f"could not tell whether the job was created ({failure}); no job with"
            f" tag {tag!r} appeared before the deadline; search for it later"
            " (jobs.find_created)",
            tag=tag,
        ) from failure

    async def _lookup(self, tag: str, timeout: float | None) -> VerificationJob | None:
        """The job carrying ``tag`` (the lowest id if several), None when none or on error."""
        try:
            page = await self.search(
                tags=[tag], limit=10, timeout="default" if timeout is None else max(0.05, timeout)
            )
        except SvcError as exc:
            logger.info(
                "search for creation tag failed: %s",
                type(exc).__name__,
                extra={
                    "operation": "jobs.search",
                    "method": "POST",
                    "request_id": exc.request_id,
                    "status": getattr(exc, "status", None),
                    "reason": type(exc).__name__,
                },
            )
            return None
        if not page.jobs:
            return None
        jobs = sorted(page.jobs, key=lambda job: job.id)
        if len(jobs) > 1:
            logger.warning(
                "job create produced %d jobs with tag %s: %s; returning %d",
                len(jobs),
                tag,
                [job.id for job in jobs],
                jobs[0].id,
            )
        return jobs[0]

    async def find_created(self, tag_or_key: str) -> VerificationJob | None:
        """The job a create made, by its creation tag or the ``idempotency_key`` it used.

        One search: a job created in the last few seconds may not show yet (index lag).
        """
        if not isinstance(tag_or_key, str) or not tag_or_key:
            raise TypeError("tag_or_key must be a non-empty string")
        tag = tag_or_key if tag_or_key.startswith(CREATION_TAG_PREFIX) else tag_for_key(tag_or_key)
        page = await self.search(tags=[tag], limit=10)
        return min(page.jobs, key=lambda job: job.id) if page.jobs else None

    async def get(
        self,
        job_id: int,
        **options: Unpack[CallOptions],
    ) -> VerificationJob:
        """One job in full, with its recording and licence data once processed."""
        path = f"{GET_PATH_PREFIX}{v.positive_id(job_id, 'job_id')}"
        return await self._send(
            "GET", path, None, options, decode=_JOB, idempotent=True, operation="jobs.get"
        )

    async def search(
        self,
        *,
        tags: builtins.list[str] | tuple[str, ...] = (),
        statuses: builtins.list[str] | tuple[str, ...] = (),
        organisation_id: int | None = None,
        limit: int = 25,
        offset: int = 0,
        **options: Unpack[CallOptions],
    ) -> JobSearchResults:
        """One page of jobs carrying ALL ``tags`` (none: every job); ``count`` is the total.

        ``organisation_id`` narrows the search to one organisation.
        """
        organisation = v.optional_id(organisation_id, "organisation_id")
        body: dict[str, Any] = {
            "tags": _search_tags(tags),
            "statuses": _search_statuses(statuses),
            "limit": v.count(limit, "limit", minimum=1, maximum=v.MAX_PAGE_SIZE),
            "offset": v.count(offset, "offset"),
        }
        if organisation is not None:
            body["orgId"] = organisation
        return await self._send(
            "POST",
            SEARCH_PATH,
            body,
            options,
            decode=_FOUND,
            idempotent=True,
            operation="jobs.search",
        )

    def iter_search(
        self,
        *,
        tags: builtins.list[str] | tuple[str, ...] = (),
        statuses: builtins.list[str] | tuple[str, ...] = (),
        organisation_id: int | None = None,
        page_size: int = 25,
        concurrency: int = 4,
    ) -> AsyncGenerator[VerificationJob, None]:
        """Every job matching the search, each once, pages read concurrently.

        The first page's ``count`` says how many pages remain; they are fetched with at
        most ``concurrency`` in flight and yielded in order. The service promises no
        ordering, so jobs created or changed while paging can shift pages: jobs are
        deduplicated by id, pages past the first ``count`` are read while the latest
        ``count`` says more exist, and when fewer jobs were seen than ``count`` the
        search is read once more from the start (see ``pagination.iter_counted``). Jobs
        present throughout are yielded exactly once; jobs added meanwhile at most once.
        """
        tag_list = _search_tags(tags)
        status_list = _search_statuses(statuses)
        organisation = v.optional_id(organisation_id, "organisation_id")
        size = v.count(page_size, "page_size", minimum=1, maximum=v.MAX_PAGE_SIZE)
        workers = v.count(concurrency, "concurrency", minimum=1, maximum=64)

        async def page(limit: int, offset: int) -> tuple[builtins.list[VerificationJob], int]:
            found = await self.search(
                tags=tag_list,
                statuses=status_list,
                organisation_id=organisation,
                limit=limit,
                offset=offset,
            )
            return found.jobs, found.count

        return self._tracker.stepwise("jobs.iter_search", iter_counted(page, size, workers))

    # Waiting for verdicts: thin wrappers over svc_async.resources.polling.

    async def wait(
        self,
        job_id: int,
        *,
        timeout: float | None = None,
        policy: PollPolicy | None = None,
        on_status: OnStatus | None = None,
    ) -> VerificationJob:
        """Poll until the job is finished; return it whatever the outcome.

        Finished: Processed, Submitted or Errored (and the legacy Completed/Confirmed), or
        any job with an ``errorMessage``. ``timeout`` bounds the whole wait in seconds,
        polls and pauses included (default ``policy.timeout``), as a call's ``timeout``
        bounds the whole call; each poll gets only what is left. ``JobWaitTimeout``
        carries the last snapshot. ``on_status`` (sync or async) sees each status change.
        With ``Client(webhooks=receiver)`` the wait wakes on the job's webhook delivery.
        """
        from . import polling

        with self._tracker.operation(f"wait for job {job_id}"):
            return await polling.wait_for_job(
                self, job_id, timeout=timeout, policy=policy, on_status=on_status
            )

    async def create_and_wait(
        self,
        request: JobRequest,
        *,
        timeout: float | None = None,
        policy: PollPolicy | None = None,
        on_status: OnStatus | None = None,
    ) -> VerificationJob:
        """Create a job (exactly once) and wait until it is finished.

        ``timeout`` bounds the wait (seconds from the moment the job was created).
        """
        from . import polling

        chosen, limit = polling.wait_settings(policy, timeout, on_status)  # before the create
        with self._tracker.operation("jobs.create_and_wait"):
            created = await self.create(request)
            return await polling.wait_for_job(
                self, created.id, timeout=limit, policy=chosen, on_status=on_status, first=created
            )

    def wait_many(
        self,
        job_ids: JobIds,
        *,
        tag: str | None = None,
        policy: PollPolicy | None = None,
        timeout: float | None = None,
    ) -> AsyncGenerator[VerificationJob, None]:
        """Yield jobs as they finish, with one tag search per tick instead of a poll each.

        ``timeout`` bounds the whole wait for all of them.
        """
        from . import polling
        from .bulk import unique_ids

        ids = unique_ids(job_ids, "job_ids")
        if tag is not None:
            v.string(tag, "tag", allow_empty=True)  # a search tag: any length
        waits = polling.wait_many(self, ids, tag, *polling.wait_settings(policy, timeout))
        return self._tracker.stepwise("jobs.wait_many", waits)

    def watch(
        self,
        job_id: int,
        *,
        policy: PollPolicy | None = None,
        timeout: float | None = None,
    ) -> AsyncGenerator[VerificationJob, None]:
        """Yield the job's snapshots as its status changes, ending after the finished one.

        ``timeout`` bounds the whole watch.
        """
        from . import polling

        v.positive_id(job_id, "job_id")
        snapshots = polling.changes(self, job_id, *polling.wait_settings(policy, timeout))
        return self._tracker.stepwise(f"watch of job {job_id}", snapshots)
