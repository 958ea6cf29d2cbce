"""Webhook parsing and the aiohttp receiver: secret, verifier hook, dedupe, tests, background."""

from __future__ import annotations

import asyncio
import datetime as dt
import io
import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from email.utils import format_datetime
from typing import Any

import aiohttp
import orjson
import pytest
from aiohttp import web
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from svc_async import (
    Client,
    Entry,
    EventCursor,
    JobStatus,
    MockTransport,
    Request,
    Response,
    RetryPolicy,
    SvcError,
    SyncState,
    WebhookVerificationError,
    json_response,
)
from svc_async.converter import structure
from svc_async.models import OutputFile, OutputFileStatus
from svc_async.webhooks import (
    DEFAULT_PATH,
    MAX_BODY,
    EntryUpdate,
    JobStatusUpdate,
    OutputFileUpdate,
    RedactedAccessLogger,
    WebhookPayloadError,
    WebhookReceiver,
    feed_sync_state,
    parse_delivery,
    parse_entry_update,
    parse_output_file,
    parse_status_update,
)

from ..conftest import load, serve_app

SECRET = "hook-s3cret-value"

# ------------------------------------------------------------------ parsing


def test_parse_the_documented_payload() -> None:
    update = parse_status_update(b'{"id": 42, "status": "Completed"}')
    assert update == JobStatusUpdate(job_id=42, status=JobStatus.COMPLETED, is_test=False)
    assert isinstance(update.status, JobStatus)


def test_parse_accepts_str_and_mapping_and_ignores_extra_fields() -> None:
    assert parse_status_update('{"id": 1, "status": "Errored", "x": 1}').status == "Errored"
    assert parse_status_update({"id": 2, "status": "Completed"}, {"X-Any": "1"}).job_id == 2
    assert parse_status_update({"id": "3", "status": "Completed"}).job_id == 3


def test_unknown_status_is_kept_as_a_string() -> None:
    update = parse_status_update({"id": 1, "status": "Quarantined"})
    assert update.status == "Quarantined" and not isinstance(update.status, JobStatus)


def test_test_deliveries_are_recognised() -> None:
    update = parse_status_update({"id": 0, "status": "Completed", "isTest": True})
    assert update.is_test and update.job_id == 0
    assert parse_status_update({"id": 5, "status": "Completed", "isTest": "true"}).is_test
    assert not parse_status_update({"id": 5, "status": "Completed", "isTest": False}).is_test


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"not json", "not valid JSON"),
        (b"[1, 2]", "JSON object"),
        (b'"text"', "JSON object"),
        ({"status": "Completed"}, "'id' is missing"),
        ({"id": True, "status": "Completed"}, "boolean"),
        ({"id": 1.5, "status": "Completed"}, "integer"),
        ({"id": "abc", "status": "Completed"}, "integer"),
        ({"id": -1, "status": "Completed"}, "positive"),
        ({"id": 0, "status": "Completed"}, "positive"),
        ({"id": 1}, "'status' is missing"),
        ({"id": 1, "status": ""}, "'status'"),
        ({"id": 1, "status": 3}, "'status'"),
        ({"id": 1, "status": "Completed", "isTest": "maybe"}, "isTest"),
        (b'{"id": "' + b"7" * 5000 + b'", "status": "Completed"}', "'id' is too long"),
        ({"id": "7" * 5000, "status": "Completed"}, "'id' is too long"),
    ],
)
def test_bad_payloads_raise_a_precise_error(body: Any, message: str) -> None:
    with pytest.raises(WebhookPayloadError, match=message) as info:
        parse_status_update(body)
    assert isinstance(info.value, SvcError)


BIG = 2**64 + 1  # orjson would return 1.8446744073709552e19: another id


@pytest.mark.parametrize(
    ("body", "field", "expected"),
    [
        (b'{"id": 18446744073709551617, "status": "Processed"}', "job_id", BIG),
        (
            b'{"id": 123456789012345678901234567890, "status": "X"}',
            "job_id",
            123456789012345678901234567890,
        ),
        (b'{"id": "18446744073709551617", "status": "Processed"}', "job_id", BIG),
        (b'{"id": 42.0, "status": "Processed"}', "job_id", 42),
        (b'{"id": 5, "status": "Processed", "n": "12345678901234567890123"}', "job_id", 5),
    ],
)
def test_ids_beyond_64_bits_are_read_exactly(body: bytes, field: str, expected: int) -> None:
    assert getattr(parse_delivery(body), field) == expected


def test_big_ids_of_entries_and_output_files_are_exact() -> None:
    entry = orjson.dumps({**ENTRY, "id": 0}).replace(b'"id":0', b'"id":18446744073709551617')
    update = parse_entry_update(b'{"entry": ' + entry + b', "seasonId": 36893488147419103233}')
    assert update.entry.id == BIG and update.season_id == 2**65 + 1
    output = orjson.dumps({**OUTPUT, "verificationJobId": 1}).replace(
        b'"verificationJobId":1', b'"verificationJobId":18446744073709551617'
    )
    assert parse_output_file(output).job_id == BIG


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b'{"id": 1e20, "status": "Processed"}', "float too large to be an exact id"),
        (b'{"id": 18446744073709551617.0, "status": "X"}', "float too large"),
        (b'{"id": -9223372036854775809, "status": "Processed"}', "positive"),
        (b'{"id": 1' + b"0" * 400 + b', "status": "Processed"}', "not valid JSON"),
        (
            b'{"id": 1, "status": "X", "d": '
            + b"[" * 1000
            + b"1234567890123456789"
            + b"]" * 1000
            + b"}",
            "nested too deeply",
        ),
    ],
)
def test_ids_that_cannot_be_exact_are_refused(body: bytes, message: str) -> None:
    with pytest.raises(WebhookPayloadError, match=message):
        parse_delivery(body)


async def test_a_big_id_reaches_the_callback_exactly_over_loopback() -> None:
    receiver = WebhookReceiver(SECRET)
    seen: list[int] = []
    receiver.on_status_update(lambda u: seen.append(u.job_id))
    async with serving(receiver) as url:
        body = b'{"id": 18446744073709551617, "status": "Processed"}'
        assert await post(url, body, params={"key": SECRET}) == 204
        assert (
            await post(url, b'{"id": 1e20, "status": "Processed"}', params={"key": SECRET}) == 400
        )
        await receiver.drain()
    assert seen == [BIG]


def test_wrong_body_type() -> None:
    with pytest.raises(WebhookPayloadError):
        parse_status_update(12)  # type: ignore[arg-type]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)


# Generation is cheap, but a garbage collection left by earlier tests can stall the first
# draw on a loaded machine: the speed checks are not what these tests are about.
UNHURRIED = settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)


@UNHURRIED
@given(
    payload=st.dictionaries(
        st.sampled_from(["id", "status", "isTest", "other"]), json_values, max_size=4
    )
)
def test_any_json_parses_or_raises_the_payload_error(payload: dict[str, Any]) -> None:
    body = json.dumps(payload)
    try:
        update = parse_status_update(body)
    except WebhookPayloadError:
        return
    assert isinstance(update.job_id, int) and update.job_id >= 0
    assert isinstance(update.status, str) and update.status


# ------------------------------------------------------------------ the receiver


@asynccontextmanager
async def serving(receiver: WebhookReceiver) -> AsyncIterator[str]:
    """The receiver's app on a free 127.0.0.1 port; yields the webhook URL without query."""
    async with serve_app(receiver.app()) as base:
        yield base + DEFAULT_PATH


async def post(url: str, payload: Any, headers: dict[str, str] | None = None, **kwargs: Any) -> int:
    body = payload if isinstance(payload, bytes | io.BytesIO) else orjson.dumps(payload)
    headers = {"Content-Type": "application/json", **(headers or {})}
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, data=body, headers=headers, **kwargs) as r,
    ):
        await r.read()
        return r.status


async def test_delivery_with_the_secret_reaches_sync_and_async_callbacks() -> None:
    receiver = WebhookReceiver(SECRET)
    sync_seen: list[JobStatusUpdate] = []
    async_seen: list[JobStatusUpdate] = []
    receiver.on_status_update(sync_seen.append)

    @receiver.on_status_update
    async def record(update: JobStatusUpdate) -> None:
        await asyncio.sleep(0)
        async_seen.append(update)

    async with serving(receiver) as url:
        assert await post(url, {"id": 7, "status": "Completed"}, params={"key": SECRET}) == 204
        await receiver.drain()
    assert sync_seen == async_seen == [JobStatusUpdate(job_id=7, status="Completed")]
    assert receiver.stats.dispatched == 1


@pytest.mark.parametrize(
    "params",
    [
        None,
        {"key": "guess-value-123"},
        {"key": ""},
        {"other": SECRET},
        [("key", SECRET), ("key", SECRET)],
    ],
)
async def test_wrong_or_missing_secret_is_refused_and_not_dispatched(
    params: Any, caplog: pytest.LogCaptureFixture
) -> None:
    receiver = WebhookReceiver(SECRET)
    seen: list[JobStatusUpdate] = []
    receiver.on_status_update(seen.append)
    waiter = receiver.subscribe(7)
    caplog.set_level(logging.DEBUG, logger="svc_async")
    async with serving(receiver) as url:
        assert await post(url, {"id": 7, "status": "Completed"}, params=params) == 401
        await receiver.drain()
    assert seen == [] and not waiter.event.is_set()
    assert receiver.stats.rejected == 1
    assert SECRET not in caplog.text and "guess-value" not in caplog.text


async def test_secret_rotation_accepts_any_listed_secret() -> None:
    receiver = WebhookReceiver(["old-secret", "new-secret"], secret_param="token")
    async with serving(receiver) as url:
        assert await post(url, {"id": 1, "status": "Completed"}, params={"token": "old"}) == 401
        assert (
            await post(url, {"id": 1, "status": "Completed"}, params={"token": "new-secret"}) == 204
        )
        assert (
            await post(url, {"id": 2, "status": "Completed"}, params={"token": "old-secret"}) == 204
        )
    assert receiver.stats.dispatched == 2


def test_receiver_argument_checks(caplog: pytest.LogCaptureFixture) -> None:
    with pytest.raises(ValueError):
        WebhookReceiver("")
    with pytest.raises(ValueError):
        WebhookReceiver([])
    with pytest.raises(ValueError):
        WebhookReceiver(SECRET, secret_param="")
    with pytest.raises(ValueError):
        WebhookReceiver(SECRET, dedupe_size=-1)
    with pytest.raises(TypeError):
        WebhookReceiver(SECRET, verifier="no")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        WebhookReceiver(SECRET).on_status_update(42)  # type: ignore[arg-type]
    with caplog.at_level(logging.WARNING, logger="svc_async"):
        open_receiver = WebhookReceiver()
        assert "no secret" not in caplog.text  # it may only wait (a fleet client's)
        open_receiver.routes()  # served: anyone who reaches it may post
        open_receiver.routes()
    assert caplog.text.count("no secret") == 1
    assert open_receiver.check_secret(None)
    assert SECRET not in repr(WebhookReceiver(SECRET))


async def test_test_deliveries_are_acknowledged_and_ignored() -> None:
    receiver = WebhookReceiver(SECRET)
    seen: list[JobStatusUpdate] = []
    receiver.on_status_update(seen.append)
    waiter = receiver.subscribe(5)
    async with serving(receiver) as url:
        for job_id in (0, 5):
            payload = {"id": job_id, "status": "Completed", "isTest": True}
            assert await post(url, payload, params={"key": SECRET}) == 204
        await receiver.drain()
    assert seen == [] and not waiter.event.is_set()
    assert receiver.stats.tests == 2 and receiver.stats.dispatched == 0


async def test_subscriptions_wake_on_their_job_only_and_end_on_unsubscribe() -> None:
    receiver = WebhookReceiver(SECRET)
    shared = asyncio.Event()
    first, second = receiver.subscribe(8, shared), receiver.subscribe(9, shared)
    other = receiver.subscribe(10)
    assert receiver.subscribed_jobs == {8, 9, 10}
    receiver.unsubscribe(second)
    receiver.unsubscribe(second)  # twice is harmless
    assert receiver.subscribed_jobs == {8, 10}
    async with serving(receiver) as url:
        for job_id in (8, 9):
            payload = {"id": job_id, "status": "Processed"}
            assert await post(url, payload, params={"key": SECRET}) == 204
        await receiver.drain()
    assert shared.is_set() and first.update is not None and first.update.job_id == 8
    assert second.update is None and not other.event.is_set()
    for sub in (first, other):
        receiver.unsubscribe(sub)
    assert receiver.subscribed_jobs == frozenset()


async def test_duplicates_are_acknowledged_and_dropped() -> None:
    receiver = WebhookReceiver(SECRET)
    seen: list[JobStatusUpdate] = []
    receiver.on_status_update(seen.append)
    async with serving(receiver) as url:
        for _ in range(3):
            assert await post(url, {"id": 8, "status": "Completed"}, params={"key": SECRET}) == 204
        assert await post(url, {"id": 8, "status": "Errored"}, params={"key": SECRET}) == 204
        await receiver.drain()
    assert [u.status for u in seen] == ["Completed", "Errored"]
    assert receiver.stats.duplicates == 2


async def test_dedupe_memory_is_bounded() -> None:
    receiver = WebhookReceiver(SECRET, dedupe_size=2)
    seen: list[int] = []
    receiver.on_status_update(lambda u: seen.append(u.job_id))
    for job_id in (1, 2, 3, 1, 3):
        receiver.dispatch(JobStatusUpdate(job_id=job_id, status="Completed"))
    await receiver.drain()
    assert seen == [1, 2, 3, 1]
    assert receiver.stats.duplicates == 1  # only 3 was still in the window of two
    unbounded = WebhookReceiver(SECRET, dedupe_size=0)
    assert unbounded.dispatch(JobStatusUpdate(job_id=1, status="Completed"))
    assert unbounded.dispatch(JobStatusUpdate(job_id=1, status="Completed"))


async def test_bad_payload_is_a_400_and_not_dispatched() -> None:
    receiver = WebhookReceiver(SECRET)
    async with serving(receiver) as url:
        assert await post(url, b"{nope", params={"key": SECRET}) == 400
        assert await post(url, {"status": "Completed"}, params={"key": SECRET}) == 400
        too_big = io.BytesIO(b"x" * (MAX_BODY + 1))
        assert await post(url, too_big, params={"key": SECRET}) == 413
    assert receiver.stats.rejected == 3 and receiver.stats.dispatched == 0


async def test_verifier_hook_runs_before_parsing_and_may_refuse() -> None:
    calls: list[bytes] = []

    async def verifier(request: web.Request, body: bytes) -> None:
        calls.append(body)
        if request.headers.get("X-Signature") != "good":
            raise WebhookVerificationError("bad signature")

    receiver = WebhookReceiver(SECRET, verifier=verifier)
    async with serving(receiver) as url:
        params = {"key": SECRET}
        assert await post(url, b"garbage", params=params) == 401  # refused before parsing
        status = await post(
            url, {"id": 1, "status": "Completed"}, params=params, headers={"X-Signature": "good"}
        )
        assert status == 204
    assert calls[0] == b"garbage" and receiver.stats.dispatched == 1


async def test_sync_verifier_without_secret() -> None:
    receiver = WebhookReceiver(verifier=lambda request, body: None)
    async with serving(receiver) as url:
        assert await post(url, {"id": 1, "status": "Completed"}) == 204


async def test_answer_comes_before_slow_callbacks_and_aclose_drains_them() -> None:
    receiver = WebhookReceiver(SECRET)
    release = asyncio.Event()
    finished: list[int] = []

    @receiver.on_status_update
    async def slow(update: JobStatusUpdate) -> None:
        await release.wait()
        finished.append(update.job_id)

    async with serving(receiver) as url:
        status = await asyncio.wait_for(
            post(url, {"id": 3, "status": "Completed"}, params={"key": SECRET}), 2
        )
        assert status == 204 and finished == [] and receiver.pending == 1
        asyncio.get_running_loop().call_later(0.05, release.set)
        await receiver.aclose()
        assert finished == [3] and receiver.pending == 0
        assert await post(url, {"id": 4, "status": "Completed"}, params={"key": SECRET}) == 503


async def test_aclose_cancels_callbacks_that_outlive_the_timeout() -> None:
    receiver = WebhookReceiver(SECRET)

    @receiver.on_status_update
    async def forever(update: JobStatusUpdate) -> None:
        await asyncio.Event().wait()

    receiver.dispatch(JobStatusUpdate(job_id=1, status="Completed"))
    await asyncio.sleep(0)
    await receiver.drain(timeout=0.01)
    assert receiver.pending == 1
    await receiver.aclose(timeout=0.01)
    assert receiver.pending == 0


async def test_receiver_is_an_async_context_manager() -> None:
    async with WebhookReceiver(SECRET) as receiver:
        receiver.dispatch(JobStatusUpdate(job_id=1, status="Completed"))
    assert receiver._closed


async def test_callback_errors_are_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    receiver = WebhookReceiver(SECRET, callback_retry=RetryPolicy(attempts=1))
    seen: list[int] = []

    @receiver.on_status_update
    def broken(update: JobStatusUpdate) -> None:
        raise RuntimeError("callback bug")

    receiver.on_status_update(lambda u: seen.append(u.job_id))
    with caplog.at_level(logging.ERROR, logger="svc_async"):
        receiver.dispatch(JobStatusUpdate(job_id=9, status="Completed"))
        await receiver.drain()
    assert seen == [9] and receiver.stats.callback_errors == 1
    assert receiver.stats.given_up == 1
    assert "callback bug" in caplog.text


async def test_routes_mount_in_your_own_app() -> None:
    receiver = WebhookReceiver(SECRET)
    app = web.Application()
    app.add_routes(receiver.routes("/hooks/lvs"))
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
    await runner.setup()
    try:
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        base = f"http://127.0.0.1:{runner.addresses[0][1]}"
        status = await post(
            base + "/hooks/lvs", {"id": 1, "status": "Completed"}, params={"key": SECRET}
        )
        assert status == 204
        async with aiohttp.ClientSession() as session, session.get(base + "/hooks/lvs") as r:
            assert r.status == 405
    finally:
        await runner.cleanup()
    with pytest.raises(ValueError):
        receiver.routes("no-slash")


@pytest.mark.parametrize("redacted", [False, True])
async def test_the_access_log_shows_no_secret_with_the_redacted_logger(
    redacted: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """The README's recipe: ``web.AppRunner(app, access_log_class=RedactedAccessLogger)``.

    aiohttp's own access log writes the request line, query string and all.
    """
    receiver = WebhookReceiver(SECRET)
    extra = {"access_log_class": RedactedAccessLogger} if redacted else {}
    app = receiver.app()

    async def other(request: web.Request) -> web.Response:  # a route that reads its body
        return web.Response(text=str(len(await request.read())))

    app.router.add_post("/other", other)
    runner = web.AppRunner(app, shutdown_timeout=0.1, **extra)
    await runner.setup()
    caplog.set_level(logging.INFO, logger="aiohttp.access")
    try:
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        url = f"http://127.0.0.1:{runner.addresses[0][1]}{DEFAULT_PATH}"
        assert await post(url, {"id": 1, "status": "Completed"}, params={"key": SECRET}) == 204
        assert await post(url, {"id": 1}, params={"key": "wrong-" + SECRET}) == 401
        other_url = url.replace(DEFAULT_PATH, "/other")
        assert await post(other_url, {"id": 1}, params={"token": SECRET}) == 200
    finally:
        await runner.cleanup()
    lines = [r.getMessage() for r in caplog.records if r.name == "aiohttp.access"]
    assert len(lines) == 3
    if not redacted:
        assert SECRET in lines[0]  # what the recipe used to write to your logs
        return
    assert SECRET not in caplog.text
    assert f"POST {DEFAULT_PATH}?key=[REDACTED] HTTP/1.1" in lines[0] and " 204 " in lines[0]
    assert " 401 " in lines[1] and "POST /other?token=[REDACTED] HTTP/1.1" in lines[2]


# ------------------------------------------------------------------ entry updates and output files

ENTRY = load("get-event-entries.response-0.json")[0]
OUTPUT = {
    "id": 31,
    "verificationJobId": 12,
    "status": "Completed",
    "downloadURL": "https://files.example/muted.mp3?X-Amz-Signature=abc123secret",
    "operation": "Mute",
    "fileType": "Audio",
}


def _entry(**changes: Any) -> dict[str, Any]:
    return {**ENTRY, **changes}


def test_parse_an_entry_update_of_an_event_and_of_a_season() -> None:
    update = parse_entry_update({"entry": ENTRY, "eventId": 18})
    assert update == EntryUpdate(entry=structure(ENTRY, Entry), event_id=18)
    assert update.entry.id == 283 and update.entry.field("division") == "Group"
    season = parse_entry_update(orjson.dumps({"entry": ENTRY, "seasonId": "3", "isTest": True}))
    assert season.season_id == 3 and season.event_id is None and season.is_test


def test_an_entry_update_keeps_fields_the_sdk_does_not_model() -> None:
    update = parse_entry_update({"entry": _entry(badge="gold"), "eventId": 18, "other": 1})
    assert update.entry.extra == {"badge": "gold"}


def test_parse_an_output_file_callback() -> None:
    update = parse_output_file(OUTPUT)
    assert isinstance(update.output_file, OutputFile)
    assert update.job_id == 12 and update.output_file.is_ready
    assert update.output_file.extra == {}
    assert parse_output_file({**OUTPUT, "isTest": True}).output_file.extra == {}
    assert update.output_file.status == OutputFileStatus.COMPLETED
    pending = parse_output_file({**OUTPUT, "status": "Queued", "downloadURL": None})
    assert pending.output_file.status == "Queued" and not pending.output_file.is_ready


def test_output_file_ids_given_as_digits_are_read_as_a_status_update_reads_them() -> None:
    update = parse_output_file({**OUTPUT, "id": "31", "verificationJobId": "12"})
    assert update.output_file == parse_output_file(OUTPUT).output_file
    assert update.job_id == 12 and update.output_file.id == 31


def test_parse_delivery_tells_the_three_kinds_apart_by_shape() -> None:
    assert isinstance(parse_delivery({"id": 4, "status": "Processed"}), JobStatusUpdate)
    assert isinstance(parse_delivery({"entry": ENTRY, "seasonId": 2}), EntryUpdate)
    assert isinstance(parse_delivery(OUTPUT), OutputFileUpdate)
    # An output file without its job id is still recognised as one (and refused as such).
    with pytest.raises(WebhookPayloadError, match="verificationJobId"):
        parse_delivery({k: v for k, v in OUTPUT.items() if k != "verificationJobId"})


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"entry": ENTRY}, "exactly one of 'eventId' and 'seasonId'"),
        ({"entry": ENTRY, "eventId": 1, "seasonId": 2}, "exactly one"),
        ({"entry": ENTRY, "eventId": 0}, "'eventId' must be a positive id"),
        ({"entry": ENTRY, "eventId": True}, "'eventId' must be an integer"),
        ({"entry": None, "eventId": 1}, "'entry' is missing"),
        ({"entry": [ENTRY], "eventId": 1}, "'entry' is not an object"),
        ({"entry": {"name": "x"}, "eventId": 1}, r"not a valid Entry \(at entry"),
        ({"entry": _entry(id="nope"), "eventId": 1}, r"at entry\.id"),
        ({**OUTPUT, "verificationJobId": "x"}, "'verificationJobId' must be an integer"),
        ({**OUTPUT, "id": None}, "'id' is missing"),
        ({**OUTPUT, "status": 5}, r"not a valid OutputFile"),
    ],
)
def test_malformed_entry_and_output_payloads_raise_the_payload_error(
    payload: dict[str, Any], message: str
) -> None:
    with pytest.raises(WebhookPayloadError, match=message):
        parse_delivery(payload)


@UNHURRIED
@given(
    payload=st.dictionaries(
        st.sampled_from(["entry", "eventId", "seasonId", "verificationJobId", "id", "status"]),
        json_values,
        max_size=4,
    )
)
def test_any_json_of_any_kind_parses_or_raises_the_payload_error(payload: dict[str, Any]) -> None:
    try:
        update = parse_delivery(json.dumps(payload))
    except WebhookPayloadError:
        return
    assert isinstance(update, JobStatusUpdate | EntryUpdate | OutputFileUpdate)


async def test_each_kind_reaches_only_its_own_callbacks() -> None:
    receiver = WebhookReceiver(SECRET)
    statuses: list[JobStatusUpdate] = []
    entries: list[EntryUpdate] = []
    outputs: list[OutputFileUpdate] = []
    receiver.on_status_update(statuses.append)
    receiver.on_entry_update(entries.append)

    @receiver.on_output_file
    async def got_file(update: OutputFileUpdate) -> None:
        await asyncio.sleep(0)
        outputs.append(update)

    waiter = receiver.subscribe(12)
    async with serving(receiver) as url:
        for payload in ({"entry": ENTRY, "eventId": 18}, OUTPUT, {"id": 12, "status": "Processed"}):
            assert await post(url, payload, params={"key": SECRET}) == 204
        await receiver.drain()
    assert [u.entry.id for u in entries] == [283] and entries[0].event_id == 18
    assert [u.output_file.id for u in outputs] == [31]
    assert [(u.job_id, u.status) for u in statuses] == [(12, "Processed")]
    assert waiter.update is not None and waiter.update.status == "Processed"
    assert receiver.stats.dispatched == 3


async def test_entry_and_output_deliveries_obey_the_secret_and_test_rules() -> None:
    receiver = WebhookReceiver(SECRET)
    seen: list[Any] = []
    receiver.on_entry_update(seen.append)
    receiver.on_output_file(seen.append)
    async with serving(receiver) as url:
        assert await post(url, {"entry": ENTRY, "eventId": 18}, params={"key": "wrong"}) == 401
        assert await post(url, OUTPUT) == 401
        test_entry = {"entry": ENTRY, "eventId": 18, "isTest": True}
        assert await post(url, test_entry, params={"key": SECRET}) == 204
        assert await post(url, {**OUTPUT, "isTest": True}, params={"key": SECRET}) == 204
        assert await post(url, {"entry": {}, "eventId": 18}, params={"key": SECRET}) == 400
        await receiver.drain()
    assert seen == []
    assert receiver.stats.rejected == 3 and receiver.stats.tests == 2


async def test_entry_duplicates_are_dropped_but_changes_and_reverts_are_not() -> None:
    receiver = WebhookReceiver(SECRET)
    names: dict[str, list[str]] = {"event": [], "season": []}
    receiver.on_entry_update(
        lambda u: names["event" if u.event_id else "season"].append(u.entry.name)
    )
    first = {"entry": ENTRY, "eventId": 18}
    renamed = {"entry": _entry(name="Lions"), "eventId": 18}
    same_in_season = {"entry": ENTRY, "seasonId": 3}
    for payload in (first, first, renamed, renamed, first, same_in_season):
        receiver.dispatch(parse_delivery(payload))
    await receiver.drain()
    # Re-deliveries of the entry's latest content are dropped; a revert is a real change.
    # Deliveries about one entry keep their order (the season's copy is another entry).
    assert names == {"event": ["Leopards", "Lions", "Leopards"], "season": ["Leopards"]}
    assert receiver.stats.duplicates == 2


async def test_output_file_duplicates_are_dropped_by_file_and_status() -> None:
    receiver = WebhookReceiver(SECRET)
    seen: list[str] = []
    receiver.on_output_file(lambda u: seen.append(str(u.output_file.status)))
    resigned = {**OUTPUT, "downloadURL": "https://files.example/muted.mp3?X-Amz-Signature=new"}
    for payload in ({**OUTPUT, "status": "Processing"}, OUTPUT, resigned, OUTPUT):
        receiver.dispatch(parse_delivery(payload))
    await receiver.drain()
    assert seen == ["Processing", "Completed"] and receiver.stats.duplicates == 2


async def test_callback_failures_are_logged_without_signed_links(
    caplog: pytest.LogCaptureFixture,
) -> None:
    receiver = WebhookReceiver(SECRET, callback_retry=RetryPolicy(attempts=1))

    @receiver.on_output_file
    def broken(update: OutputFileUpdate) -> None:
        raise RuntimeError("handler bug")

    with caplog.at_level(logging.DEBUG, logger="svc_async"):
        receiver.dispatch(parse_delivery(OUTPUT))
        receiver.dispatch(parse_delivery(OUTPUT))
        await receiver.drain()
    assert "output file 31 of job 12" in caplog.text and "handler bug" in caplog.text
    assert "abc123secret" not in caplog.text
    assert receiver.stats.callback_errors == 1


def test_new_hooks_refuse_non_callables() -> None:
    receiver = WebhookReceiver(SECRET)
    with pytest.raises(TypeError):
        receiver.on_entry_update(1)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        receiver.on_output_file("x")  # type: ignore[arg-type]


# ------------------------------------------------------------------ feeding entries.sync

SERVER_NOW = dt.datetime(2025, 3, 1, 12, 0, tzinfo=dt.UTC)
API_FOR_SYNC = "http://svc.test"


def _iso(when: dt.datetime) -> str:
    return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _synced_entry(entry_id: int, updated: dt.datetime) -> dict[str, Any]:
    return {
        "id": entry_id,
        "name": f"Team {entry_id}",
        "fields": [],
        "soundRecording": {
            "createdAt": _iso(updated - dt.timedelta(hours=1)),
            "updatedAt": _iso(updated),
            "downloadURL": "https://files.example/r.mp3?sig=x",
            "uploadFileName": "r.mp3",
            "licenseStatus": "Licensed",
            "status": "Complete",
            "songs": [],
        },
    }


class EntriesServer:
    """One event's entries, filtered by ``updatedAfter``, with a fixed ``Date``."""

    def __init__(self) -> None:
        self.entries: dict[int, dt.datetime] = {}
        self.now = SERVER_NOW
        self.transport = MockTransport(self.handle)

    def handle(self, request: Request) -> Response:
        body = request.json() or {}
        after = body.get("updatedAfter")
        since = None if after is None else dt.datetime.fromisoformat(after)
        out = [
            _synced_entry(i, t)
            for i, t in sorted(self.entries.items())
            if since is None or t > since
        ]
        return json_response(out, headers={"Date": format_datetime(self.now, usegmt=True)})


async def test_a_fed_entry_update_is_not_reported_again_by_the_next_sync() -> None:
    server = EntriesServer()
    server.entries = {1: SERVER_NOW - dt.timedelta(hours=2), 2: SERVER_NOW - dt.timedelta(hours=1)}
    async with Client(API_FOR_SYNC, token="t", transport=server.transport) as svc:
        first = await svc.entries.sync([5])
        assert sorted(e.id for e in first.entries) == [1, 2]
        # Entry 1 changes; its webhook arrives and is fed. Entry 3 appears unannounced.
        changed = SERVER_NOW + dt.timedelta(minutes=5)
        server.entries[1] = changed
        server.entries[3] = changed + dt.timedelta(seconds=1)
        server.now = SERVER_NOW + dt.timedelta(minutes=10)
        update = parse_entry_update({"entry": _synced_entry(1, changed), "eventId": 5})
        fed = feed_sync_state(first.state, update)
        unfed = await svc.entries.sync([5], first.state)
        second = await svc.entries.sync([5], fed)
    assert sorted(e.id for e in unfed.entries) == [1, 3]  # without feeding: both
    assert [e.id for e in second.entries] == [3]  # the pushed change is not repeated
    assert first.state.cursor(5) is not None and first.state.cursor(5).seen == frozenset()


def test_feeding_changes_only_a_tracked_event_and_only_for_new_versions() -> None:
    since = SERVER_NOW - dt.timedelta(minutes=2)
    state = SyncState(events={5: EventCursor(since=since)})
    newer = parse_entry_update({"entry": _synced_entry(1, SERVER_NOW), "eventId": 5})
    fed = feed_sync_state(state, newer)
    assert fed.cursor(5) == EventCursor(since=since, seen=frozenset({(1, SERVER_NOW)}))
    assert feed_sync_state(fed, newer) is fed  # already recorded
    older = parse_entry_update({"entry": _synced_entry(1, since), "eventId": 5})
    assert feed_sync_state(state, older) is state  # at the watermark: not fetched again
    no_recording = parse_entry_update({"entry": ENTRY, "eventId": 5})
    assert feed_sync_state(state, no_recording) is state
    untracked = parse_entry_update({"entry": _synced_entry(1, SERVER_NOW), "eventId": 6})
    assert feed_sync_state(state, untracked) is state  # its first sync fetches all anyway
    season = parse_entry_update({"entry": _synced_entry(1, SERVER_NOW), "seasonId": 5})
    assert feed_sync_state(state, season) is state
    test = parse_entry_update({"entry": _synced_entry(1, SERVER_NOW), "eventId": 5, "isTest": True})
    assert feed_sync_state(state, test) is state
    with pytest.raises(TypeError):
        feed_sync_state({}, newer)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        feed_sync_state(state, JobStatusUpdate(job_id=1, status="x"))  # type: ignore[arg-type]


# ------------------------------------------------------------------ receive(): the entry point


class GetList:
    """A query as Starlette, Werkzeug and Django give it (``getlist``)."""

    def __init__(self, pairs: list[tuple[str, str]]) -> None:
        self.pairs = pairs

    def getlist(self, name: str) -> list[str]:
        return [value for key, value in self.pairs if key == name]


STATUS = orjson.dumps({"id": 5, "status": "Processed"})


@pytest.mark.parametrize(
    ("query", "status"),
    [
        ({"key": SECRET}, 204),
        ({"key": [SECRET]}, 204),  # urllib.parse.parse_qs
        ([("key", SECRET)], 204),
        (GetList([("key", SECRET)]), 204),
        ({"key": [SECRET, SECRET]}, 401),  # a repeated secret is refused
        ([("key", SECRET), ("key", SECRET)], 401),
        (GetList([("key", "wrong"), ("key", SECRET)]), 401),
        ({}, 401),
        ({"key": "wrong"}, 401),
    ],
)
async def test_receive_reads_the_secret_from_any_query_multi_mapping(
    query: Any, status: int
) -> None:
    receiver = WebhookReceiver(SECRET)
    seen: list[int] = []
    receiver.on_status_update(lambda u: seen.append(u.job_id))
    answer = await receiver.receive(STATUS, query, {})
    await receiver.drain()
    assert answer.status == status
    assert seen == ([5] if status == 204 else [])
    assert SECRET.encode() not in answer.body


async def test_receive_answers_each_rule_with_status_headers_and_bytes() -> None:
    receiver = WebhookReceiver(SECRET)
    query = {"key": SECRET}
    bad = await receiver.receive(b"{nope", query, {})
    assert bad.status == 400 and bad.body.startswith(b"webhook body is not valid JSON")
    assert bad.headers["Content-Type"].startswith("text/plain")
    big = await receiver.receive(b"x" * (MAX_BODY + 1), query, {})
    assert (big.status, big.close) == (413, True)
    declared = await receiver.receive(_chunks([b"{}"]), query, {"Content-Length": "99999999"})
    assert declared.status == 413  # refused before a byte of it is read
    test = await receiver.receive(b'{"id": 0, "status": "Processed", "isTest": true}', query, {})
    assert test.status == 204 and receiver.stats.tests == 1
    await receiver.aclose()
    closing = await receiver.receive(STATUS, query, {})
    assert closing.status == 503 and closing.headers == {"Retry-After": "5"}
    assert receiver.stats.rejected == 3


async def _chunks(pieces: list[bytes], pause: float = 0.0) -> AsyncIterator[bytes]:
    for piece in pieces:
        await asyncio.sleep(pause)
        yield piece


@pytest.mark.looptime
async def test_receive_reads_a_streamed_body_within_its_timeouts() -> None:
    receiver = WebhookReceiver(SECRET, read_timeout=1.0, body_timeout=5.0)
    query = {"key": SECRET}
    halves = [STATUS[:10], STATUS[10:]]
    assert (await receiver.receive(_chunks(halves, 0.5), query, {})).status == 204
    slow = await receiver.receive(_chunks(halves, 2.0), query, {})
    assert (slow.status, slow.close) == (408, True)
    dribble = await receiver.receive(_chunks([b" "] * 12 + [STATUS], 0.9), query, {})
    assert dribble.status == 408  # each piece in time, the whole too slow
    assert receiver.stats.dispatched == 1
    await receiver.aclose()


async def test_dispatch_answers_in_the_background_and_accept_waits_for_the_verdict() -> None:
    receiver = WebhookReceiver(SECRET)
    update = JobStatusUpdate(job_id=3, status="Processed")
    assert receiver.dispatch(update)
    assert receiver.dispatch(update)  # taken; dropped in the background as a duplicate
    assert not receiver.dispatch(JobStatusUpdate(job_id=0, status="Processed", is_test=True))
    await receiver.drain()
    assert receiver.stats.duplicates == 1
    assert not await receiver.accept(update)  # the verdict: a duplicate


def test_a_fleet_client_keeps_a_wake_up_source_not_a_receiver() -> None:
    from svc_async.webhooks import WakeSource
    from svc_async.webhooks.wake import FleetWake

    svc = Client(
        "http://fake.invalid",
        token="t",
        transport=MockTransport(lambda r: json_response({})),
        fleet="redis://127.0.0.1:1",
        account="acme",
    )
    assert isinstance(svc.webhooks, FleetWake) and isinstance(svc.webhooks, WakeSource)
    assert not isinstance(svc.webhooks, WebhookReceiver)
    receiver = WebhookReceiver(SECRET)
    given = Client(
        "http://fake.invalid",
        token="t",
        transport=MockTransport(lambda r: json_response({})),
        webhooks=receiver,
    )
    assert given.webhooks is receiver


def test_a_status_update_with_a_null_entry_is_a_status_update() -> None:
    """``"entry": null`` names no entry: the shape is still ``{id, status}``."""
    update = parse_delivery(b'{"id": 7, "status": "Processed", "entry": null}')
    assert isinstance(update, JobStatusUpdate) and update.job_id == 7
    with pytest.raises(WebhookPayloadError):  # an entry update's entry is still required
        parse_delivery(b'{"entry": null, "eventId": 18}')
