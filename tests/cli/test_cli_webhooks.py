"""``svc-async webhooks send`` and ``fake --webhook-url`` against a live WebhookReceiver.

The receiver is the SDK's own, served by aiohttp on 127.0.0.1 from a thread with its own
event loop, so the CLI runs in-process through ``main(argv)`` (which calls
``asyncio.run`` itself) and as a real subprocess. What the receiver saw is read from its
callbacks, its verifier (which sees test deliveries too) and its stats.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from svc_async.cli import ExitCode, main
from svc_async.cli.args import build_parser
from svc_async.cli.exit_codes import UsageError
from svc_async.cli.fake import webhook_target
from svc_async.cli.webhooks import delivery_url
from svc_async.models import JobStatus
from svc_async.testing import FakeService
from svc_async.webhooks import (
    Delivery,
    EntryUpdate,
    JobStatusUpdate,
    OutputFileUpdate,
    WebhookReceiver,
    parse_delivery,
)

from .test_cli_fake import Fake

ROOT = Path(__file__).resolve().parents[2]
SECRET = "hook-secret-5b1e9d"


class ServedReceiver:
    """A ``WebhookReceiver`` served on 127.0.0.1 from a thread running its own loop.

    ``seen`` holds every body the receiver accepted the secret of (parsed by its
    verifier, test deliveries included); ``ran`` every callback run, of any kind.
    """

    def __init__(self, secret_param: str = "key") -> None:
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._main, name="served-receiver", daemon=True)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._changed = threading.Condition()
        self.seen: list[Delivery] = []
        self.ran: list[Delivery] = []
        self.receiver = WebhookReceiver(SECRET, secret_param=secret_param, verifier=self._verify)
        for register in (
            self.receiver.on_status_update,
            self.receiver.on_entry_update,
            self.receiver.on_output_file,
        ):
            register(self._record)
        self.url = ""

    def _verify(self, request: web.Request, body: bytes) -> None:
        self.seen.append(parse_delivery(body))

    def _record(self, update: Any) -> None:
        with self._changed:
            self.ran.append(update)
            self._changed.notify_all()

    def wait_runs(self, count: int, timeout: float = 10.0) -> list[Delivery]:
        """The callback runs once there are ``count`` (real time, bounded), after the
        receiver has finished everything in hand: a second run would show."""
        with self._changed:
            assert self._changed.wait_for(lambda: len(self.ran) >= count, timeout), self.ran
        assert self._loop is not None
        asyncio.run_coroutine_threadsafe(self.receiver.drain(), self._loop).result(timeout)
        return list(self.ran)

    def _main(self) -> None:
        asyncio.run(self._serve())

    async def _serve(self) -> None:
        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        runner = web.AppRunner(self.receiver.app(), access_log=None, shutdown_timeout=0.05)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        self.url = f"http://127.0.0.1:{runner.addresses[0][1]}/webhooks/svc"
        self._ready.set()
        await self._stop.wait()
        await runner.cleanup()

    def __enter__(self) -> ServedReceiver:
        self._thread.start()
        assert self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._loop is not None and self._stop is not None
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)


@pytest.fixture
def receiver(monkeypatch: pytest.MonkeyPatch) -> Iterator[ServedReceiver]:
    """A live receiver; SVC_WEBHOOK_SECRET holds its secret, other SVC_* unset."""
    for name in [n for n in os.environ if n.startswith("SVC_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("SVC_WEBHOOK_SECRET", SECRET)
    with ServedReceiver() as served:
        yield served


def send(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, str]:
    """``svc-async webhooks send ARGV`` in this process: exit code, JSON output, stderr."""
    code = main(["webhooks", "send", *argv])
    out, err = capsys.readouterr()
    assert SECRET not in out + err
    return code, json.loads(out) if out else None, err


def test_a_status_update_runs_the_callback_once_with_its_fields(
    receiver: ServedReceiver, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = send(
        capsys, "status", "--to", receiver.url, "--job", "7", "--status", "processed"
    )
    assert (code, err) == (0, "")
    assert out == {
        "sent": {
            "kind": "status",
            "to": f"{receiver.url}?key=[REDACTED]",
            "test": False,
            "body": {"id": 7, "status": "Processed"},
        },
        "answer": {"status": 204, "body": ""},
    }
    assert receiver.wait_runs(1) == [JobStatusUpdate(job_id=7, status=JobStatus.PROCESSED)]
    assert receiver.receiver.stats.dispatched == 1


def test_a_wrong_secret_is_a_401_and_an_auth_failure(
    receiver: ServedReceiver, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = send(
        capsys, "status", "--to", receiver.url, "--job", "7", "--status", "Errored",
        "--secret", "not-the-secret",
    )  # fmt: skip
    assert code == ExitCode.AUTH == 3
    assert out["answer"] == {"status": 401, "body": "unauthorized"}
    assert out["sent"]["to"] == f"{receiver.url}?key=[REDACTED]"
    assert err == (
        "svc-async: error: the receiver answered HTTP 401: unauthorized"
        " (check --secret / SVC_WEBHOOK_SECRET and --secret-param (key))\n"
    )
    assert "not-the-secret" not in json.dumps(out) + err
    assert receiver.seen == receiver.ran == []
    assert receiver.receiver.stats.rejected == 1


def test_a_test_delivery_is_seen_as_a_test_and_runs_no_callback(
    receiver: ServedReceiver, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = send(capsys, "status", "--to", receiver.url, "--test")
    assert code == 0
    # As the fake's send_test_webhook shapes it: job 0, Processed, isTest.
    assert out["sent"]["body"] == {"id": 0, "status": "Processed", "isTest": True}
    assert out["sent"]["test"] is True
    assert out["answer"]["status"] == 204
    assert receiver.seen == [JobStatusUpdate(job_id=0, status=JobStatus.PROCESSED, is_test=True)]
    assert receiver.receiver.stats.tests == 1
    assert receiver.ran == []


def test_a_generated_entry_update(
    receiver: ServedReceiver, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = send(capsys, "entry", "--to", receiver.url, "--event", "1")
    assert code == 0
    body = out["sent"]["body"]
    assert set(body) == {"entry", "eventId"} and body["eventId"] == 1
    [update] = receiver.wait_runs(1)
    assert isinstance(update, EntryUpdate)
    assert (update.event_id, update.season_id, update.is_test) == (1, None, False)
    assert update.entry.id == body["entry"]["id"] and update.entry.name
    assert update.entry.sound_recording is not None  # the fake's entry, recording and all


def test_an_entry_from_a_file_for_a_season(
    receiver: ServedReceiver, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    fake = FakeService()
    entry = fake.entry(max(fake.state.entries))
    path = tmp_path / "entry.json"
    path.write_text(json.dumps(entry))
    code, out, _ = send(capsys, "entry", "--to", receiver.url, "--file", str(path), "--season", "5")
    assert code == 0
    assert out["sent"]["body"] == {"entry": entry, "seasonId": 5}
    [update] = receiver.wait_runs(1)
    assert isinstance(update, EntryUpdate)
    assert (update.entry.id, update.entry.name, update.season_id) == (entry["id"], entry["name"], 5)


def test_an_output_file(receiver: ServedReceiver, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = send(
        capsys, "output-file", "--to", receiver.url, "--job", "12", "--file-id", "500"
    )
    assert code == 0
    assert out["sent"]["body"] == {
        "id": 500,
        "verificationJobId": 12,
        "status": "Completed",
        "downloadURL": "https://files.invalid/outputs/12-500-muted.mp3",
        "operation": "Mute",
        "fileType": "Audio",
    }
    [update] = receiver.wait_runs(1)
    assert isinstance(update, OutputFileUpdate)
    assert (update.job_id, update.output_file.id, update.output_file.is_ready) == (12, 500, True)


def test_a_pending_output_file_has_no_link(
    receiver: ServedReceiver, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = send(
        capsys, "output-file", "--to", receiver.url, "--job", "12", "--status", "pending", "--test"
    )
    assert code == 0
    assert out["sent"]["body"]["downloadURL"] is None
    assert out["sent"]["body"]["status"] == "Pending"
    assert receiver.seen[0].is_test and receiver.receiver.stats.tests == 1


def test_another_secret_param(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("SVC_WEBHOOK_SECRET", raising=False)
    with ServedReceiver(secret_param="token") as served:
        code, out, _ = send(
            capsys, "status", "--to", served.url, "--job", "3", "--status", "Submitted",
            "--secret", SECRET, "--secret-param", "token",
        )  # fmt: skip
        assert code == 0
        assert out["sent"]["to"] == f"{served.url}?token=[REDACTED]"
        assert served.wait_runs(1) == [JobStatusUpdate(job_id=3, status=JobStatus.SUBMITTED)]


def test_the_table_shows_the_delivery_and_the_answer(
    receiver: ServedReceiver, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["webhooks", "send", "status", "--to", receiver.url, "--test", "--table"])
    out, _ = capsys.readouterr()
    assert code == 0
    assert "Webhook status sent" in out
    assert "job 0 (Processed) (test)" in out
    assert "HTTP 204" in out
    assert f"{receiver.url}?key=[REDACTED]" in out and SECRET not in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["status", "--job", "7"], "a status update needs --job and --status (or --test)"),
        (["entry", "--event", "1", "--file", "/nonexistent/entry.json"], "--file: cannot read"),
        (["entry", "--event", "1", "--file", "NOTJSON"], "is not JSON"),
        (["entry", "--event", "1", "--file", "NOTENTRY"], "--file: webhook field 'entry'"),
    ],
)
def test_bad_input_is_a_usage_error_and_nothing_is_sent(
    receiver: ServedReceiver,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    argv: list[str],
    message: str,
) -> None:
    (tmp_path / "NOTJSON").write_text("{")
    (tmp_path / "NOTENTRY").write_text('{"name": "no id"}')
    argv = [str(tmp_path / a) if a in ("NOTJSON", "NOTENTRY") else a for a in argv]
    code, out, err = send(capsys, *argv, "--to", receiver.url)
    assert code == ExitCode.USAGE
    assert out is None
    assert err.startswith("svc-async: error: ") and message in err
    assert receiver.receiver.stats.received == 0


def test_a_secret_in_the_url_and_a_flag_is_a_usage_error(
    receiver: ServedReceiver, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"{receiver.url}?key=other-secret"
    code, _, err = send(capsys, "status", "--to", url, "--test", "--secret", SECRET)
    assert code == ExitCode.USAGE
    assert err == "svc-async: error: --to already carries ?key=...: drop it or the secret flag\n"
    assert "other-secret" not in err


def test_a_secret_in_the_url_is_used_as_given(
    receiver: ServedReceiver, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SVC_WEBHOOK_SECRET", "the-variable-loses")
    code, out, _ = send(capsys, "status", "--to", f"{receiver.url}?key={SECRET}", "--test")
    assert code == 0 and out["answer"]["status"] == 204


def test_no_receiver_is_a_network_failure(capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    with socket.socket() as spare:
        spare.bind(("127.0.0.1", 0))
        port = spare.getsockname()[1]
    url = f"http://127.0.0.1:{port}/webhooks/svc?key={SECRET}"
    code, out, err = send(capsys, "status", "--to", url, "--test")
    assert code == ExitCode.NETWORK
    assert out is None
    assert err.startswith(
        f"svc-async: error: network: http://127.0.0.1:{port}/webhooks/svc: Cannot connect"
    )
    assert err.count("\n") == 1


def test_a_404_exits_4_and_names_the_path(
    receiver: ServedReceiver, capsys: pytest.CaptureFixture[str]
) -> None:
    wrong = receiver.url.replace("/webhooks/svc", "/hooks")
    code, out, err = send(capsys, "status", "--to", wrong, "--test")
    assert code == ExitCode.NOT_FOUND
    assert out["answer"]["status"] == 404
    assert err.endswith("(check the path in --to)\n")


@pytest.mark.parametrize(
    ("url", "secret", "env", "expected"),
    [
        ("http://h/w", None, None, "http://h/w"),
        ("http://h/w", None, "e-secret", "http://h/w?key=e-secret"),
        ("http://h/w?key=u", None, "e-secret", "http://h/w?key=u"),
        ("http://h/w?a=1", "f-secret", "e-secret", "http://h/w?a=1&key=f-secret"),
    ],
)
def test_where_the_secret_comes_from(
    monkeypatch: pytest.MonkeyPatch, url: str, secret: str | None, env: str | None, expected: str
) -> None:
    """The flag, else the URL's own, else SVC_WEBHOOK_SECRET."""
    monkeypatch.delenv("SVC_WEBHOOK_SECRET", raising=False)
    if env is not None:
        monkeypatch.setenv("SVC_WEBHOOK_SECRET", env)
    assert delivery_url(url, secret, "key", "--to") == expected


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://h/w", "--to: expected an http:// or https:// URL, got ftp://h/w"),
        ("/webhooks/svc?key=s3cret", "--to: expected an http:// or https:// URL, got /webhooks/svc?key=[REDACTED]"),
    ],
)  # fmt: skip
def test_a_url_that_is_not_http_is_refused_without_its_query(url: str, message: str) -> None:
    with pytest.raises(UsageError) as exc:
        delivery_url(url, None, "key", "--to")
    assert str(exc.value) == message


def test_fake_webhook_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SVC_WEBHOOK_SECRET", raising=False)
    parse = build_parser().parse_args
    assert webhook_target(parse(["fake"])) is None
    url = "http://127.0.0.1:8000/webhooks/svc"
    assert webhook_target(parse(["fake", "--webhook-url", url])) == url
    given = parse(["fake", "--webhook-url", url, "--webhook-secret", "s3cret"])
    assert webhook_target(given) == f"{url}?key=s3cret"
    with pytest.raises(UsageError, match="--webhook-secret needs --webhook-url"):
        webhook_target(parse(["fake", "--webhook-secret", "s3cret"]))


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SVC_")}
    return {**env, "PYTHONPATH": str(ROOT), **extra}


@pytest.mark.slow
def test_python_m_svc_async_sends_a_delivery(receiver: ServedReceiver) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "svc_async", "webhooks", "send", "status", "--to", receiver.url,
         "--job", "41", "--status", "Matched"],
        capture_output=True, text=True, timeout=60, env=_env(SVC_WEBHOOK_SECRET=SECRET),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["answer"]["status"] == 204
    assert SECRET not in done.stdout + done.stderr
    assert receiver.wait_runs(1) == [JobStatusUpdate(job_id=41, status=JobStatus.MATCHED)]


@pytest.mark.slow
def test_python_m_svc_async_exits_3_on_a_wrong_secret(receiver: ServedReceiver) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "svc_async", "webhooks", "send", "status", "--to", receiver.url,
         "--test"],
        capture_output=True, text=True, timeout=60, env=_env(SVC_WEBHOOK_SECRET="wrong-one"),
    )  # fmt: skip
    assert done.returncode == 3
    assert "the receiver answered HTTP 401" in done.stderr
    assert "wrong-one" not in done.stdout + done.stderr
    assert receiver.receiver.stats.rejected == 1


@pytest.mark.slow
def test_the_served_fake_posts_its_deliveries_to_the_receiver(receiver: ServedReceiver) -> None:
    """A job created against ``fake --webhook-url`` is announced to the receiver when it
    is processed (jobs take no time here; the wait is bounded, in real time)."""
    served = Fake("--job-delay", "0", "--webhook-url", receiver.url, "--webhook-secret", SECRET)
    try:
        created = served.cli_here(
            "jobs", "create", "--name", "Hooked", "--email", "producer@service.example",
            "--org", "1", "--audio-url", "https://media.example/mixes/hooked.mp3",
            "--start", "2025-03-01", "--end", "2025-03-01", "--territory", "GB",
        )  # fmt: skip
        assert created.returncode == 0, created.stderr
        job_id = json.loads(created.stdout)["id"]
        began = time.monotonic()
        runs = receiver.wait_runs(1, timeout=30)
        assert time.monotonic() - began < 30
    finally:
        code, err = served.stop()
    assert runs == [JobStatusUpdate(job_id=job_id, status=JobStatus.PROCESSED)]
    assert code == 0
    posting = [line for line in err.splitlines() if "posting deliveries" in line]
    assert posting == [f"svc-async fake: posting deliveries to {receiver.url}?key=[REDACTED]"]
    assert SECRET not in err
