"""The job poller against a scripted MockTransport: policy, wait, watch, wait_many, hybrid."""

from __future__ import annotations

import asyncio
import datetime as dt
import random
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import attrs
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from svc_async import (
    Client,
    JobRequest,
    JobStatus,
    JobWaitTimeout,
    MockTransport,
    NotFoundError,
    PollPolicy,
    Request,
    Response,
    RetryPolicy,
    VerificationJob,
    json_response,
)
from svc_async.models import CURRENT_JOB_STATUSES, FINISHED_JOB_STATUSES
from svc_async.webhooks import JobStatusUpdate, WebhookReceiver

FAST = PollPolicy(wait_initial=0.01, wait_exp_base=1.5, wait_max=0.04, wait_jitter=0.0, timeout=3.0)
JOB_PATH = "/api/public/v1/verification-job"


def job_json(
    job_id: int, status: str = "Created", error: str = "", tags: Any = ()
) -> dict[str, Any]:
    """A minimal job body as the service sends it."""
    return {
        "id": job_id,
        "organisationId": 1,
        "status": status,
        "errorMessage": error,
        "tags": list(tags),
        "name": f"job {job_id}",
    }


def make_job(status: str = "Created", error: str = "") -> VerificationJob:
    return VerificationJob(id=1, organisation_id=1, status=status, error_message=error)


# Every wait here is on the loop's time, made virtual: polls, timeouts and webhook wake-ups
# take no real time, and the bounds below hold however loaded the machine is.
pytestmark = pytest.mark.looptime


class Timeline:
    """Jobs whose status is a function of loop time since they were registered."""

    def __init__(self, list_key: str = "jobs", allowed: Any = CURRENT_JOB_STATUSES) -> None:
        self.loop = asyncio.get_running_loop()
        self.allowed = {str(s) for s in allowed}
        """Statuses a search may carry; others are refused with 400 like the service does."""
        self.refused = 0
        self.jobs: dict[int, tuple[float, float, str, str, list[str]]] = {}
        self.list_key = list_key
        """``results`` as today's service answers a search, ``jobs`` as before 2025-01."""
        self.search_bodies: list[dict[str, Any]] = []
        self.gets = 0
        self.searches = 0
        self.creates = 0
        self.failures: list[int] = []

    def add(
        self,
        job_id: int,
        delay: float,
        *,
        final: str = "Completed",
        error: str = "",
        tags: list[str] | None = None,
    ) -> None:
        self.jobs[job_id] = (self.loop.time(), delay, final, error, tags or [])

    def finish_at(self, job_id: int) -> float:
        start, delay, *_ = self.jobs[job_id]
        return start + delay

    def render(self, job_id: int) -> dict[str, Any]:
        start, delay, final, error, tags = self.jobs[job_id]
        elapsed = self.loop.time() - start
        if elapsed >= delay:
            return job_json(job_id, final, error, tags)
        phases = ["Created", "Downloading", "DetectingMusic", "Matching"]
        return job_json(job_id, phases[min(3, int(4 * elapsed / delay))], "", tags)

    def handler(self, request: Request) -> Response:
        path = request.url.path
        if self.failures:
            return json_response({"statusCode": 503}, status=self.failures.pop(0))
        if request.method == "GET" and path.startswith(JOB_PATH + "/"):
            self.gets += 1
            job_id = int(path.rsplit("/", 1)[1])
            if job_id not in self.jobs:
                return json_response({"statusCode": 404, "message": "nope"}, status=404)
            return json_response(self.render(job_id))
        if request.method == "POST" and path == JOB_PATH + "/search":
            self.searches += 1
            body = orjson.loads(request.content or b"{}")
            self.search_bodies.append(body)
            if any(s not in self.allowed for s in body["statuses"]):
                # The live service refuses a status its current list lacks.
                self.refused += 1
                return json_response({"statusCode": 400, "message": "bad status"}, status=400)
            rendered = [self.render(i) for i in sorted(self.jobs)]
            matches = [
                j
                for j in rendered
                if set(body["tags"]) <= set(j["tags"])
                and (not body["statuses"] or j["status"] in body["statuses"])
            ]
            page = matches[body["offset"] : body["offset"] + body["limit"]]
            return json_response({self.list_key: page, "count": len(matches)})
        if request.method == "POST" and path == JOB_PATH:
            self.creates += 1
            body = orjson.loads(request.content or b"{}")
            job_id = max(self.jobs, default=0) + 1
            self.add(job_id, 0.05, tags=body["tags"])
            return json_response(self.render(job_id))
        return json_response({"statusCode": 404}, status=404)


@asynccontextmanager
async def client_for(timeline: Timeline, **kwargs: Any) -> AsyncIterator[Client]:
    transport = MockTransport(timeline.handler)
    async with Client(
        "http://svc.test",
        token="t0ken",
        transport=transport,
        rate_limit=False,
        retry=RetryPolicy(attempts=1),
        **kwargs,
    ) as svc:
        yield svc


# ------------------------------------------------------------------ PollPolicy


def test_policy_defaults_suit_seconds_to_minutes() -> None:
    policy = PollPolicy()
    assert (policy.wait_initial, policy.wait_exp_base, policy.wait_max) == (1.0, 1.5, 15.0)
    assert policy.wait_jitter == 0.1 and policy.timeout == 600.0
    assert policy.finished_statuses == FINISHED_JOB_STATUSES
    plain = PollPolicy(wait_jitter=0)
    assert [plain.interval(n) for n in (1, 2, 3)] == [1.0, 1.5, 2.25]
    assert plain.interval(50) == 15.0
    assert plain.interval(10**6) == 15.0


@pytest.mark.parametrize(
    "kwargs",
    [
        {"wait_initial": 0},
        {"wait_initial": -1},
        {"wait_max": 0},
        {"wait_exp_base": 0.5},
        {"wait_jitter": 1.0},
        {"wait_jitter": -0.1},
        {"timeout": 0},
        {"timeout": float("inf")},
        {"webhook_factor": 0.5},
        {"finished_statuses": []},
        {"wait_initial": True},
    ],
)
def test_policy_validation(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        PollPolicy(**kwargs)


def test_policy_speaks_retry_policys_backoff_words() -> None:
    shared = {"wait_initial", "wait_max", "wait_exp_base", "wait_jitter"}
    assert shared <= {a.name for a in attrs.fields(RetryPolicy)}
    assert shared | {"timeout"} <= {a.name for a in attrs.fields(PollPolicy)}
    assert "jitter" not in {a.name for a in attrs.fields(RetryPolicy)}


@pytest.mark.parametrize("old", ["initial", "multiplier", "max_interval", "jitter"])
def test_the_old_policy_names_are_gone_and_fail_clearly(old: str) -> None:
    """Removed before 0.1.0 (CHANGELOG.md names their ``wait_*`` replacements)."""
    with pytest.raises(TypeError, match=rf"unexpected keyword argument '{old}'"):
        PollPolicy(**{old: 0.5})
    with pytest.raises(AttributeError):
        getattr(PollPolicy(), old)


def test_evolve_and_unknown_names_behave() -> None:
    policy = attrs.evolve(PollPolicy(), wait_max=2.0)
    assert policy.wait_max == 2.0 and policy.wait_initial == 1.0
    with pytest.raises(TypeError):
        PollPolicy(wait_minimum=1)


def test_policy_refuses_a_bare_string_of_statuses() -> None:
    with pytest.raises(TypeError):
        PollPolicy(finished_statuses="Completed")


@given(
    attempt=st.integers(min_value=1, max_value=200),
    initial=st.floats(min_value=0.001, max_value=10),
    jitter=st.floats(min_value=0, max_value=0.9),
    seed=st.integers(),
)
def test_interval_stays_within_jittered_bounds(
    attempt: int, initial: float, jitter: float, seed: int
) -> None:
    policy = PollPolicy(wait_initial=initial, wait_max=20.0, wait_jitter=jitter)
    base = min(20.0, initial * 1.5 ** (attempt - 1))
    value = policy.interval(attempt, random.Random(seed))
    assert base * (1 - jitter) - 1e-9 <= value <= base + 1e-9


@given(attempt=st.integers(min_value=1, max_value=50), seed=st.integers())
def test_wait_jitter_means_the_same_in_both_policies(attempt: int, seed: int) -> None:
    """One meaning: the fraction of the wait drawn at random below it, never above."""
    poll = PollPolicy(wait_initial=0.5, wait_exp_base=2.0, wait_max=8.0, wait_jitter=0.5)
    retry = RetryPolicy(wait_initial=0.5, wait_exp_base=2.0, wait_max=8.0, wait_jitter=0.5)
    assert poll.interval(attempt, random.Random(seed)) == retry.backoff(
        attempt, random.Random(seed)
    )


@pytest.mark.parametrize(
    ("status", "error", "finished"),
    [
        ("Processed", "", True),
        ("Submitted", "", True),
        ("Completed", "", True),
        ("Confirmed", "", True),
        ("Errored", "", True),
        ("Errored", "decode failed", True),
        ("Matching", "decode failed", True),
        ("Created", "", False),
        ("Downloading", "", False),
        ("DetectingMusic", "", False),
        ("Matching", "", False),
        ("Matched", "", False),
        ("SomethingNew", "", False),
    ],
)
def test_finished_rules_match_the_model_helpers(status: str, error: str, finished: bool) -> None:
    job = make_job(status, error)
    assert PollPolicy().is_finished(job) is finished
    assert job.is_finished is finished


def test_finished_statuses_are_configurable() -> None:
    policy = PollPolicy(finished_statuses={"Submitted", "Errored"})
    assert policy.is_finished(make_job("Submitted"))
    assert not policy.is_finished(make_job("Processed"))
    assert not policy.is_finished(make_job("Matched"))


def test_the_policy_and_the_model_state_the_rule_once() -> None:
    matched = make_job("Matched")
    assert matched.is_finished_under({"Matched"}) is PollPolicy(
        finished_statuses={"Matched"}
    ).is_finished(matched)
    assert matched.is_finished_under({"Matched"}) and not matched.is_finished
    assert make_job("Created", "boom").is_finished_under({"Matched"})  # an error ends it
    # The policy's rule is the model's: the rule's text lives only in models.py.
    import inspect

    import svc_async.resources.polling as polling

    assert "error_message" not in inspect.getsource(polling.PollPolicy.is_finished)


# ------------------------------------------------------------------ wait


async def test_wait_returns_the_finished_job_and_reports_changes() -> None:
    timeline = Timeline()
    timeline.add(7, 0.2)
    seen: list[str] = []
    async with client_for(timeline) as svc:
        job = await svc.jobs.wait(7, policy=FAST, on_status=lambda j: seen.append(j.status))
    assert job.status == JobStatus.COMPLETED and job.id == 7
    assert seen == ["Created", "Downloading", "DetectingMusic", "Matching", "Completed"]
    assert timeline.gets < 15


async def test_on_status_may_be_async_and_sees_distinct_statuses() -> None:
    timeline = Timeline()
    timeline.add(3, 0.1)
    seen: list[str] = []

    async def record(job: VerificationJob) -> None:
        await asyncio.sleep(0)
        seen.append(str(job.status))

    async with client_for(timeline) as svc:
        await svc.jobs.wait(3, policy=FAST, on_status=record)
    assert seen[0] == "Created" and seen[-1] == "Completed"
    assert len(seen) == len(set(seen))


async def test_errored_job_returns_on_first_poll() -> None:
    timeline = Timeline()
    timeline.add(5, 0.0, final="Errored", error="Unable to decode audio file")
    async with client_for(timeline) as svc:
        job = await svc.jobs.wait(5, policy=FAST)
    assert job.failed and job.error_message
    assert timeline.gets == 1


async def test_error_message_finishes_whatever_the_status() -> None:
    timeline = Timeline()
    timeline.add(5, 0.0, final="Matching", error="worker crashed")
    async with client_for(timeline) as svc:
        job = await svc.jobs.wait(5, policy=FAST)
    assert job.status == "Matching" and job.is_finished


async def test_unknown_status_keeps_waiting() -> None:
    timeline = Timeline()
    timeline.add(9, 0.0, final="Reticulating")
    async with client_for(timeline) as svc:
        with pytest.raises(JobWaitTimeout) as info:
            await svc.jobs.wait(9, timeout=0.15, policy=FAST)
    assert info.value.job is not None and info.value.job.status == "Reticulating"
    assert timeline.gets >= 3


async def test_custom_finished_statuses_end_the_wait() -> None:
    timeline = Timeline()
    timeline.add(9, 0.0, final="Matched")
    policy = PollPolicy(wait_initial=0.01, wait_jitter=0, finished_statuses={"Matched"}, timeout=1)
    async with client_for(timeline) as svc:
        job = await svc.jobs.wait(9, policy=policy)
    assert job.status == JobStatus.MATCHED


@pytest.mark.parametrize("final", ["Processed", "Submitted", "Errored", "Completed", "Confirmed"])
async def test_wait_finishes_at_todays_and_the_legacy_finished_statuses(final: str) -> None:
    timeline = Timeline()
    timeline.add(6, 0.1, final=final)
    seen: list[str] = []
    async with client_for(timeline) as svc:
        job = await svc.jobs.wait(6, policy=FAST, on_status=lambda j: seen.append(j.status))
    assert job.status == final and seen[-1] == final and seen[0] == "Created"


async def test_wait_options_are_keyword_only() -> None:
    timeline = Timeline()
    timeline.add(6, 0.0)
    async with client_for(timeline) as svc:
        with pytest.raises(TypeError):
            await svc.jobs.wait(6, 5.0)  # type: ignore[misc]
        with pytest.raises(TypeError):
            svc.jobs.watch(6, FAST)  # type: ignore[misc]
        with pytest.raises(TypeError):
            await svc.jobs.create_and_wait(JobRequest, 5.0)  # type: ignore[misc, arg-type]
    assert timeline.gets == 0


async def test_timeout_raises_with_the_last_job_seen_and_on_time() -> None:
    timeline = Timeline()
    timeline.add(4, 100.0)
    loop = asyncio.get_running_loop()
    async with client_for(timeline) as svc:
        start = loop.time()
        with pytest.raises(JobWaitTimeout) as info:
            await svc.jobs.wait(4, timeout=0.2, policy=FAST)
        elapsed = loop.time() - start
    assert info.value.job is not None and info.value.job.id == 4
    assert info.value.job.status == "Created"
    assert 0.19 <= elapsed < 0.4
    assert isinstance(info.value, TimeoutError)


async def test_a_deadline_a_rounding_error_away_is_reached() -> None:
    # 2.815577 + 0.1 is 2.9155770000000003: after sleeping what was left, the loop reads
    # 2.915577, and what is left then (4e-16 s) is below the loop's clock resolution, so
    # a sleep of it takes no time. Virtual time never moves on by itself: the wait polled
    # for ever (and no virtual timeout could stop it). The polls are counted instead.
    timeline = Timeline()
    timeline.add(4, 100.0)
    loop = asyncio.get_running_loop()
    await asyncio.sleep(2.815577 - loop.time())
    assert loop.time() == 2.815577
    policy = PollPolicy(wait_initial=1.0, wait_jitter=0, timeout=0.1)
    async with client_for(timeline) as svc:
        wait = asyncio.ensure_future(svc.jobs.wait(4, policy=policy))
        await asyncio.sleep(0.1)  # the deadline's time, as the loop reads it
        for _ in range(1000):  # (time stands still while anything is ready)
            if wait.done() or timeline.gets >= 50:
                break
            await asyncio.sleep(0)
        wait.cancel()
        with pytest.raises(JobWaitTimeout):
            await wait
    assert timeline.gets == 1


async def test_timeout_defaults_to_the_policy_timeout() -> None:
    timeline = Timeline()
    timeline.add(4, 100.0)
    policy = PollPolicy(wait_initial=0.01, wait_jitter=0, timeout=0.1)
    async with client_for(timeline) as svc:
        with pytest.raises(JobWaitTimeout):
            await svc.jobs.wait(4, policy=policy)


async def test_transient_errors_do_not_end_the_wait() -> None:
    timeline = Timeline()
    timeline.add(4, 0.05)
    timeline.failures = [503, 502, 503]
    async with client_for(timeline) as svc:
        job = await svc.jobs.wait(4, policy=FAST)
    assert job.status == "Completed"


async def test_timeout_after_only_errors_chains_the_last_error() -> None:
    timeline = Timeline()
    timeline.add(4, 0.0)
    timeline.failures = [503] * 1000
    async with client_for(timeline) as svc:
        with pytest.raises(JobWaitTimeout) as info:
            await svc.jobs.wait(4, timeout=0.1, policy=FAST)
    assert info.value.job is None
    assert info.value.__cause__ is not None


async def test_not_found_propagates() -> None:
    timeline = Timeline()
    async with client_for(timeline) as svc:
        with pytest.raises(NotFoundError):
            await svc.jobs.wait(404, policy=FAST)


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ({"job_id": 0}, ValueError),
        ({"job_id": True}, TypeError),
        ({"job_id": "7"}, TypeError),
        ({"job_id": 7, "timeout": 0}, ValueError),
        ({"job_id": 7, "timeout": -1}, ValueError),
        ({"job_id": 7, "policy": {"initial": 1}}, TypeError),
        ({"job_id": 7, "on_status": "print"}, TypeError),
    ],
)
async def test_wait_arguments_are_checked_before_sending(
    args: dict[str, Any], error: type[Exception]
) -> None:
    timeline = Timeline()
    async with client_for(timeline) as svc:
        with pytest.raises(error):
            await svc.jobs.wait(**args)
    assert timeline.gets == 0


async def test_create_and_wait_starts_from_the_created_snapshot() -> None:
    timeline = Timeline()
    request = JobRequest(
        name="Routine",
        email="coach@team.example",
        organisation_id=1,
        audio_file_url="https://files.example/a.mp3",
        start_date=dt.date(2025, 1, 1),
        end_date=dt.date(2025, 2, 1),
        tags=["team-a"],
    )
    seen: list[str] = []
    async with client_for(timeline) as svc:
        job = await svc.jobs.create_and_wait(
            request, policy=FAST, on_status=lambda j: seen.append(j.status)
        )
    assert job.status == "Completed" and timeline.creates == 1
    assert seen[0] == "Created" and seen[-1] == "Completed"

    async with client_for(timeline) as svc:  # a wait it cannot make: no job is made
        with pytest.raises(TypeError, match="on_status"):
            await svc.jobs.create_and_wait(request, on_status="print")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="policy"):
            await svc.jobs.create_and_wait(request, policy=5)  # type: ignore[arg-type]
    assert timeline.creates == 1


# ------------------------------------------------------------------ watch


async def test_watch_yields_each_change_and_ends_after_the_finished_one() -> None:
    timeline = Timeline()
    timeline.add(2, 0.12)
    async with client_for(timeline) as svc:
        statuses = [str(job.status) async for job in svc.jobs.watch(2, policy=FAST)]
    assert statuses[0] == "Created" and statuses[-1] == "Completed"
    assert len(statuses) == len(set(statuses))


async def test_watch_can_be_left_early_and_unsubscribes() -> None:
    timeline = Timeline()
    timeline.add(2, 10.0)
    receiver = WebhookReceiver("s3cret")
    async with client_for(timeline, webhooks=receiver) as svc:
        stream = svc.jobs.watch(2, policy=FAST)
        async for job in stream:
            assert job.status == "Created"
            assert receiver.subscribed_jobs
            break
        await stream.aclose()
    assert not receiver.subscribed_jobs


# ------------------------------------------------------------------ hybrid (webhooks)


async def test_webhook_wakes_wait_long_before_the_next_poll() -> None:
    timeline = Timeline()
    timeline.add(11, 0.1)
    receiver = WebhookReceiver("s3cret")
    slow = PollPolicy(wait_initial=5.0, wait_jitter=0, timeout=30)
    loop = asyncio.get_running_loop()
    async with client_for(timeline, webhooks=receiver) as svc:
        waiter = asyncio.create_task(svc.jobs.wait(11, policy=slow))
        await asyncio.sleep(0.15)
        start = loop.time()
        assert receiver.dispatch(JobStatusUpdate(job_id=11, status=JobStatus.COMPLETED))
        job = await asyncio.wait_for(waiter, 2)
        woke_after = loop.time() - start
    assert job.status == "Completed"
    assert woke_after < 0.5
    assert timeline.gets == 2  # the first read, then one confirmation
    assert not receiver.subscribed_jobs


async def test_test_deliveries_and_other_jobs_never_wake_a_waiter() -> None:
    timeline = Timeline()
    timeline.add(11, 0.05)
    receiver = WebhookReceiver("s3cret")
    slow = PollPolicy(wait_initial=0.3, wait_jitter=0, timeout=5)
    async with client_for(timeline, webhooks=receiver) as svc:
        waiter = asyncio.create_task(svc.jobs.wait(11, policy=slow))
        await asyncio.sleep(0.1)
        assert not receiver.dispatch(JobStatusUpdate(job_id=11, status="Completed", is_test=True))
        assert receiver.dispatch(JobStatusUpdate(job_id=12, status="Completed"))
        await asyncio.sleep(0.1)
        assert not waiter.done()
        assert timeline.gets == 1
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
    assert not receiver.subscribed_jobs


async def test_hybrid_wait_still_polls_when_no_webhook_comes() -> None:
    timeline = Timeline()
    timeline.add(11, 0.05)
    receiver = WebhookReceiver("s3cret")
    policy = PollPolicy(
        wait_initial=0.02, wait_max=0.05, wait_jitter=0, webhook_factor=2, timeout=3
    )
    async with client_for(timeline, webhooks=receiver) as svc:
        job = await svc.jobs.wait(11, policy=policy)
    assert job.status == "Completed"


async def test_webhook_before_the_read_catches_up_falls_back_to_fast_polling() -> None:
    timeline = Timeline()
    timeline.add(11, 0.3)
    receiver = WebhookReceiver("s3cret")
    policy = PollPolicy(
        wait_initial=0.02, wait_max=0.05, wait_jitter=0, webhook_factor=100, timeout=3
    )
    loop = asyncio.get_running_loop()
    async with client_for(timeline, webhooks=receiver) as svc:
        waiter = asyncio.create_task(svc.jobs.wait(11, policy=policy))
        await asyncio.sleep(0.05)
        receiver.dispatch(JobStatusUpdate(job_id=11, status="Completed"))  # early
        job = await asyncio.wait_for(waiter, 2)
        late = loop.time() - timeline.finish_at(11)
    assert job.status == "Completed" and late < 0.1


# ------------------------------------------------------------------ wait_many


def add_batch(
    timeline: Timeline, count: int, tags: Callable[[int], list[str]], first: int = 1
) -> list[int]:
    ids = list(range(first, first + count))
    for n, job_id in enumerate(ids):
        timeline.add(job_id, 0.05 + 0.25 * n / count, tags=tags(job_id))
    return ids


async def test_wait_many_with_a_tag_uses_one_search_per_tick() -> None:
    timeline = Timeline()
    ids = add_batch(timeline, 50, lambda i: ["batch-1", f"svc-async-create:{i:032x}"])
    ids[10:10] = [ids[3]]  # duplicates are ignored
    async with client_for(timeline) as svc:
        done = [job async for job in svc.jobs.wait_many(ids, tag="batch-1", policy=FAST)]
    assert sorted(j.id for j in done) == sorted(set(ids))
    assert all(j.status == "Completed" for j in done)
    many_calls = timeline.gets + timeline.searches

    separate = Timeline()
    ids = add_batch(separate, 50, lambda i: ["batch-1"])
    async with client_for(separate) as svc:
        await asyncio.gather(*(svc.jobs.wait(i, policy=FAST) for i in ids))
    assert many_calls * 10 < separate.gets, (many_calls, separate.gets)


async def test_wait_many_finds_the_common_tag_itself() -> None:
    timeline = Timeline()
    ids = add_batch(timeline, 40, lambda i: ["season-2025", "batch-7", f"svc-async-create:{i:x}"])
    timeline.add(99, 0.0, tags=["season-2025"])  # same season, other batch: not waited for
    async with client_for(timeline) as svc:
        done = [job.id async for job in svc.jobs.wait_many(ids, policy=FAST)]
    assert sorted(done) == ids
    assert timeline.searches >= 2
    assert timeline.gets + timeline.searches < 40


async def test_wait_many_without_a_common_tag_reads_in_batches() -> None:
    timeline = Timeline()
    ids = add_batch(timeline, 12, lambda i: [f"own-{i}"])
    async with client_for(timeline) as svc:
        done = [job.id async for job in svc.jobs.wait_many(ids, policy=FAST)]
    assert sorted(done) == ids


async def test_wait_many_reads_jobs_the_search_misses() -> None:
    timeline = Timeline()
    ids = add_batch(timeline, 10, lambda i: ["batch-2"])
    timeline.add(50, 0.1, tags=["other"])  # lacks the tag: found by get
    async with client_for(timeline) as svc:
        done = [job.id async for job in svc.jobs.wait_many([*ids, 50], tag="batch-2", policy=FAST)]
    assert sorted(done) == [*ids, 50]


async def test_wait_many_yields_already_finished_and_errored_jobs() -> None:
    timeline = Timeline()
    timeline.add(1, 0.0, final="Errored", error="bad audio", tags=["b-3"])
    timeline.add(2, 0.0, tags=["b-3"])
    async with client_for(timeline) as svc:
        done = [job async for job in svc.jobs.wait_many([1, 2], tag="b-3", policy=FAST)]
    assert {j.id: j.failed for j in done} == {1: True, 2: False}
    assert timeline.searches == 1 and timeline.gets == 0


async def test_wait_many_timeout_names_what_is_left() -> None:
    timeline = Timeline()
    timeline.add(1, 0.0, tags=["b-4"])
    timeline.add(2, 100.0, tags=["b-4"])
    got: list[int] = []
    async with client_for(timeline) as svc:
        with pytest.raises(JobWaitTimeout, match=r"1 job\(s\) \[2\]"):
            async for job in svc.jobs.wait_many([1, 2], policy=FAST, timeout=0.2):
                got.append(job.id)
    assert got == [1]


async def test_wait_many_empty_and_bad_arguments() -> None:
    timeline = Timeline()
    async with client_for(timeline) as svc:
        assert [j async for j in svc.jobs.wait_many([])] == []
        with pytest.raises(TypeError):
            svc.jobs.wait_many("12")  # type: ignore[arg-type]
        with pytest.raises(ValueError):
            svc.jobs.wait_many([1, -2])
        with pytest.raises(TypeError, match="tag"):
            svc.jobs.wait_many([1], tag=5)  # type: ignore[arg-type]
    assert timeline.gets == timeline.searches == 0


async def test_wait_many_wakes_on_webhooks() -> None:
    timeline = Timeline()
    for job_id in (1, 2, 3):
        timeline.add(job_id, 0.05, tags=[f"solo-{job_id}"])
    receiver = WebhookReceiver("s3cret")
    slow = PollPolicy(wait_initial=5.0, wait_jitter=0, timeout=30)
    async with client_for(timeline, webhooks=receiver) as svc:
        stream = svc.jobs.wait_many([1, 2, 3], policy=slow)

        async def collect() -> list[int]:
            return [job.id async for job in stream]

        task = asyncio.create_task(collect())
        await asyncio.sleep(0.1)
        for job_id in (1, 2, 3):
            receiver.dispatch(JobStatusUpdate(job_id=job_id, status="Completed"))
        done = await asyncio.wait_for(task, 2)
    assert sorted(done) == [1, 2, 3]
    assert not receiver.subscribed_jobs


async def test_wait_many_searches_only_statuses_of_the_current_list() -> None:
    """Today's service: jobs end at Processed; Completed is never sent (it answers 400)."""
    timeline = Timeline(list_key="results")
    ids = add_batch(timeline, 30, lambda i: ["batch-9"])
    for job_id in ids[::3]:
        start, delay, _, error, tags = timeline.jobs[job_id]
        timeline.jobs[job_id] = (start, delay, "Processed", error, tags)
    for job_id in ids[1::3]:
        start, delay, _, error, tags = timeline.jobs[job_id]
        timeline.jobs[job_id] = (start, delay, "Submitted", error, tags)
    for job_id in ids[2::3]:
        start, delay, _, _, tags = timeline.jobs[job_id]
        timeline.jobs[job_id] = (start, delay, "Errored", "bad audio", tags)
    async with client_for(timeline) as svc:
        done = [job async for job in svc.jobs.wait_many(ids, tag="batch-9", policy=FAST)]
    assert sorted(j.id for j in done) == ids
    assert timeline.search_bodies[0]["statuses"] == []  # the first search sees every job
    filtered = [b["statuses"] for b in timeline.search_bodies[1:]]
    assert filtered and all(s == ["Processed", "Submitted", "Errored"] for s in filtered)
    assert timeline.gets + timeline.searches < 30


async def test_wait_many_on_a_legacy_service_stops_filtering_by_status() -> None:
    """Jobs that end at Completed cannot be searched for: once one is seen, search unfiltered."""
    timeline = Timeline()
    ids = add_batch(timeline, 30, lambda i: ["batch-10"])
    async with client_for(timeline) as svc:
        done = [job async for job in svc.jobs.wait_many(ids, tag="batch-10", policy=FAST)]
    assert sorted(j.id for j in done) == ids
    assert all(j.status == "Completed" for j in done)
    sent = {s for b in timeline.search_bodies for s in b["statuses"]}
    assert sent <= set(CURRENT_JOB_STATUSES) and "Completed" not in sent
    assert timeline.search_bodies[-1]["statuses"] == []
    assert timeline.gets + timeline.searches < 30


async def test_wait_many_drops_the_status_filter_when_an_older_service_refuses_it() -> None:
    """A service of the pre-2025 vocabulary refuses Processed/Submitted with 400."""
    legacy = ["Created", "Downloading", "DetectingMusic", "Matching", "Completed", "Errored"]
    timeline = Timeline(allowed=legacy)
    ids = add_batch(timeline, 20, lambda i: ["batch-11"])
    async with client_for(timeline) as svc:
        done = [job async for job in svc.jobs.wait_many(ids, tag="batch-11", policy=FAST)]
    assert sorted(j.id for j in done) == ids
    assert timeline.refused <= 1
    assert timeline.search_bodies[-1]["statuses"] == []


@pytest.mark.parametrize("base", [3.0, 10, 1e10])
def test_a_long_wait_with_a_steep_backoff_stays_at_wait_max(base: float) -> None:
    """Hundreds of polls into a long wait, ``wait_exp_base ** n`` is beyond any float: the
    pause is ``wait_max``, not an ``OverflowError`` out of ``jobs.wait``."""
    policy = PollPolicy(wait_initial=1.0, wait_max=30.0, wait_exp_base=base, wait_jitter=0.0)
    assert [policy.interval(n) for n in (1, 700, 5000)] == [1.0, 30.0, 30.0]
