"""Static type test: the five call options are declared once, as ``CallOptions``.

Every sub-client call takes ``**options: Unpack[CallOptions]``: the options type-check on
each of them, a misspelt or mistyped one is a mypy error (each ``type: ignore`` below
must be needed: ``--strict`` warns about an unused one), and a helper can pass them on.
Nothing here runs under pytest; ``mypy --strict tests/typing`` fails if it drifts.
"""

from __future__ import annotations

from typing import Unpack, assert_type

from svc_async import (
    CallOptions,
    Client,
    Entry,
    Event,
    JobRequest,
    JobSearchResults,
    Organisation,
    Reply,
    RetryPolicy,
    Season,
    Timeout,
    VerificationJob,
)


async def seasons_of(svc: Client, **options: Unpack[CallOptions]) -> list[Season]:
    """A helper of the caller's own passes the options on, typed."""
    return await svc.seasons.list(**options)


async def check(svc: Client, request: JobRequest) -> None:
    options: CallOptions = {
        "timeout": 5.0,
        "attempt_timeout": Timeout(total=2.0),
        "retry": RetryPolicy(attempts=1),
        "extra_headers": {"X-Trace": "t"},
        "extra_query": {"debug": "1"},
    }
    assert_type(await svc.orgs.list(**options), list[Organisation])
    assert_type(await svc.seasons.list(**options), list[Season])
    assert_type(await svc.events.list(limit=5, **options), list[Event])
    assert_type(await svc.entries.for_event(1, **options), list[Entry])
    assert_type(await svc.entries.for_season(1, **options), list[Entry])
    assert_type(await svc.jobs.create(request, **options), VerificationJob)
    assert_type(await svc.jobs.get(7, **options), VerificationJob)
    assert_type(await svc.jobs.search(tags=["x"], **options), JobSearchResults)
    assert_type(await svc.with_raw_response.jobs.get(7, timeout="default"), Reply[VerificationJob])
    await svc.request("GET", "/x", timeout=None, extra_query={"a": "b"})
    await seasons_of(svc, timeout=1.0, retry=None)

    await svc.jobs.get(7, timout=2)  # type: ignore[call-arg]
    await svc.seasons.list(timeout="soon")  # type: ignore[arg-type]
    await svc.seasons.list(timeout=Timeout(total=1.0))  # type: ignore[arg-type]
    await svc.jobs.search(org_id=7)  # type: ignore[call-arg]
    await svc.with_raw_response.orgs.list(retries=3)  # type: ignore[call-arg]
    await seasons_of(svc, extra_header={"X": "y"})  # type: ignore[call-arg]
