"""Static type test: ``with_raw_response`` calls return ``Reply`` of the plain call's type.

Nothing here runs under pytest; ``mypy --strict tests/typing`` fails if it drifts.
"""

from __future__ import annotations

from typing import assert_type

from svc_async import Client, Event, Organisation, Reply, VerificationJob


async def check(svc: Client) -> None:
    job = await svc.with_raw_response.jobs.get(7)
    assert_type(job, Reply[VerificationJob])
    assert_type(job.data, VerificationJob)
    assert_type(await svc.with_raw_response.orgs.list(), Reply[list[Organisation]])
    assert_type(await svc.with_raw_response.events.list(limit=5), Reply[list[Event]])
    assert_type(await svc.with_raw_response.jobs.wait(7), Reply[VerificationJob])
    found = await svc.with_raw_response.jobs.find_created("order-1")
    assert_type(found, Reply[VerificationJob | None])
