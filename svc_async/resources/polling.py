"""Waiting for verification jobs: ``PollPolicy`` and the pollers behind ``jobs.wait``.

A single job is polled with ``jobs.get`` on a growing, jittered interval until it is
finished: Processed, Submitted or Errored, the legacy Completed/Confirmed, or any job
with an ``errorMessage`` (``PollPolicy.finished_statuses``). With
``Client(..., webhooks=receiver)`` the wait also wakes on the job's webhook delivery,
confirms with one ``get``, and meanwhile polls only slowly in case the delivery never
comes. Many jobs are watched together with one tag search per tick
(``wait_many``) instead of one poll loop each.

Transient failures of a poll (transport errors, 5xx, 429 after the client's own retries)
do not end a wait: they are logged and the next poll happens on schedule. Other errors
(404, 401, ...) propagate.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import random
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Protocol, TypeVar

import attrs

from .._core import validate as v
from .._pipeline.run import deadline_scope
from ..clock import Clock, until, within
from ..errors import (
    BadRequestError,
    JobWaitTimeout,
    LocalProtocolError,
    RateLimitError,
    ServerError,
    SvcError,
    TransportError,
)
from ..models import (
    CURRENT_JOB_STATUSES,
    FINISHED_JOB_STATUSES,
    JobSearchResults,
    VerificationJob,
)
from ..retry import jittered
from ..webhooks.waiters import JobSubscription, WakeSource
from ._base import notify

if TYPE_CHECKING:  # only a client given metrics= imports OpenTelemetry
    from .._pipeline.metrics import Metrics

logger = logging.getLogger(__name__)

T = TypeVar("T")

__all__ = [
    "JobIds",
    "JobsClient",
    "OnStatus",
    "PollPolicy",
    "changes",
    "wait_for_job",
    "wait_many",
    "wait_settings",
]

OnStatus = Callable[[VerificationJob], Awaitable[None] | None]
"""A status-change callback: a plain function or a coroutine function."""

JobIds = Iterable[int]
"""The ids ``wait_many`` waits for (any iterable of ints; duplicates are ignored)."""


class JobsClient(Protocol):
    """What the pollers use of ``svc.jobs`` (the ``Jobs`` sub-client, known by this shape:
    the sub-client imports the pollers, never the other way round).

    A ``metrics`` attribute, when there is one (the client's ``Metrics``, or None), is
    where ``wait_for_job`` records each wait's duration and outcome.
    """

    @property
    def clock(self) -> Clock:
        """The client's clock: the waits' deadlines and pauses."""
        ...

    @property
    def webhooks(self) -> object:
        """The client's wake-up source (a ``WakeSource``), or None (polling only)."""
        ...

    async def get(self, job_id: int) -> VerificationJob:
        """One job."""
        ...

    async def search(
        self, *, tags: list[str], statuses: list[str], limit: int, offset: int
    ) -> JobSearchResults:
        """A page of the jobs carrying ``tags`` (and one of ``statuses``)."""
        ...


_TRANSIENT = (TransportError, ServerError, RateLimitError)
_MAX_PAGES = 5
"""Search pages read per tick by ``wait_many`` (100 jobs each)."""
_MIN_BATCH = 4
"""Fewest ``get`` calls per tick of ``wait_many`` when it cannot use a search."""
_SAFETY_EVERY = 4
"""``wait_many`` re-reads one searched job with ``get`` every this many ticks."""


def _positive(value: float, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ValueError(f"{name} must be a positive number, got {value!r}")
    if math.isinf(value):
        raise ValueError(f"{name} must be finite")


def _statuses(value: Iterable[str]) -> frozenset[str]:
    if isinstance(value, str):
        raise TypeError("finished_statuses must be a collection of strings, not one string")
    return frozenset(str(s) for s in value)


@attrs.frozen(kw_only=True)
class PollPolicy:
    """How ``jobs.wait`` polls, in the backoff words of ``RetryPolicy``.

    The pause after poll ``n`` is at most ``min(wait_max, wait_initial * wait_exp_base **
    (n - 1))`` seconds, shortened at random by up to ``wait_jitter`` (a fraction of the
    pause: 0.1 is up to 10 % shorter), ``RetryPolicy``'s meaning of the word. The
    defaults suit jobs of seconds to minutes: a 2 s job costs about 3 gets, a minute
    about 10, and a finished job is noticed within ``wait_max`` (15 s) at worst.

    ``timeout`` bounds the **whole wait**, every poll and pause included (None: no
    limit); each poll is one ``jobs.get`` under the client's own ``timeout``, cut to what
    is left of the wait.
    ``finished_statuses`` end a wait (so does a non-empty ``errorMessage``); unknown
    statuses mean "still running". While a webhook receiver is attached, pauses are
    multiplied by ``webhook_factor`` since the delivery should come first.
    """

    wait_initial: float = 1.0
    wait_exp_base: float = 1.5
    wait_max: float = 15.0
    wait_jitter: float = 0.1
    timeout: float | None = 600.0
    finished_statuses: frozenset[str] = attrs.field(
        default=FINISHED_JOB_STATUSES, converter=_statuses
    )
    webhook_factor: float = 4.0

    def __attrs_post_init__(self) -> None:
        _positive(self.wait_initial, "wait_initial")
        _positive(self.wait_max, "wait_max")
        _positive(self.webhook_factor, "webhook_factor")
        if isinstance(self.wait_exp_base, bool) or not self.wait_exp_base >= 1:
            raise ValueError(f"wait_exp_base must be at least 1, got {self.wait_exp_base!r}")
        if isinstance(self.wait_jitter, bool) or not 0 <= self.wait_jitter < 1:
            raise ValueError(f"wait_jitter must be a fraction in [0, 1), got {self.wait_jitter!r}")
        if self.timeout is not None:
            _positive(self.timeout, "timeout")
        if self.webhook_factor < 1:
            raise ValueError("webhook_factor must be at least 1")
        if not self.finished_statuses:
            raise ValueError("finished_statuses must not be empty")

    def interval(self, attempt: int, rng: random.Random | None = None) -> float:
        """Seconds to wait after poll number ``attempt`` (1-based), jitter included."""
        exponent = min(max(attempt, 1) - 1, 1000)
        try:
            grown = self.wait_initial * self.wait_exp_base**exponent
        except OverflowError:  # beyond any float, so beyond wait_max (as RetryPolicy's)
            grown = math.inf if self.wait_initial else 0.0
        return jittered(min(self.wait_max, grown), self.wait_jitter, rng)

    def is_finished(self, job: VerificationJob) -> bool:
        """Whether ``job`` is finished under this policy (status or an error message)."""
        return job.is_finished_under(self.finished_statuses)


def wait_settings(
    policy: PollPolicy | None, timeout: float | None, on_status: OnStatus | None = None
) -> tuple[PollPolicy, float | None]:
    """A wait's policy (None: the default) and the seconds it may take (None:
    ``policy.timeout``), checked, as is its ``on_status`` (None or a callable)."""
    if on_status is not None and not callable(on_status):
        raise TypeError("on_status must be callable")
    if policy is None:
        policy = PollPolicy()
    elif not isinstance(policy, PollPolicy):
        raise TypeError(f"policy must be a PollPolicy, got {type(policy).__name__}")
    if timeout is None:
        return policy, policy.timeout
    _positive(timeout, "timeout")
    return policy, float(timeout)


def _receiver(jobs: JobsClient) -> WakeSource | None:
    receiver = getattr(jobs, "webhooks", None)
    return receiver if isinstance(receiver, WakeSource) else None


_RESOLUTION = 1e-6
"""A deadline closer than this is reached: a float sum such as ``now + timeout`` can land
a rounding error past what the clock reads after sleeping exactly ``timeout``, and the
event loop runs a sleep that short at once (on virtual time, the time never moves on)."""


class _Wait:
    """What one job's wait and a ``wait_many`` share: the policy, the deadline on the
    client's clock (the event loop's timeline), the last read's failure and the pace of
    the pauses (slower while a wake-up source is there)."""

    def __init__(
        self, jobs: JobsClient, policy: PollPolicy, timeout: float | None, woken: bool
    ) -> None:
        self.jobs = jobs
        self.policy = policy
        self.clock = jobs.clock
        self.timeout = timeout
        self.deadline = None if timeout is None else self.clock.now() + timeout
        self.factor = policy.webhook_factor if woken else 1.0
        self.rng = random.Random()
        self.error: SvcError | None = None  # the last read's failure: a pause, a cause

    def left(self) -> float:
        return math.inf if self.deadline is None else self.deadline - self.clock.now()

    def expired(self) -> bool:
        return self.left() < _RESOLUTION

    async def read(self, call: Callable[[], Awaitable[T]], what: str) -> T | None:
        """``call()`` (a poll, a page of a search) ended by the wait's deadline; None when
        it failed transiently (the failure kept in ``error``, not raised) or was ended.

        Every call it makes inherits the deadline (the pipeline's ``deadline_scope``), and
        the whole is cut there on the client's clock. A read ended by the deadline (cut,
        or failed as the time ran out) is no failure: the wait ends with its
        ``JobWaitTimeout``.
        """
        try:
            with deadline_scope(self.deadline):
                async with until(self.clock, self.deadline):
                    return await call()
        except TimeoutError:
            if self.expired():
                return None
            raise
        except LocalProtocolError:
            raise  # refused before sending: the next read would be refused the same way
        except _TRANSIENT as exc:
            if self.expired():
                return None
            logger.warning("%s failed (%s); will try again", what, type(exc).__name__)
            self.error = exc
            return None

    def get(self, job_id: int) -> Awaitable[VerificationJob | None]:
        """One poll of ``job_id``, as ``read`` makes it."""
        return self.read(lambda: self.jobs.get(job_id), f"polling job {job_id}")

    def waiting(self) -> tuple[str, VerificationJob | None]:
        """What is still waited for, in words, and a last snapshot of it (None: unread)."""
        raise NotImplementedError

    def timed_out(self) -> JobWaitTimeout:
        """The ``JobWaitTimeout`` that ends this wait at its deadline."""
        what, job = self.waiting()
        status = "never read" if job is None else f"last status {job.status}"
        error = JobWaitTimeout(f"{what} not finished after {self.timeout:g}s ({status})", job=job)
        error.__cause__ = self.error
        return error

    async def rest(self, attempt: int, event: asyncio.Event | None) -> bool:
        """Pause after read number ``attempt``; True when ``event`` was set first (a
        webhook delivery cuts the pause short). ``JobWaitTimeout`` when the wait's
        deadline has passed."""
        if self.expired():
            raise self.timed_out()
        interval = self.policy.interval(attempt, self.rng) * self.factor
        pause = max(interval, _server_wait(self.error))
        if await _sleep(min(pause, self.left()), event, self.clock):
            return True
        if self.expired():
            raise self.timed_out()
        return False


def _server_wait(error: SvcError | None) -> float:
    if isinstance(error, RateLimitError) and error.retry_after is not None:
        return error.retry_after
    return 0.0


async def _sleep(seconds: float, event: asyncio.Event | None, clock: Clock) -> bool:
    """Sleep ``seconds`` on ``clock``; True when ``event`` was set (it is cleared) before."""
    if event is None:
        await clock.sleep(seconds)
        return False
    if not event.is_set():
        with contextlib.suppress(TimeoutError):
            async with within(clock, seconds):
                await event.wait()
    woke = event.is_set()
    event.clear()
    return woke


class _Poll(_Wait):
    """One job's wait: its last snapshot, its subscription, and the count of its polls."""

    def __init__(
        self,
        jobs: JobsClient,
        job_id: int,
        policy: PollPolicy,
        timeout: float | None,
        sub: JobSubscription | None,
    ) -> None:
        super().__init__(jobs, policy, timeout, sub is not None)
        self.job_id = job_id
        self.sub = sub
        self.last: VerificationJob | None = None
        self.attempt = 0

    async def poll(self) -> VerificationJob | None:
        """Poll once; None when the poll failed (or the deadline cut it)."""
        self.error = None
        return await self.get(self.job_id)

    def shows(self, job: VerificationJob) -> bool:
        """Record ``job``; True for the first snapshot, a status change and the finish."""
        last, self.last = self.last, job
        return last is None or job.status != last.status or self.policy.is_finished(job)

    def waiting(self) -> tuple[str, VerificationJob | None]:
        return f"job {self.job_id}", self.last

    async def pause(self) -> None:
        """Wait until the next poll (a webhook delivery may cut the pause short); raise
        ``JobWaitTimeout`` when the wait's deadline has passed."""
        self.attempt += 1
        sub = self.sub
        woke = await self.rest(self.attempt, None if sub is None else sub.event)
        if woke and sub is not None and sub.update is not None:
            logger.debug("job %d woken by webhook (%s)", self.job_id, sub.update.status)
            if str(sub.update.status) in self.policy.finished_statuses:
                # Confirm now; if the read lags the event, poll at the normal pace.
                self.factor, self.attempt = 1.0, 0


async def changes(
    jobs: JobsClient,
    job_id: int,
    policy: PollPolicy,
    timeout: float | None,
    first: VerificationJob | None = None,
) -> AsyncGenerator[VerificationJob, None]:
    """Yield a job's first snapshot, each whose status changed, and the finished one;
    then end (``jobs.watch``; arguments checked, ``timeout`` in seconds or None)."""
    receiver = _receiver(jobs)
    sub = receiver.subscribe(job_id) if receiver is not None else None
    poll = _Poll(jobs, job_id, policy, timeout, sub)
    job = first
    try:
        while True:
            if job is None:
                job = await poll.poll()
            if job is not None:
                if poll.shows(job):
                    yield job
                if policy.is_finished(job):
                    return
            await poll.pause()
            job = None
    finally:
        if sub is not None and receiver is not None:
            receiver.unsubscribe(sub)


async def wait_for_job(
    jobs: JobsClient,
    job_id: int,
    *,
    timeout: float | None = None,
    policy: PollPolicy | None = None,
    on_status: OnStatus | None = None,
    first: VerificationJob | None = None,
) -> VerificationJob:
    """Poll until the job is finished and return it, whatever its outcome.

    ``on_status`` (sync or async) gets the first snapshot and each one whose status
    changed, the finished one included; an exception it raises ends the wait.
    ``JobWaitTimeout`` (with the last snapshot) when ``timeout`` (default:
    ``policy.timeout``) passes.
    """
    v.positive_id(job_id, "job_id")
    chosen, limit = wait_settings(policy, timeout, on_status)
    # The wait's duration and how it ended (finished, with the job's status; timeout;
    # cancelled; error, with the exception's type) go to ``svc_async.job.wait.duration``
    # of the client's instruments (``Client(metrics=...)``), read as ``jobs.metrics``: a
    # jobs client without that attribute records nothing.
    metrics: Metrics | None = getattr(jobs, "metrics", None)
    start = jobs.clock.now()
    outcome, detail = "error", None
    last: VerificationJob | None = None
    try:
        async with contextlib.aclosing(changes(jobs, job_id, chosen, limit, first)) as snapshots:
            async for job in snapshots:
                last = job
                await notify(on_status, job)
        assert last is not None  # changes only ends after yielding the finished job
        outcome, detail = "finished", str(last.status)
        return last
    except JobWaitTimeout:
        outcome = "timeout"
        raise
    except asyncio.CancelledError:
        outcome = "cancelled"
        raise
    except BaseException as exc:
        detail = type(exc).__name__
        raise
    finally:
        if metrics is not None:
            metrics.waited(max(jobs.clock.now() - start, 0.0), outcome, detail)


# ---------------------------------------------------------------- many jobs at once


def _common_tags(job: VerificationJob) -> tuple[str, ...]:
    tags = job.user_tags
    return tuple(dict.fromkeys(tags))[: v.MAX_SEARCH_TAGS]


class _Many(_Wait):
    """The state of one ``wait_many``: what is pending, what a search covers, what to read."""

    def __init__(
        self,
        jobs: JobsClient,
        ids: Sequence[int],
        tag: str | None,
        policy: PollPolicy,
        timeout: float | None,
        woken: bool,
    ) -> None:
        super().__init__(jobs, policy, timeout, woken)
        self.pending: dict[int, VerificationJob | None] = dict.fromkeys(ids)
        self.tags: tuple[str, ...] = (tag,) if tag is not None else ()
        self.covered: set[int] = set(ids) if tag is not None else set()
        self.discover = tag is None
        self.rotation: list[int] = []
        self.safety: list[int] = []
        self.urgent: set[int] = set()
        current = {str(s) for s in CURRENT_JOB_STATUSES}
        # Only statuses of the service's current list may be searched for (it refuses
        # the legacy Completed/Confirmed with 400).
        self.statuses: list[str] = [
            str(s) for s in CURRENT_JOB_STATUSES if str(s) in policy.finished_statuses
        ]
        self._unsearchable = policy.finished_statuses - current
        self.searched = False
        """Whether a search was made: the first is unfiltered, to see finished jobs in
        any vocabulary (and learn whether the service still ends jobs at legacy names)."""

    def note(self, job: VerificationJob) -> VerificationJob | None:
        """Record a snapshot; returns it when it finishes a pending job."""
        if self.statuses and str(job.status) in self._unsearchable:
            # A service still ending jobs at a legacy status: a search filtered by the
            # current finished statuses would never see them, so search unfiltered.
            logger.info(
                "job %d finished at %s: searching without a status filter", job.id, job.status
            )
            self.statuses = []
        if job.id not in self.pending:
            return None
        self.pending[job.id] = job
        if self.tags and set(self.tags) <= set(job.tags):
            self.covered.add(job.id)
        else:
            self.covered.discard(job.id)  # the search cannot see it: read it with get
        if self.policy.is_finished(job):
            del self.pending[job.id]
            self.covered.discard(job.id)
            self.urgent.discard(job.id)
            return job
        return None

    def _note_all(self, jobs: Iterable[VerificationJob], finished: list[VerificationJob]) -> None:
        """``note`` each of ``jobs``, adding the ones that finished to ``finished``."""
        for job in jobs:
            if (done := self.note(job)) is not None:
                finished.append(done)

    async def tick(self, tick: int) -> list[VerificationJob]:
        """One round of reads: a search (or the first job, to find the tags) and gets;
        the jobs found finished."""
        self.error = None
        finished: list[VerificationJob] = []
        if self.discover:
            await self._discover(finished)
        elif self.tags and self.covered:
            statuses = self.statuses if self.searched else []
            self.searched = True
            self._note_all(await self.search(statuses) or [], finished)
        to_get = self.next_gets(tick)
        if to_get:
            results = await asyncio.gather(*(self.get(i) for i in to_get))
            self._note_all([job for job in results if job is not None], finished)
        return finished

    async def _discover(self, finished: list[VerificationJob]) -> None:
        """Read the first job for the tags the jobs share, then search by them once."""
        self.discover = False
        job = await self.get(next(iter(self.pending)))
        if job is None:
            return
        self.tags = _common_tags(job)
        self._note_all([job], finished)
        if self.tags:
            self.searched = True
            self._note_all(await self.search(()) or [], finished)

    async def search(self, statuses: Sequence[str]) -> list[VerificationJob] | None:
        """Every job matching the tags (and statuses), up to ``_MAX_PAGES``; None on failure."""
        found: list[VerificationJob] = []
        offset = 0
        for _ in range(_MAX_PAGES):
            try:
                page = await self._page(statuses, offset)
            except BadRequestError:
                if not statuses:
                    raise
                # A service of the older vocabulary refuses today's statuses: stop filtering.
                logger.info("the service refused the status filter; searching without it")
                self.statuses = []
                return await self.search(())
            if page is None:
                return None
            found.extend(page.jobs)
            offset += len(page.jobs)
            if not page.jobs or offset >= page.count:
                return found
            if not (set(self.pending) - {j.id for j in found}):
                return found
        logger.info("tag search matched over %d jobs; reading only the first", offset)
        return found

    async def _page(self, statuses: Sequence[str], offset: int) -> JobSearchResults | None:
        """One page of the search, by the deadline; None when it failed (transiently)."""
        return await self.read(
            lambda: self.jobs.search(
                tags=list(self.tags), statuses=list(statuses), limit=100, offset=offset
            ),
            "job search",
        )

    def next_gets(self, tick: int) -> list[int]:
        """Jobs to read with ``get`` this tick: woken ones, uncovered ones, a safety check."""
        chosen = [i for i in self.urgent if i in self.pending]
        self.urgent.clear()
        chosen += self._rotate()
        chosen += self._safety_check(tick)
        return list(dict.fromkeys(chosen))

    def _rotate(self) -> list[int]:
        """The next batch of the jobs no search covers, round-robin."""
        uncovered = [i for i in self.pending if i not in self.covered]
        if not uncovered:
            return []
        size = max(_MIN_BATCH, math.ceil(len(uncovered) / 4))
        self.rotation = [i for i in self.rotation if i in self.pending and i not in self.covered]
        self.rotation += [i for i in uncovered if i not in self.rotation]
        take, self.rotation = self.rotation[:size], self.rotation[size:]
        self.rotation += take
        return take

    def _safety_check(self, tick: int) -> list[int]:
        """Every ``_SAFETY_EVERY`` ticks, one searched job read with ``get`` as well."""
        covered = [i for i in self.pending if i in self.covered]
        if not covered or tick % _SAFETY_EVERY != 0:
            return []
        self.safety = [i for i in self.safety if i in self.pending] or covered
        return [self.safety.pop(0)]

    def woken(self, subs: list[JobSubscription]) -> None:
        """Read at once the jobs whose webhook deliveries came."""
        self.urgent |= {s.job_id for s in subs if s.update is not None}
        for sub in subs:
            sub.update = None

    def waiting(self) -> tuple[str, VerificationJob | None]:
        waiting = list(self.pending)
        shown = ", ".join(map(str, waiting[:10])) + (", ..." if len(waiting) > 10 else "")
        return f"{len(waiting)} job(s) [{shown}]", self.pending[waiting[0]]


async def wait_many(
    jobs: JobsClient, ids: list[int], tag: str | None, policy: PollPolicy, timeout: float | None
) -> AsyncGenerator[VerificationJob, None]:
    """Yield each job as it finishes, using far fewer calls than one wait per job.

    When the jobs share ``tag`` (given, or else found from the first job's tags), each
    tick is one search for finished jobs with that tag; jobs the search does not cover
    are read with ``get`` in small round-robin batches. The first search is unfiltered;
    later ones carry only the finished statuses of the service's current list, and none
    once the service shows it ends jobs at a legacy status or refuses the filter.
    ``timeout`` bounds the whole wait: ``JobWaitTimeout`` (with one still-pending job's
    last snapshot, or None) when it passes.
    """
    receiver = _receiver(jobs)
    state = _Many(jobs, ids, tag, policy, timeout, receiver is not None)
    wake = asyncio.Event()
    subs: list[JobSubscription] = []
    if receiver is not None:
        subs = [receiver.subscribe(job_id, wake) for job_id in ids]
    tick = 0
    try:
        while state.pending:
            tick += 1
            for done in await state.tick(tick):
                yield done
            if not state.pending:
                return
            if await state.rest(tick, wake if subs else None):
                state.woken(subs)
    finally:
        if receiver is not None:
            for sub in subs:
                receiver.unsubscribe(sub)
