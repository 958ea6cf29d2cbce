"""FakeService as today's service behaves over time: submission, VOD output files,
entry-update webhooks, the separate files origin, route counting and legacy mode."""

from __future__ import annotations

import asyncio
import io
from typing import Any

import aiohttp
import pytest

from svc_async import Client
from svc_async.errors import SignedURLExpired
from svc_async.testing import FakeClock, FakeService, FaultConfig

from .test_fake_service import JOB, START, TOKEN, call, job_request
from .test_fake_webhooks import receiver

AUTH = {"Authorization": f"Bearer {TOKEN}"}


def fresh(**kwargs: Any) -> FakeService:
    return FakeService(clock=FakeClock(start=START), processing_delay=4.0, **kwargs)


# ---------------------------------------------------------------- submission


async def test_submit_follows_processed_and_announces_itself() -> None:
    async with receiver() as (hook, received), fresh(webhook_url=hook) as fake:
        _, _, created = await call(fake, "POST", JOB, job_request(tags=["to-submit"]))
        job_id = created["id"]
        assert created["isClaimed"] is False and created["type"] == "Routine"
        assert (
            created["editURL"].startswith("http://fake.invalid/") and "token=" in created["editURL"]
        )
        with pytest.raises(ValueError, match="not processed"):
            fake.submit(job_id)
        fake.advance(4.0)
        await fake.wait_webhooks()
        assert fake.job(job_id)["status"] == "Processed"
        fake.submit(job_id)
        await fake.wait_webhooks()
        job = fake.job(job_id)
        assert job["status"] == "Submitted" and job["isClaimed"] is True
        assert job["recording"] is not None  # the verdict stays readable
        with pytest.raises(ValueError, match="already submitted"):
            fake.submit(job_id)
        search = f"{JOB}/search"
        _, _, found = await call(fake, "POST", search, {"statuses": ["Submitted"]})
        assert [j["id"] for j in found["results"]] == [job_id]
        _, _, processed = await call(fake, "POST", search, {"statuses": ["Processed"]})
        assert job_id not in [j["id"] for j in processed["results"]]
    bodies = [r["body"] for r in received]
    assert bodies == [{"id": job_id, "status": "Processed"}, {"id": job_id, "status": "Submitted"}]
    assert [d.kind for d in fake.webhook_deliveries] == ["status", "status"]


async def test_claim_marks_the_job_claimed_only() -> None:
    async with fresh() as fake:
        _, _, created = await call(fake, "POST", JOB, job_request())
        fake.claim(created["id"])
        assert fake.job(created["id"])["isClaimed"] is True
        assert fake.job(created["id"])["status"] == "Created"


async def test_statuses_walk_through_matched_and_errored_stops_early() -> None:
    async with FakeService(clock=FakeClock(start=START), processing_delay=5.0) as fake:
        _, _, ok = await call(fake, "POST", JOB, job_request())
        _, _, bad = await call(fake, "POST", JOB, job_request(audioFileURL="https://x/corrupt.mp3"))
        seen, errored = [], []
        for _ in range(6):
            seen.append(fake.job(ok["id"])["status"])
            errored.append(fake.job(bad["id"])["status"])
            fake.advance(1.0)
        assert seen == [
            "Created",
            "Downloading",
            "DetectingMusic",
            "Matching",
            "Matched",
            "Processed",
        ]
        assert errored[-1] == "Errored" and "Processed" not in errored
        with pytest.raises(ValueError):
            fake.submit(bad["id"])


# ---------------------------------------------------------------- VOD output files


async def test_vod_output_file_progresses_calls_back_and_downloads() -> None:
    async with receiver() as (hook, received):
        fake = fresh()
        async with fake.serve() as url, aiohttp.ClientSession() as session:
            body = job_request(
                type="VOD",
                outputFile={"operation": "Mute", "fileType": "Audio", "callbackURL": hook},
            )
            async with session.post(url + JOB, json=body, headers=AUTH) as resp:
                created = await resp.json()
            assert created["type"] == "VOD" and created["outputFiles"] == []
            assert created["outputFileType"] == "Audio"
            fake.advance(4.0)
            (pending,) = fake.job(created["id"])["outputFiles"]
            assert pending["status"] == "Pending" and pending["downloadURL"] is None
            fake.advance(1.0)
            assert fake.job(created["id"])["outputFiles"][0]["status"] == "Processing"
            assert received == []
            fake.advance(1.0)
            await fake.wait_webhooks()
            (done,) = fake.job(created["id"])["outputFiles"]
            assert done["status"] == "Completed"
            assert done["verificationJobId"] == created["id"] and done["operation"] == "Mute"
            assert len(received) == 1
            callback = received[0]["body"]
            assert {k: v for k, v in callback.items() if k != "downloadURL"} == {
                k: v for k, v in done.items() if k != "downloadURL"
            }
            link = callback["downloadURL"]
            assert link.startswith(fake.files_url + "/files/outputs/")
            async with session.get(link) as resp:
                assert resp.status == 200 and resp.headers["Content-Type"] == "audio/mpeg"
                assert (await resp.read()).startswith(b"ID3")
            async with Client(url, token=TOKEN) as svc:
                sink = io.BytesIO()
                result = await svc.download(link, sink)
                assert result.bytes_written == fake.files.file_size
                assert sink.getvalue().startswith(b"ID3")
    assert [d.kind for d in fake.webhook_deliveries] == ["output_file"]
    assert fake.webhook_deliveries[0].job_id == created["id"]


async def test_routine_job_without_output_file_has_none() -> None:
    async with fresh() as fake:
        _, _, created = await call(fake, "POST", JOB, job_request())
        fake.advance(10.0)
        job = fake.job(created["id"])
        # outputFileType is deprecated but never null: every job's output is audio.
        assert job["outputFiles"] == [] and job["outputFileType"] == "Audio"


# ---------------------------------------------------------------- entry updates


async def test_entry_changes_post_entry_update_webhooks() -> None:
    async with receiver() as (hook, received), fresh(webhook_url=hook) as fake:
        event_entry = next(e.id for e in fake.state.entries.values() if e.event_id == 2)
        payload = fake.update_entry(event_entry, fields={"division": "Solo"}, email=None)
        season_entry = fake.add_entry(season_id=1, name="Season Direct")
        fake.upload_recording(season_entry, "licensed")
        await fake.wait_webhooks()
        first, added, second = (r["body"] for r in received)
        assert first == payload and first["eventId"] == 2 and "seasonId" not in first
        # A new entry is announced as a changed one is, with the full entry.
        assert added["seasonId"] == 1 and "eventId" not in added
        assert added["entry"]["id"] == season_entry and added["entry"]["soundRecording"] is None
        assert added["entry"]["name"] == "Season Direct"
        assert first["entry"]["id"] == event_entry and first["entry"]["email"] is None
        division = [f["value"] for f in first["entry"]["fields"] if f["key"] == "division"]
        assert division == ["Solo"]
        assert second["seasonId"] == 1 and second["entry"]["id"] == season_entry
        assert second["entry"]["soundRecording"]["licenseStatus"] == "Licensed"
        # The entry endpoints agree with what was pushed.
        _, _, listed = await call(fake, "POST", "/api/public/v1/season/1/entries")
        assert next(e for e in listed if e["id"] == season_entry) == second["entry"]
    assert [d.kind for d in fake.webhook_deliveries] == ["entry", "entry", "entry"]


async def test_add_entry_posts_the_entry_update_webhook() -> None:
    async with receiver() as (hook, received), fresh(webhook_url=hook) as fake:
        event = fake.add_event(1, "Spring Open", multiple_select=["Pom", "Jazz"])
        entry_id = fake.add_entry(event, name="Leopards", fields={"styles": ["Jazz"]})
        await fake.wait_webhooks()
        [body] = [r["body"] for r in received]
        assert body == {"entry": fake.entry(entry_id), "eventId": event}
        _, _, listed = await call(fake, "POST", f"/api/public/v1/event/{event}/entries")
        assert listed == [body["entry"]]
    assert [d.kind for d in fake.webhook_deliveries] == ["entry"]


async def test_an_entry_added_before_the_loop_runs_is_announced_on_first_use() -> None:
    async with receiver() as (hook, received):
        fake = fresh(webhook_url=hook)

        def build() -> int:  # no event loop in this thread: data built up front
            return fake.add_entry(1, name="Early Bird")

        entry_id = await asyncio.to_thread(build)
        assert received == [] and fake.webhook_deliveries == []
        async with fake:
            await call(fake, "GET", "/api/public/v1/season")  # the fake's first use
            await fake.wait_webhooks()
        [body] = [r["body"] for r in received]
        assert body["eventId"] == 1 and body["entry"]["id"] == entry_id


async def test_entry_updates_need_no_webhook_url_and_validate_keys() -> None:
    async with fresh() as fake:
        entry = fake.add_entry(1, name="Quiet")
        payload = fake.update_entry(entry, name="Renamed")
        assert payload["entry"]["name"] == "Renamed" and fake.webhook_deliveries == []
        with pytest.raises(ValueError, match="no signup field"):
            fake.update_entry(entry, fields={"nope": "x"})


# ---------------------------------------------------------------- the files origin


async def test_files_origin_is_separate_refuses_bearer_tokens_and_expires() -> None:
    fake = fresh(url_ttl=60)
    _, _, entries = await call(fake, "POST", "/api/public/v1/event/1/entries")
    link = next(e for e in entries if e["soundRecording"])["soundRecording"]["downloadURL"]
    assert link.startswith("http://files.fake.invalid/files/recordings/")
    assert (await call(fake, "GET", link, token=None))[0] == 200
    status, resp, _ = await call(fake, "GET", link)  # with the API's bearer token
    assert status == 400 and b"InvalidArgument" in resp.content
    # The same path on the API origin is not a file.
    api_path = link.replace("http://files.fake.invalid", "http://fake.invalid")
    assert (await call(fake, "GET", api_path, token=None))[0] == 403
    fake.advance(61)
    status, resp, _ = await call(fake, "GET", link, token=None)
    assert status == 403 and b"Request has expired" in resp.content
    await fake.aclose()


async def test_licence_links_redirect_to_the_files_origin() -> None:
    async with fresh() as fake:
        _, _, entries = await call(fake, "POST", "/api/public/v1/event/1/entries")
        links = [
            f["downloadURL"]
            for e in entries
            if e["soundRecording"]
            for s in e["soundRecording"]["songs"]
            if s["licenseData"] and s["licenseData"]["externalLicense"]
            for f in s["licenseData"]["externalLicense"]["files"]
            if f["downloadURL"]
        ]
        assert links and links[0].startswith("http://fake.invalid/files/licenses/")
        status, resp, _ = await call(fake, "GET", links[0])
        assert status == 302
        target = resp.headers["Location"]
        assert target.startswith("http://files.fake.invalid/files/licenses/")
        status, pdf, _ = await call(fake, "GET", target, token=None)
        assert status == 200 and pdf.headers["Content-Type"] == "application/pdf"
        bad = links[0].replace("t=", "t=0")
        assert (await call(fake, "GET", bad))[0] == 403


async def test_sdk_download_follows_the_redirect_and_sees_expiry_over_sockets() -> None:
    fake = fresh(url_ttl=60)
    async with fake.serve() as url, Client(url, token=TOKEN) as svc:
        entries = await svc.request("POST", "/api/public/v1/event/1/entries", json={})
        rec = next(e for e in entries if e["soundRecording"])["soundRecording"]
        licence = next(
            f["downloadURL"]
            for e in entries
            if e["soundRecording"]
            for s in e["soundRecording"]["songs"]
            if s["licenseData"] and s["licenseData"]["externalLicense"]
            for f in s["licenseData"]["externalLicense"]["files"]
            if f["downloadURL"]
        )
        sink = io.BytesIO()
        result = await svc.download(licence, sink)
        assert result.bytes_written == fake.files.file_size
        assert result.url.startswith(fake.files_url)  # followed to the files origin
        fake.advance(61)
        with pytest.raises(SignedURLExpired):
            await svc.download(rec["downloadURL"], io.BytesIO())
    files_requests = [r for r in fake.requests if r.origin == "files"]
    assert files_requests and all("Authorization" not in r.headers for r in files_requests)


# ---------------------------------------------------------------- counting routes


async def test_count_accepts_any_placeholder_name() -> None:
    async with fresh() as fake:
        await call(fake, "GET", f"{JOB}/1")
        await call(fake, "GET", f"{JOB}/2")
        await call(fake, "POST", "/api/public/v1/event/1/entries")
        for name in ("id", "verificationJobId", "jobId", ""):
            assert fake.count("GET", f"{JOB}/{{{name}}}") == 2
        assert fake.count("get", f"{JOB}/{{x}}") == 2
        assert fake.count("POST", "/api/public/v1/event/{eventId}/entries") == 1
        assert fake.count("POST", f"{JOB}/{{id}}") == 0  # the method still matters
        assert fake.count("GET", f"{JOB}/1") == 1  # literal paths still work
        fake.faults = FaultConfig(error_5xx=1.0, paths=(f"{JOB}/{{id}}",))
        assert (await call(fake, "GET", f"{JOB}/1"))[0] >= 500
        assert (await call(fake, "POST", f"{JOB}/search", {}))[0] == 200


# ---------------------------------------------------------------- legacy mode


async def test_legacy_mode_speaks_the_published_examples() -> None:
    async with receiver() as (hook, received):
        async with FakeService(
            clock=FakeClock(start=START), processing_delay=4.0, legacy=True, webhook_url=hook
        ) as fake:
            _, _, created = await call(fake, "POST", JOB, job_request(tags=["old"]))
            assert "editURL" not in created and "outputFiles" not in created
            seen = []
            for _ in range(5):
                seen.append(fake.job(created["id"])["status"])
                fake.advance(1.0)
            assert seen == ["Created", "Downloading", "DetectingMusic", "Matching", "Completed"]
            await fake.wait_webhooks()
            _, _, found = await call(fake, "POST", f"{JOB}/search", {"tags": ["old"]})
            assert set(found) == {"jobs", "count"} and found["count"] == 1
            checks = found["jobs"][0]["recording"]["songs"][0]["licenseChecks"]
            assert len(checks) == 10 and "Publishing Arrangement Rights" not in checks
            fake.submit(created["id"])
            assert fake.job(created["id"])["status"] == "Confirmed"
            await fake.wait_webhooks()
    assert [r["body"]["status"] for r in received] == ["Completed", "Confirmed"]


async def test_add_event_without_territory_and_with_a_multiple_select_question() -> None:
    async with fresh(demo_data=False) as fake:
        event_id = fake.add_event(1, "Venue TBC", territory=None, multiple_select=["Pom", "Jazz"])
        entry = fake.add_entry(event_id, fields={"styles": ["Pom", "Jazz"]}, recording="licensed")
        _, _, events = await call(fake, "POST", "/api/public/v1/event")
        (event,) = events
        assert event["territory"] is None
        assert event["signupFields"][-1]["type"] == "multipleSelect"
        assert event["signupFields"][-1]["options"] == ["Pom", "Jazz"]
        path = f"/api/public/v1/event/{event_id}/entries"
        body = {"fields": [{"key": "STYLES", "value": "jazz"}]}
        _, _, found = await call(fake, "POST", path, body)
        assert [e["id"] for e in found] == [entry]
        assert found[0]["fields"][-1]["value"] == ["Pom", "Jazz"]
        # No territory, so no territory to check.
        song = found[0]["soundRecording"]["songs"][0]
        assert song["licenseChecks"] is None or song["licenseChecks"]["Territory Match"] == {}
