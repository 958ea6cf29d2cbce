"""The CLI speaks in flags: messages name what the user typed and say what to do next."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from svc_async import Client
from svc_async.cli import ExitCode, _configure_logging, main
from svc_async.cli.args import build_parser
from svc_async.cli.commands import Ui
from svc_async.cli.terminal import make_renderer, progress_renderer
from svc_async.cli.wording import in_flags

ISSUES = [
    {"code": "invalid_date", "message": "Start date must be in the future", "path": ["startDate"]},
    {"code": "too_small", "message": "At least one territory", "path": ["requiredTerritories"]},
    {
        "code": "custom",
        "message": "Unknown licence source",
        "path": ["licenseDetails", 0, "licenseSource"],
    },
    {"code": "custom", "message": "Something  else\nentirely", "path": ["mystery", 2]},
]


class ServedApp:
    """An aiohttp app on 127.0.0.1 in a thread: answers the CLI cannot get from the fake."""

    def __init__(self, handler: Any) -> None:
        self._handler = handler
        self._ready = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._serve()), daemon=True)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self.url = ""

    async def _serve(self) -> None:
        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handler)
        # A handler still running at the end (a slow answer) is cancelled, not waited for.
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.05)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        self.url = f"http://127.0.0.1:{port}"
        self._ready.set()
        await self._stop.wait()
        await runner.cleanup()

    def __enter__(self) -> ServedApp:
        self._thread.start()
        assert self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._loop is not None and self._stop is not None
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)


@pytest.fixture
def refusing() -> Iterator[ServedApp]:
    async def handler(request: web.Request) -> web.Response:
        body = {"statusCode": 400, "error": "Bad Request", "message": ISSUES}
        return web.json_response(body, status=400)

    with ServedApp(handler) as app:
        yield app


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


CREATE = [
    "jobs", "create", "--name", "Tigers", "--email", "coach@club.example", "--org", "1",
    "--audio-url", "https://media.example/t.mp3", "--territory", "GB",
]  # fmt: skip


def test_validation_issues_are_listed_one_per_flag(
    refusing: ServedApp, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(
        capsys, "--base-url", refusing.url, "--token", "t",
        *CREATE, "--start", "2025-03-01", "--end", "2025-03-02",
    )  # fmt: skip
    assert code == ExitCode.API_ERROR
    assert out == ""
    lines = err.splitlines()
    assert lines[0].startswith("svc-async: error: the service refused the request (HTTP 400")
    assert lines[1:] == [
        "  --start: Start date must be in the future",
        "  --territory: At least one territory",
        "  --license-source: Unknown licence source",
        "  mystery.2: Something else entirely",
    ]
    assert "[{" not in err  # no raw JSON


def test_start_after_end_names_the_flags(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(
        capsys, "--base-url", "http://127.0.0.1:9", "--token", "t",
        *CREATE, "--start", "2025-03-05", "--end", "2025-03-01",
    )  # fmt: skip
    assert code == ExitCode.USAGE
    assert out == ""
    assert "--start/--end: --start 2025-03-05 is after --end 2025-03-01" in err
    assert "request." not in err and "start_date" not in err


def test_sdk_refusal_names_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(
        capsys, "--base-url", "http://127.0.0.1:9", "--token", "t", "jobs", "create",
        "--name", "T", "--email", "not-an-email", "--org", "1",
        "--audio-url", "https://media.example/t.mp3", "--start", "2025-03-01", "--end", "2025-03-02",
    )  # fmt: skip
    assert code == ExitCode.USAGE
    assert out == ""
    assert err.startswith("svc-async: error: --email must be a valid email address")
    assert err.count("\n") == 1


@pytest.mark.slow
@pytest.mark.parametrize(
    ("sdk", "cli"),
    [
        ("request.start_date must not be after request.end_date", "--start must not be after --end"),
        ("request.email must be an email address", "--email must be an email address"),
        (
            "request.license_details[0].license_source_name must not be empty",
            "--license-source-name must not be empty",
        ),
        ("each of tags must be 2 to 255 characters: 'x'", "each of --tag must be 2 to 255 characters: 'x'"),
        ("limit must be at least 1 and at most 100, got 0", "--limit must be at least 1 and at most 100, got 0"),
        ("updated_after must be timezone-aware", "--since must be timezone-aware"),
        ("nothing to translate here", "nothing to translate here"),
    ],
)  # fmt: skip
def test_sdk_names_become_flags(sdk: str, cli: str) -> None:
    assert in_flags(sdk) == cli


async def test_limit_zero_is_worded_as_the_sdk_words_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    async with Client("http://127.0.0.1:9", token="t") as svc:
        with pytest.raises(ValueError) as sdk:
            await svc.jobs.search(limit=0)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["jobs", "search", "--limit", "0"])
    err = capsys.readouterr().err
    assert str(sdk.value).startswith("limit ")
    assert f"argument --limit: {str(sdk.value).removeprefix('limit ')}" in err


def test_page_size_help_wording(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["events", "--help"])
    events_help = " ".join(capsys.readouterr().out.split())
    with pytest.raises(SystemExit):
        build_parser().parse_args(["jobs", "search", "--help"])
    search_help = " ".join(capsys.readouterr().out.split())
    assert "page size, 1 to 100 (the service's default)" in events_help
    assert "page size, 1 to 100 (default 25)" in search_help
    assert "default (25))" not in events_help + search_help


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_sdk_info_records_show_as_status_lines_on_a_terminal() -> None:
    err = _Tty()
    ui = Ui(progress=make_renderer(err, color=False, width=200))
    handler = _configure_logging(0, ui)
    assert handler is not None
    try:
        logging.getLogger("svc_async._pipeline.run").info("rate limit: holding calls for %.0fs", 57)
        logging.getLogger("svc_async._pipeline.run").debug("not shown")
    finally:
        logging.getLogger("svc_async").removeHandler(handler)
    assert err.getvalue().strip() == "svc-async: rate limit: holding calls for 57s"


def test_no_status_lines_when_stderr_is_not_a_terminal() -> None:
    ui = Ui(progress=progress_renderer(io.StringIO()))
    assert _configure_logging(0, ui) is None


@pytest.mark.parametrize(
    ("limit", "message"),
    [
        (["--timeout", "0.6"], "--timeout: the command did not finish within 0.6s"),
        (["--wait-timeout", "0.2"], "--wait-timeout: job "),  # the job takes 30 s
    ],
)
def test_job_json_is_printed_when_a_create_wait_runs_out(
    limit: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The job was created: exit 8, its JSON still on stdout for scripts, one line on stderr."""
    from svc_async.testing import FakeService

    holder: dict[str, Any] = {}
    global_opts = limit if limit[0] == "--timeout" else []
    create_opts = [] if global_opts else limit

    async def scenario() -> None:
        fake = FakeService(seed=1, processing_delay=30)
        async with fake.serve("127.0.0.1") as url:
            argv = ["--base-url", url, "--token", FakeService.DEFAULT_TOKEN, *global_opts,
                    *CREATE, "--start", "2025-03-01", "--end", "2025-03-02", "--wait",
                    *create_opts]  # fmt: skip
            holder["code"] = await asyncio.to_thread(main, argv)

    asyncio.run(scenario())
    out, err = capsys.readouterr()
    assert holder["code"] == ExitCode.WAIT_TIMEOUT == 8
    job = json.loads(out)
    assert job["name"] == "Tigers" and isinstance(job["id"], int)
    assert err.startswith("svc-async: error: ") and err.count("\n") == 1
    assert message in err


def test_plural_of_songs() -> None:
    from svc_async.cli.views import plural

    assert plural(1, "song") == "1 song"
    assert plural(0, "song") == "0 songs"
    assert plural(2, "entry", "entries") == "2 entries"


@pytest.mark.slow
def test_a_create_cut_short_by_the_deadline_says_the_job_may_exist(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from svc_async.testing import FakeService, FaultConfig

    holder: dict[str, Any] = {}

    async def scenario() -> None:
        faults = FaultConfig(create_stall=1.0, stall_seconds=5.0)
        fake = FakeService(seed=1, faults=faults)
        async with fake.serve("127.0.0.1") as url:
            argv = ["--base-url", url, "--token", FakeService.DEFAULT_TOKEN, "--timeout", "0.2",
                    *CREATE, "--start", "2025-03-01", "--end", "2025-03-02"]  # fmt: skip
            holder["code"] = await asyncio.to_thread(main, argv)

    asyncio.run(scenario())
    out, err = capsys.readouterr()
    assert holder["code"] == ExitCode.NETWORK
    assert out == ""
    assert err == (
        "svc-async: error: --timeout: the command did not finish within 0.2s"
        " (the job may have been created: look for it with jobs search)\n"
    )


# ---------------------------------------------------------------- one prefix, one meaning

USAGE_ERRORS = [
    ["nonsense"],
    ["jobs", "search", "--limit", "0"],
    ["jobs", "search", "--status", "completed"],
    ["events", "--all", "--limit", "5"],
    ["jobs", "get", "abc"],
    ["entries", "--event", "1", "--season", "1"],
    [*CREATE, "--start", "2025-03-05", "--end", "2025-03-01"],
    ["fleet", "status", "--json", "--table"],
    ["--base-url", "http://127.0.0.1:9", "orgs"],  # no credentials
    ["--base-url", "ftp://example.invalid", "--token", "t", "orgs"],  # the SDK refuses it
]


@pytest.mark.parametrize("argv", USAGE_ERRORS, ids=" ".join)
def test_every_usage_error_has_the_one_prefix(
    argv: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("SVC_BASE_URL", "SVC_API_TOKEN", "SVC_API_KEY_ID", "SVC_API_KEY_SECRET"):
        monkeypatch.delenv(name, raising=False)
    code, out, err = run(capsys, *argv)
    assert code == ExitCode.USAGE and out == ""
    errors = [line for line in err.splitlines() if "error:" in line]
    assert len(errors) == 1 and errors[0].startswith("svc-async: error: "), err
    assert err.rstrip("\n").splitlines()[-1] == errors[0]  # the message is the last line


def test_a_request_refused_before_sending_is_not_a_network_failure() -> None:
    from svc_async import LocalProtocolError
    from svc_async.cli.exit_codes import describe, exit_code_for

    exc = LocalProtocolError(
        "GET https://verify.example/api/public/v1/season was refused before sending: header"
        " 'Authorization' is not a string or holds a control character (CR, LF, NUL or another)"
    )
    assert exit_code_for(exc) == ExitCode.USAGE
    text = describe(exc)
    assert not text.startswith("network") and "network" not in text
    assert text.startswith("GET https://verify.example/api/public/v1/season was refused")
    assert "nothing was sent" in text


async def test_limit_zero_means_the_same_in_the_cli_and_the_sdk(
    capsys: pytest.CaptureFixture[str],
) -> None:
    sdk: list[str] = []
    async with Client("http://127.0.0.1:9", token="t") as svc:
        for call in (svc.events.list, svc.jobs.search):
            with pytest.raises(ValueError) as refused:
                await call(limit=0)
            sdk.append(str(refused.value))
    cli: list[str] = []
    for argv in (["events", "--limit", "0"], ["jobs", "search", "--limit", "0"]):
        with pytest.raises(SystemExit):
            build_parser().parse_args(argv)
        cli.append(capsys.readouterr().err.splitlines()[-1])
    assert sdk == ["limit must be at least 1 and at most 100, got 0"] * 2
    assert (
        cli == ["svc-async: error: argument --limit: must be at least 1 and at most 100, got 0"] * 2
    )


# ---------------------------------------------------------------- the documented messages

_DOCS = Path(__file__).parents[2] / "docs"


def _documented_messages(page: str, section: str) -> list[str]:
    """The lines of the ``text`` blocks of ``section`` of a docs page."""
    text = (_DOCS / page).read_text(encoding="utf-8")
    body = text.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"^```text\n(.*?)^```", body, flags=re.MULTILINE | re.DOTALL)
    return [line for block in blocks for line in block.splitlines()]


def _closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _printed_messages(capsys: pytest.CaptureFixture[str]) -> list[str]:
    """What the CLI prints for each documented situation, with the values that change
    from run to run (port, clock) set to the documented ones."""
    printed: list[str] = []

    def say(*argv: str, subs: tuple[tuple[str, str], ...] = ()) -> None:
        _, _, err = run(capsys, *argv)
        lines = [line for line in err.splitlines() if not line.startswith(("usage:", "    "))]
        for old, new in subs:
            lines = [re.sub(old, new, line) for line in lines]
        printed.extend(lines)

    dead = "http://127.0.0.1:9"
    say(*CREATE, "--start", "2025-03-05", "--end", "2025-03-01")
    say("--base-url", dead, "--token", "t", *CREATE[:5], "not-an-email", *CREATE[6:],
        "--start", "2025-03-01", "--end", "2025-03-02")  # fmt: skip
    say("jobs", "search", "--status", "completed")
    say("jobs", "search", "--limit", "0")

    async def limited(request: web.Request) -> web.Response:
        return web.json_response({"statusCode": 429}, status=429, headers={"Retry-After": "90"})

    with ServedApp(limited) as app:
        say("--base-url", app.url, "--token", "t", "seasons",
            subs=((r"after \d\d:\d\d:\d\d UTC", "after 12:03:41 UTC"),))  # fmt: skip

    async def slow(request: web.Request) -> web.Response:
        await asyncio.sleep(5)
        return web.json_response([])

    with ServedApp(slow) as app:
        say("--base-url", app.url, "--token", "t", "--timeout", "0.2", "seasons",
            subs=((r"within 0\.2s", "within 10s"),))  # fmt: skip
    port = _closed_port()
    say("fleet", "status", "--fleet", f"redis://127.0.0.1:{port}/0",
        subs=((rf"\b{port}\b", "6379"),))  # fmt: skip

    issues = [ISSUES[0], ISSUES[2]]

    async def refusing(request: web.Request) -> web.Response:
        body = {"statusCode": 400, "error": "Bad Request", "message": issues}
        return web.json_response(body, status=400)

    with ServedApp(refusing) as app:
        say("--base-url", app.url, "--token", "t", *CREATE, "--start", "2025-03-01",
            "--end", "2025-03-02", subs=((re.escape(app.url) + "/api/public/v1", "..."),))  # fmt: skip
    return printed


@pytest.mark.slow
def test_the_documented_messages_are_the_printed_ones(
    capsys: pytest.CaptureFixture[str],
) -> None:
    documented = _documented_messages("cli.md", "Output")
    assert len(documented) >= 10
    assert _printed_messages(capsys) == documented
    # The fleet page shows the same failure, in the same words.
    [fleet] = _documented_messages("fleet-status.md", "When it fails")
    assert fleet in documented
