"""Webhook parsing and the aiohttp receiver: secret, verifier hook, dedupe, tests, background."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import orjson
import pytest
from aiohttp import web
from hypothesis import given
from hypothesis import strategies as st

from svc_async import JobStatus, SvcError, WebhookVerificationError
from svc_async.webhooks import (
    DEFAULT_PATH,
    MAX_BODY,
    JobStatusUpdate,
    WebhookPayloadError,
    WebhookReceiver,
    parse_status_update,
)

from .conftest import serve_app

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
    ],
)
def test_bad_payloads_raise_a_precise_error(body: Any, message: str) -> None:
    with pytest.raises(WebhookPayloadError, match=message) as info:
        parse_status_update(body)
    assert isinstance(info.value, SvcError)


def test_wrong_body_type() -> None:
    with pytest.raises(WebhookPayloadError):
        parse_status_update(12)  # type: ignore[arg-type]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)


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
    body = payload if isinstance(payload, bytes) else orjson.dumps(payload)
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
    waiter = receiver._subscribe(7)
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
    assert "no secret" in caplog.text
    assert open_receiver.check_secret(None)
    assert SECRET not in repr(WebhookReceiver(SECRET))


async def test_test_deliveries_are_acknowledged_and_ignored() -> None:
    receiver = WebhookReceiver(SECRET)
    seen: list[JobStatusUpdate] = []
    receiver.on_status_update(seen.append)
    waiter = receiver._subscribe(5)
    async with serving(receiver) as url:
        for job_id in (0, 5):
            payload = {"id": job_id, "status": "Completed", "isTest": True}
            assert await post(url, payload, params={"key": SECRET}) == 204
        await receiver.drain()
    assert seen == [] and not waiter.event.is_set()
    assert receiver.stats.tests == 2 and receiver.stats.dispatched == 0


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
    assert len(receiver._seen) == 2
    unbounded = WebhookReceiver(SECRET, dedupe_size=0)
    assert unbounded.dispatch(JobStatusUpdate(job_id=1, status="Completed"))
    assert unbounded.dispatch(JobStatusUpdate(job_id=1, status="Completed"))


async def test_bad_payload_is_a_400_and_not_dispatched() -> None:
    receiver = WebhookReceiver(SECRET)
    async with serving(receiver) as url:
        assert await post(url, b"{nope", params={"key": SECRET}) == 400
        assert await post(url, {"status": "Completed"}, params={"key": SECRET}) == 400
        assert await post(url, b"x" * (MAX_BODY + 1), params={"key": SECRET}) == 413
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
    receiver = WebhookReceiver(SECRET)
    seen: list[int] = []

    @receiver.on_status_update
    def broken(update: JobStatusUpdate) -> None:
        raise RuntimeError("callback bug")

    receiver.on_status_update(lambda u: seen.append(u.job_id))
    with caplog.at_level(logging.ERROR, logger="svc_async"):
        receiver.dispatch(JobStatusUpdate(job_id=9, status="Completed"))
        await receiver.drain()
    assert seen == [9] and receiver.stats.callback_errors == 1
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
