"""Wake-up sources: what ``jobs.wait`` subscribes to so a job's status delivery wakes it.

A ``WakeSource`` is anything with ``subscribe``/``unsubscribe``: a ``WebhookReceiver``
(deliveries it takes, and in a fleet the fleet's), or the ``FleetWake`` a
``Client(fleet=..., account=...)`` builds for itself (the fleet's wake-ups alone).
``Waiters`` is the table of subscriptions both keep (a ``FleetWake`` is one, fed by
the fleet).
"""

from __future__ import annotations

import asyncio
from typing import Protocol, runtime_checkable

import attrs

from .payloads import JobStatusUpdate

__all__ = ["JobSubscription", "Waiters", "WakeSource"]


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


@runtime_checkable
class WakeSource(Protocol):
    """Where a client's waits get woken: subscribe to a job id, be woken on its news."""

    def subscribe(self, job_id: int, event: asyncio.Event | None = None) -> JobSubscription:
        """Register interest in ``job_id``; ``event`` (shared or new) is set on each update."""
        ...

    def unsubscribe(self, sub: JobSubscription) -> None:
        """Drop a subscription; dropping one twice is harmless."""
        ...


class Waiters:
    """This process's subscriptions, by job id (a ``WakeSource``)."""

    def __init__(self) -> None:
        self._subs: dict[int, set[JobSubscription]] = {}

    def subscribe(self, job_id: int, event: asyncio.Event | None = None) -> JobSubscription:
        """Register interest in ``job_id``; ``event`` (shared or new) is set on each update.

        Pair every call with ``unsubscribe`` (in a ``finally``), or the table keeps it.
        """
        sub = JobSubscription(job_id) if event is None else JobSubscription(job_id, event)
        self._subs.setdefault(job_id, set()).add(sub)
        return sub

    def unsubscribe(self, sub: JobSubscription) -> None:
        """Drop a subscription; dropping one twice is harmless."""
        subs = self._subs.get(sub.job_id)
        if subs is not None:
            subs.discard(sub)
            if not subs:
                del self._subs[sub.job_id]

    def wake(self, update: JobStatusUpdate) -> None:
        """Hand a status update to the job's subscriptions."""
        for sub in self._subs.get(update.job_id, ()):
            sub.update = update
            sub.event.set()

    @property
    def subscribed_jobs(self) -> frozenset[int]:
        """The job ids someone is subscribed to now."""
        return frozenset(self._subs)
