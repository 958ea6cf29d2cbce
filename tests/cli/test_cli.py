"""The ``svc-async`` command line against a FakeService on a real loopback socket.

The fake runs in a background thread with its own event loop (``ServedFake``), so the
CLI can run in-process through ``main(argv)`` (which calls ``asyncio.run`` itself) and
as a real subprocess.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import io
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from svc_async import (
    AmbiguousCreateError,
    AuthenticationError,
    BadRequestError,
    ConnectError,
    JobWaitTimeout,
    NotFoundError,
    PermissionDeniedError,
    RequestTimeout,
    ResponseDecodeError,
    ServerError,
)
from svc_async.cli import ExitCode, UsageError, commands, exit_code_for, main
from svc_async.cli.render import (
    Column,
    PlainRenderer,
    QuietRenderer,
    Styled,
    Table,
    TreeNode,
)
from svc_async.cli.terminal import progress_renderer
from svc_async.models import FINISHED_JOB_STATUSES
from svc_async.testing import FakeService, FaultConfig

ROOT = Path(__file__).resolve().parents[2]
TOKEN = FakeService.DEFAULT_TOKEN
SECRET_TOKEN = "sekrit-token-8f3a9c"


class ServedFake:
    """A FakeService served on 127.0.0.1 from a thread running its own event loop."""

    def __init__(self, **options: Any) -> None:
        self._options = options
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._main, name="served-fake", daemon=True)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._error: BaseException | None = None
        self.fake: FakeService | None = None
        self.url = ""

    def __enter__(self) -> ServedFake:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the fake did not start")
        if self._error is not None:
            raise self._error
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._loop is not None and self._stop is not None
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)
        assert not self._thread.is_alive()

    def do(self, action: Callable[[FakeService], object]) -> None:
        """Run ``action(fake)`` on the fake's own loop, between its requests; wait for it."""
        assert self._loop is not None and self.fake is not None
        fake, done = self.fake, threading.Event()

        def step() -> None:
            try:
                action(fake)
            finally:
                done.set()

        self._loop.call_soon_threadsafe(step)
        assert done.wait(10)

    def _main(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as exc:  # reported to the starting thread
            self._error = exc
            self._ready.set()

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        self.fake = FakeService(**self._options)
        async with self.fake.serve("127.0.0.1") as url:
            self.url = url
            self._ready.set()
            await self._stop.wait()


@pytest.fixture(scope="module")
def served() -> Iterator[ServedFake]:
    """One fake for the module: jobs take 1.5 s."""
    with ServedFake(seed=3, processing_delay=1.5) as fake:
        yield fake


@pytest.fixture
def env(served: ServedFake, monkeypatch: pytest.MonkeyPatch) -> ServedFake:
    """SVC_BASE_URL and SVC_API_TOKEN point at the fake; other SVC_* variables unset."""
    for name in ("SVC_ACCOUNT_URL", "SVC_API_KEY_ID", "SVC_API_KEY_SECRET"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SVC_BASE_URL", served.url)
    monkeypatch.setenv("SVC_API_TOKEN", TOKEN)
    return served


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    assert err == ""
    return json.loads(out)


# ---------------------------------------------------------------- each command


def test_orgs(env: ServedFake, capsys: pytest.CaptureFixture[str]) -> None:
    orgs = run_json(capsys, "orgs")
    assert len(orgs) == 10
    by_id = {o["id"]: o for o in orgs}
    assert by_id[1]["name"] == "National Cheer & Dance Federation"
    assert by_id[1]["parentId"] is None
    assert by_id[2]["parentId"] == 1
    assert dt.datetime.fromisoformat(by_id[1]["createdAt"]).tzinfo is not None


def test_orgs_table(env: ServedFake, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "orgs", "--table")
    assert code == 0
    assert "National Cheer & Dance Federation" in out
    assert "Manchester Mavericks Cheer" in out
    with pytest.raises(json.JSONDecodeError):
        json.loads(out)


def test_table_before_the_command(env: ServedFake, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--table", "seasons")
    assert code == 0
    assert "Seasons (3)" in out


def test_seasons(env: ServedFake, capsys: pytest.CaptureFixture[str]) -> None:
    seasons = run_json(capsys, "seasons")
    assert [s["id"] for s in seasons] == [1, 2, 3]
    assert {"title", "organisationId", "startDate", "endDate", "signupFields"} <= set(seasons[0])
    assert seasons[0]["startDate"].endswith("Z")


def test_events_one_page(env: ServedFake, capsys: pytest.CaptureFixture[str]) -> None:
    events = run_json(capsys, "events", "--limit", "3", "--offset", "2")
    assert len(events) == 3
    everything = run_json(capsys, "events", "--all")
    assert len(everything) == 12
    assert [e["id"] for e in events] == [e["id"] for e in everything][2:5]


def test_events_of_one_org(env: ServedFake, capsys: pytest.CaptureFixture[str]) -> None:
    events = run_json(capsys, "events", "--all", "--org", "5")
    assert events
    assert {e["organisationId"] for e in events} == {5}


def test_events_table(env: ServedFake, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "events", "--all", "--table")
    assert code == 0
    assert "Events (12)" in out


def test_entries_of_an_event(env: ServedFake, capsys: pytest.CaptureFixture[str]) -> None:
    entries = run_json(capsys, "entries", "--event", "1")
    assert len(entries) == 10
    statuses = {e["soundRecording"]["licenseStatus"] for e in entries if e["soundRecording"]}
    assert {"Licensed", "Unverified"} <= statuses
    songs = [s for e in entries if e["soundRecording"] for s in e["soundRecording"]["songs"]]
    assert all("licenseChecks" in s and "licenseData" in s for s in songs)


def test_entries_of_a_season(env: ServedFake, capsys: pytest.CaptureFixture[str]) -> None:
    entries = run_json(capsys, "entries", "--season", "2")
    assert entries
    assert len({e["id"] for e in entries}) == len(entries)


def test_entries_since(env: ServedFake, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_json(capsys, "entries", "--event", "1", "--since", "2999-01-01T00:00:00Z") == []
    # naive means UTC; long ago returns every entry updated since (those with a recording)
    recent = run_json(capsys, "entries", "--event", "1", "--since", "2000-01-01T00:00")
    assert recent
    assert all(e["soundRecording"] for e in recent)


def test_entries_table(env: ServedFake, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--table", "entries", "--event", "1")
    assert code == 0
    assert "Entries of event 1 (10)" in out
    assert "no recording" in out


def test_jobs_get(env: ServedFake, capsys: pytest.CaptureFixture[str]) -> None:
    job = run_json(capsys, "jobs", "get", "1")
    assert job["id"] == 1
    assert job["status"] in FINISHED_JOB_STATUSES and job["status"] != "Errored"
    assert job["recording"]["songs"]
    checks = job["recording"]["songs"][0]["licenseChecks"]
    assert "Territory Match" in checks


def test_jobs_get_table_shows_the_verdict(
    env: ServedFake, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "jobs", "get", "1", "--table")
    assert code == 0
    assert "Verification job #1" in out
    assert "Verdict of job #1" in out


def test_jobs_search(env: ServedFake, capsys: pytest.CaptureFixture[str]) -> None:
    page = run_json(capsys, "jobs", "search", "--tag", "Sept 2024")
    assert page["count"] == 2
    assert sorted(j["id"] for j in page["jobs"]) == [1, 2]
    errored = run_json(capsys, "jobs", "search", "--tag", "2024", "--status", "Errored")
    assert [j["id"] for j in errored["jobs"]] == [4]
    assert errored["jobs"][0]["errorMessage"]


def test_jobs_search_pages(env: ServedFake, capsys: pytest.CaptureFixture[str]) -> None:
    page = run_json(capsys, "jobs", "search", "--tag", "2024", "--limit", "2", "--offset", "1")
    assert len(page["jobs"]) == 2
    assert page["count"] == 4
    everything = run_json(capsys, "jobs", "search", "--tag", "2024", "--all")
    assert everything["count"] == 4
    assert sorted(j["id"] for j in everything["jobs"]) == [1, 2, 3, 4]


def _create_args(*extra: str) -> list[str]:
    return [
        "jobs",
        "create",
        "--name",
        "CLI test",
        "--email",
        "producer@service.example",
        "--org",
        "1",
        "--audio-url",
        "https://media.example/mixes/cli-test.mp3",
        "--start",
        "2025-03-01",
        "--end",
        "2025-03-02",
        "--territory",
        "gb",
        "--territory",
        "US",
        "--tag",
        "cli-test",
        "--external-id",
        "EXT-1",
        *extra,
    ]


@pytest.fixture
def instant_jobs(env: ServedFake) -> Iterator[ServedFake]:
    """Jobs created during the test are finished at once (the fake's clock cannot be
    shared with a CLI in another loop, so no waiting on it)."""
    env.do(lambda fake: setattr(fake, "processing_delay", 0.0))
    yield env
    env.do(lambda fake: setattr(fake, "processing_delay", 1.5))


def test_jobs_create_and_wait(instant_jobs: ServedFake, capsys: pytest.CaptureFixture[str]) -> None:
    job = run_json(
        capsys,
        *_create_args(
            "--license-source",
            "Other",
            "--license-source-name",
            "Club library",
            "--license-file",
            "https://licences.example/club.pdf",
            "--wait",
        ),
    )
    assert job["status"] in FINISHED_JOB_STATUSES and job["status"] != "Errored"
    assert job["requiredTerritories"] == ["GB", "US"]
    assert "cli-test" in job["tags"]
    assert job["externalId"] == "EXT-1"
    assert job["startDate"].startswith("2025-03-01")
    assert job["recording"]["songs"]


def test_jobs_create_then_wait(env: ServedFake, capsys: pytest.CaptureFixture[str]) -> None:
    created = run_json(capsys, *_create_args())
    assert created["status"] == "Created"
    assert created["recording"] is None
    code, out, err = run(capsys, "jobs", "wait", str(created["id"]), "--timeout", "0.1")
    assert code == ExitCode.WAIT_TIMEOUT == 8
    assert err.startswith("svc-async: error: ") and err.count("\n") == 1
    assert json.loads(out)["id"] == created["id"]  # the last snapshot, for scripts
    env.do(lambda fake: fake.advance(2.0))  # past the 1.5 s of processing, without waiting
    done = run_json(capsys, "jobs", "wait", str(created["id"]), "--timeout", "30")
    assert done["id"] == created["id"]
    assert done["status"] in FINISHED_JOB_STATUSES and done["status"] != "Errored"


def test_api_key_options(env: ServedFake, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    monkeypatch.delenv("SVC_API_TOKEN")
    key_id, secret = FakeService.DEFAULT_API_KEY
    seasons = run_json(capsys, "--api-key-id", key_id, "--api-key-secret", secret, "seasons")
    assert len(seasons) == 3
    monkeypatch.setenv("SVC_API_KEY_SECRET", secret)
    assert len(run_json(capsys, "--api-key-id", key_id, "seasons")) == 3


def test_options_override_the_environment(
    env: ServedFake, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SVC_BASE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("SVC_API_TOKEN", "wrong")
    region = run_json(
        capsys,
        "--base-url",
        env.url,
        "--token",
        FakeService.REGION_TOKEN,
        "--timeout",
        "10",
        "orgs",
    )
    assert {o["id"] for o in region} == {2, 5, 6}


# ---------------------------------------------------------------- exit codes


def test_bad_token_is_an_auth_error_without_the_secret(
    env: ServedFake, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "--token", SECRET_TOKEN, "orgs")
    assert code == ExitCode.AUTH == 3
    assert out == ""
    assert err.startswith("svc-async: error: HTTP 401")
    assert err.count("\n") == 1
    assert SECRET_TOKEN not in err
    assert "Traceback" not in err


def test_bad_api_key_is_an_auth_error(
    env: ServedFake, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("SVC_API_TOKEN")
    code, _, err = run(capsys, "--api-key-id", "nobody", "--api-key-secret", SECRET_TOKEN, "orgs")
    assert code == ExitCode.AUTH
    assert SECRET_TOKEN not in err


def test_forbidden_org_is_an_auth_error(
    env: ServedFake, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "--token", FakeService.REGION_TOKEN, "events", "--org", "3")
    assert code == ExitCode.AUTH
    assert "403" in err


def test_unknown_job_is_not_found(env: ServedFake, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "jobs", "get", "99999")
    assert code == ExitCode.NOT_FOUND == 4
    assert out == ""
    assert "404" in err and err.count("\n") == 1


def test_unknown_event_is_not_found(env: ServedFake, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, _ = run(capsys, "entries", "--event", "99999")
    assert code == ExitCode.NOT_FOUND


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["nonsense"],
        ["jobs"],
        ["jobs", "get"],
        ["jobs", "get", "abc"],
        ["jobs", "get", "0"],
        ["events", "--all", "--limit", "5"],
        ["events", "--limit", "-1"],
        ["entries"],
        ["entries", "--event", "1", "--season", "1"],
        ["entries", "--event", "1", "--since", "last tuesday"],
        ["jobs", "create", "--name", "x"],
        [*_create_args()[:-2], "--start", "2025-13-01"],
        [*_create_args(), "--territory", "GBR"],
        [*_create_args(), "--license-file", "https://licences.example/x.pdf"],
        ["jobs", "wait", "1", "--timeout", "-3"],
        ["--timeout", "0", "orgs"],
        ["jobs", "search", "--limit", "500"],
        ["jobs", "search", "--status", "Completed"],
    ],
)
def test_bad_arguments_exit_2(
    env: ServedFake, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    code, out, err = run(capsys, *argv)
    assert code == ExitCode.USAGE == 2
    assert out == ""
    assert "usage:" in err


@pytest.mark.parametrize(
    "argv",
    [
        _create_args("--email", "not-an-email"),
        ["--base-url", "ftp://example.invalid", "orgs"],
    ],
)
def test_arguments_the_sdk_refuses_exit_2(
    env: ServedFake, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    code, out, err = run(capsys, *argv)
    assert code == ExitCode.USAGE
    assert out == ""
    assert err.startswith("svc-async: error: ") and err.count("\n") == 1


def test_missing_configuration_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("SVC_BASE_URL", "SVC_API_TOKEN", "SVC_API_KEY_ID", "SVC_API_KEY_SECRET"):
        monkeypatch.delenv(name, raising=False)
    code, _, err = run(capsys, "orgs")
    assert code == ExitCode.USAGE
    assert "--base-url" in err
    code, _, err = run(capsys, "--base-url", "http://127.0.0.1:9", "orgs")
    assert code == ExitCode.USAGE
    assert "no credentials" in err
    code, _, err = run(capsys, "--base-url", "http://127.0.0.1:9", "--api-key-id", "k", "orgs")
    assert code == ExitCode.USAGE
    assert "--api-key-secret" in err
    code, _, err = run(
        capsys, "--base-url", "http://127.0.0.1:9", "--token", "t", "--api-key-id", "k", "orgs"
    )
    assert code == ExitCode.USAGE


def _closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_network_failure_exit_6(
    env: ServedFake, no_backoff: None, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    code, out, err = run(capsys, "--base-url", url, "orgs")
    assert code == ExitCode.NETWORK == 6
    assert out == ""
    assert err.startswith("svc-async: error: network:")
    assert err.count("\n") == 1


def test_bad_response_exit_7(no_backoff: None, capsys: pytest.CaptureFixture[str]) -> None:
    with ServedFake(faults=FaultConfig(malformed_json=1.0)) as broken:
        code, _, err = run(capsys, "--base-url", broken.url, "--token", TOKEN, "seasons")
    assert code == ExitCode.BAD_RESPONSE == 7
    assert "bad response" in err


def test_other_api_error_exit_5(no_backoff: None, capsys: pytest.CaptureFixture[str]) -> None:
    faults = FaultConfig(error_5xx=1.0, error_statuses=(500,))
    with ServedFake(faults=faults) as broken:
        code, out, err = run(capsys, "--base-url", broken.url, "--token", TOKEN, "seasons")
    assert code == ExitCode.API_ERROR == 5
    assert out == ""
    assert "HTTP 500 for GET" in err and "<html" not in err.lower()
    assert "Internal Server Error" in err


def test_interrupted_exit_130(
    env: ServedFake, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    async def interrupted(*_: Any) -> commands.Outcome:
        raise KeyboardInterrupt

    monkeypatch.setitem(commands.COMMANDS, ("orgs", None), interrupted)
    code, _, err = run(capsys, "orgs")
    assert code == ExitCode.INTERRUPTED == 130
    assert "interrupted" in err


def test_unexpected_error_exit_1(
    env: ServedFake, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    async def broken(*_: Any) -> commands.Outcome:
        raise ZeroDivisionError(f"boom {TOKEN}")

    monkeypatch.setitem(commands.COMMANDS, ("orgs", None), broken)
    code, _, err = run(capsys, "orgs")
    assert code == ExitCode.UNEXPECTED == 1
    assert "ZeroDivisionError" in err and "Traceback" not in err
    assert TOKEN not in err
    code, _, err = run(capsys, "-v", "orgs")
    assert code == 1
    assert "Traceback" in err
    assert TOKEN not in err


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (AuthenticationError(401), ExitCode.AUTH),
        (PermissionDeniedError(403), ExitCode.AUTH),
        (NotFoundError(404), ExitCode.NOT_FOUND),
        (BadRequestError(400), ExitCode.API_ERROR),
        (ServerError(502), ExitCode.API_ERROR),
        (AmbiguousCreateError("?", tag="t"), ExitCode.API_ERROR),
        (ConnectError("refused"), ExitCode.NETWORK),
        (RequestTimeout("slow"), ExitCode.NETWORK),
        (ResponseDecodeError("bad"), ExitCode.BAD_RESPONSE),
        (JobWaitTimeout("late"), ExitCode.WAIT_TIMEOUT),
        (UsageError("no"), ExitCode.USAGE),
        (ValueError("no"), ExitCode.USAGE),
        (KeyboardInterrupt(), ExitCode.INTERRUPTED),
        (RuntimeError("bug"), ExitCode.UNEXPECTED),
    ],
)
def test_exit_code_for(exc: BaseException, code: ExitCode) -> None:
    assert exit_code_for(exc) == code


# ---------------------------------------------------------------- help and version


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["orgs", "--help"],
        ["seasons", "--help"],
        ["events", "--help"],
        ["entries", "--help"],
        ["jobs", "--help"],
        ["jobs", "create", "--help"],
        ["jobs", "get", "--help"],
        ["jobs", "search", "--help"],
        ["jobs", "wait", "--help"],
        ["fake", "--help"],
        ["demo", "--help"],
        ["webhooks", "--help"],
        ["webhooks", "send", "--help"],
        ["webhooks", "send", "status", "--help"],
        ["webhooks", "send", "entry", "--help"],
        ["webhooks", "send", "output-file", "--help"],
    ],
)
def test_help_everywhere(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    code, out, _ = run(capsys, *argv)
    assert code == 0
    assert out.startswith("usage: svc-async")
    if argv[:3] == ["webhooks", "send", "output-file"]:
        assert "Pending, Processing, Completed or Errored" in out  # an output file's own
        return
    # the legacy job statuses appear only where --legacy describes the older service
    legacy = [line for line in out.splitlines() if "Completed" in line or "Confirmed" in line]
    assert all("--legacy" in line or "at Completed" in line for line in legacy), legacy


def test_status_help_lists_todays_statuses(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "jobs", "search", "--help")
    text = " ".join(out.split())
    assert (
        "allowed status (repeatable): Created, Downloading, DetectingMusic, Matching,"
        " Matched, Processed, Submitted, Errored" in text
    )


def test_help_lists_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "--help")
    for line in ("0    success", "3    authentication", "8    jobs wait", "130  interrupted"):
        assert line in out


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--version")
    assert code == 0
    assert out.startswith("svc-async ")


# ---------------------------------------------------------------- real processes


def _subprocess_env(url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SVC_")}
    env.update(SVC_BASE_URL=url, SVC_API_TOKEN=TOKEN, PYTHONPATH=str(ROOT))
    return env


def test_python_m_svc_async_orgs(served: ServedFake) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "svc_async", "orgs"],
        env=_subprocess_env(served.url),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    orgs = json.loads(proc.stdout)
    assert {o["name"] for o in orgs} >= {"National Cheer & Dance Federation"}


def test_python_m_svc_async_not_found(served: ServedFake) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "svc_async", "jobs", "get", "99999"],
        env=_subprocess_env(served.url),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 4
    assert proc.stdout == ""
    assert proc.stderr.startswith("svc-async: error: HTTP 404")
    assert "Traceback" not in proc.stderr


# ---------------------------------------------------------------- rendering


def test_plain_renderer_aligns_tables_and_trees() -> None:
    out = io.StringIO()
    ui = PlainRenderer(out)
    ui.table(
        Table(
            "Title",
            [Column("ID", "right"), Column("Name")],
            [["1", Styled("one", "green")], ["22", ("t", Styled("wo", "red"))]],
        )
    )
    ui.tree(TreeNode(["root"], [TreeNode(["a"], [TreeNode(["b"])]), TreeNode(["c"])]))
    with ui.progress("Working", 2) as bar:
        bar.advance()
        bar.advance()
    assert out.getvalue().splitlines() == [
        "Title",
        "ID  Name",
        "--  ----",
        " 1  one",
        "22  two",
        "root",
        "|-- a",
        "|   `-- b",
        "`-- c",
        "Working: 2/2 done",
    ]


def test_progress_is_silent_when_stderr_is_not_a_terminal() -> None:
    err = io.StringIO()
    ui = progress_renderer(err)
    assert isinstance(ui, QuietRenderer)
    with ui.progress("x", 3) as bar, ui.status("y") as status:
        bar.advance()
        status.update("z")
    ui.line("status change")
    assert err.getvalue() == ""
