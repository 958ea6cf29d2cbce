"""Verification jobs: create (exactly once), read, and search by tags."""

from __future__ import annotations

import asyncio
import builtins
import datetime as dt
import logging
import uuid
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Any

import attrs

from .. import _validate as v
from ..converter import structure, unstructure
from ..errors import (
    AmbiguousCreateError,
    APIError,
    ResponseDecodeError,
    ServerError,
    SvcError,
    TransportError,
)
from ..models import (
    CREATION_TAG_PREFIX,
    CURRENT_JOB_STATUSES,
    LEGACY_JOB_STATUSES,
    JobRequest,
    JobSearchResults,
    VerificationJob,
)
from ..pagination import iter_counted
from ..retry import RetryPolicy, parse_retry_after
from ._base import Resource, TimeoutOpt

if TYPE_CHECKING:  # the poller loads on first use, to keep `import svc_async` light
    from ..polling import JobIds, OnStatus, PollPolicy

logger = logging.getLogger("svc_async")

CREATE_PATH = "/api/public/v1/verification-job"
GET_PATH = "/api/public/v1/verification-job/{id}"
SEARCH_PATH = "/api/public/v1/verification-job/search"


def validate_request(request: JobRequest) -> JobRequest:
    """Check a JobRequest against the service's rules before it is sent.

    Returns the request as it goes out (territories in upper case); raises
    ValueError/TypeError naming the field (e.g. ``request.tags[2]``) otherwise. The rules
    are TYPES.md "Requests": ``email`` an address or None, ``external_id`` a string or
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
        v.license_details(item, f"request.license_details[{i}]")
    if request.type is not None:
        v.one_of(request.type, v.JOB_TYPES, "request.type")
    if request.output_file is not None:
        v.output_file(request.output_file, "request.output_file")
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

    async def create(
        self,
        request: JobRequest,
        *,
        timeout: TimeoutOpt = "default",
        retry: RetryPolicy | None = None,
        creation_tag: bool | None = None,
    ) -> VerificationJob:
        """Create a job exactly once, even when the service's answer is lost.

        The service has no idempotency key, so each create carries a unique tag
        (``svc-async-create:<uuid4 hex>``; turn off with ``creation_tag=False`` or
        ``Client(creation_tags=False)``). The request is re-sent at once only when it
        certainly never left; after an ambiguous failure the SDK searches for the tag
        and re-sends only when no job carries it. ``AmbiguousCreateError`` (with the tag)
        when it still cannot tell.
        """
        request = validate_request(request)
        use_tag = self._client.creation_tags if creation_tag is None else creation_tag
        body: dict[str, Any] = unstructure(request)
        tag = f"{CREATION_TAG_PREFIX}{uuid.uuid4().hex}" if use_tag else None
        if tag is not None:
            body["tags"] = [*body["tags"], tag]
        policy = retry or self._client._retry
        attempt = 0
        while True:
            attempt += 1
            try:
                data = await self._client._call(
                    "POST",
                    CREATE_PATH,
                    body,
                    idempotent=False,
                    retry_on_status=False,
                    timeout=timeout,
                    retry=policy,
                )
                return structure(data, VerificationJob)
            except TransportError as exc:
                failure: SvcError = exc
                ambiguous = exc.maybe_sent
            except ServerError as exc:
                failure = exc
                retry_after = parse_retry_after(exc.headers.get("Retry-After"))
                # A 503 with Retry-After is a refusal before processing; others may hide a job.
                ambiguous = not (exc.status == 503 and retry_after is not None)
            except ResponseDecodeError as exc:
                failure, ambiguous = exc, True
            if ambiguous:
                if tag is None:
                    raise failure
                found, searched = await self._find_created(tag, policy)
                if found is not None:
                    return found
                if not searched:
                    # Without one answered search "no job" is unknown: re-sending could
                    # create a second job.
                    raise AmbiguousCreateError(
                        f"could not tell whether the job was created ({failure}) because"
                        f" the search failed; search for tag {tag!r} later",
                        tag=tag,
                    ) from failure
            if attempt >= policy.max_attempts:
                if ambiguous and tag is not None:
                    raise AmbiguousCreateError(
                        f"could not tell whether the job was created ({failure});"
                        f" search for tag {tag!r} later",
                        tag=tag,
                    ) from failure
                raise failure
            wait = policy.backoff(attempt)
            if isinstance(failure, APIError):
                wait = max(wait, parse_retry_after(failure.headers.get("Retry-After")) or 0.0)
            logger.info(
                "re-sending job create (attempt %d of %d) after %s",
                attempt + 1,
                policy.max_attempts,
                type(failure).__name__,
            )
            await asyncio.sleep(wait)

    async def _find_created(
        self, tag: str, policy: RetryPolicy
    ) -> tuple[VerificationJob | None, bool]:
        """Look for the job carrying ``tag``, a few times since the search index may lag.

        Returns the job (the lowest id if several carry the tag) and whether any search
        was answered at all.
        """
        searched = False
        for look in range(1, policy.max_attempts + 1):
            try:
                page = await self.search(tags=[tag], limit=10)
            except SvcError as exc:
                logger.info("search for creation tag failed: %s", type(exc).__name__)
            else:
                searched = True
                if page.jobs:
                    jobs = sorted(page.jobs, key=lambda job: job.id)
                    if len(jobs) > 1:
                        logger.warning(
                            "job create produced %d jobs with tag %s: %s; returning %d",
                            len(jobs),
                            tag,
                            [job.id for job in jobs],
                            jobs[0].id,
                        )
                    return jobs[0], True
            if look < policy.max_attempts:
                # The full wait, no jitter: the point is to outwait the index.
                await asyncio.sleep(policy.ceiling(look))
        return None, searched

    async def get(
        self, job_id: int, *, timeout: TimeoutOpt = "default", retry: RetryPolicy | None = None
    ) -> VerificationJob:
        """One job in full, with its recording and licence data once processed."""
        path = GET_PATH.format(id=v.positive_id(job_id, "job_id"))
        data = await self._client._call("GET", path, idempotent=True, timeout=timeout, retry=retry)
        return structure(data, VerificationJob)

    async def search(
        self,
        *,
        tags: builtins.list[str] | tuple[str, ...] = (),
        statuses: builtins.list[str] | tuple[str, ...] = (),
        org_id: int | None = None,
        limit: int = 25,
        offset: int = 0,
        timeout: TimeoutOpt = "default",
        retry: RetryPolicy | None = None,
    ) -> JobSearchResults:
        """One page of jobs carrying ALL ``tags`` (none: every job); ``count`` is the total."""
        body: dict[str, Any] = {
            "tags": _search_tags(tags),
            "statuses": _search_statuses(statuses),
            "limit": v.count(limit, "limit", minimum=1, maximum=v.MAX_PAGE_SIZE),
            "offset": v.count(offset, "offset"),
        }
        if org_id is not None:
            body["orgId"] = v.positive_id(org_id, "org_id")
        data = await self._client._call(
            "POST", SEARCH_PATH, body, idempotent=True, timeout=timeout, retry=retry
        )
        return structure(data, JobSearchResults)

    def iter_search(
        self,
        *,
        tags: builtins.list[str] | tuple[str, ...] = (),
        statuses: builtins.list[str] | tuple[str, ...] = (),
        org_id: int | None = None,
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
        v.optional_id(org_id, "org_id")
        size = v.count(page_size, "page_size", minimum=1, maximum=v.MAX_PAGE_SIZE)
        workers = v.count(concurrency, "concurrency", minimum=1, maximum=64)

        async def page(limit: int, offset: int) -> tuple[builtins.list[VerificationJob], int]:
            found = await self.search(
                tags=tag_list, statuses=status_list, org_id=org_id, limit=limit, offset=offset
            )
            return found.jobs, found.count

        return iter_counted(page, size, workers)

    # Waiting for verdicts: thin wrappers over svc_async.polling.

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
        polls and pauses included (default ``policy.timeout``); it is not a per-request
        limit. ``JobWaitTimeout`` carries the last snapshot. ``on_status`` (sync or async)
        sees each status change. With ``Client(webhooks=receiver)`` the wait wakes on the
        job's webhook delivery.
        """
        from .. import polling

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
        from .. import polling

        return await polling.create_and_wait(
            self, request, timeout=timeout, policy=policy, on_status=on_status
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
        from .. import polling

        return polling.wait_many(self, job_ids, tag=tag, policy=policy, timeout=timeout)

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
        from .. import polling

        return polling.watch(self, job_id, policy=policy, timeout=timeout)
