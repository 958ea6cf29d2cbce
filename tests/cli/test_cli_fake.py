"""``svc-async fake``: a FakeService served from the shell, driven by the CLI, stopped by SIGINT."""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import pytest

from svc_async.cli import main
from svc_async.cli.args import build_parser
from svc_async.cli.fake import fault_config
from svc_async.testing import FakeService, FaultConfig

ROOT = Path(__file__).resolve().parents[2]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SVC_")}
    env["PYTHONPATH"] = str(ROOT)
    env.update(extra)
    return env


class Fake:
    """``python -m svc_async.cli fake ...`` running in a child process."""

    def __init__(self, *flags: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "svc_async.cli", "fake", *flags],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_env(),
        )
        assert self.proc.stdout is not None
        self.exports = [self.proc.stdout.readline() for _ in range(3)]
        self.variables = {}
        for line in self.exports:
            assert line.startswith("export "), (line, self.stop())
            name, _, value = line.removeprefix("export ").strip().partition("=")
            self.variables[name] = value

    def cli(self, *argv: str) -> subprocess.CompletedProcess[str]:
        """Run the CLI in another process, configured only by the printed variables."""
        return subprocess.run(
            [sys.executable, "-m", "svc_async", *argv],
            capture_output=True,
            text=True,
            env=_env(**self.variables),
            timeout=60,
        )

    def cli_here(self, *argv: str) -> subprocess.CompletedProcess[str]:
        """The same, in this process (``main``; another interpreter costs a start-up)."""
        out, err = io.StringIO(), io.StringIO()
        env = {k: v for k, v in os.environ.items() if not k.startswith("SVC_")}
        with (
            mock.patch.dict(os.environ, {**env, **self.variables}, clear=True),
            contextlib.redirect_stdout(out),
            contextlib.redirect_stderr(err),
        ):
            code = main(list(argv))
        return subprocess.CompletedProcess(argv, code, out.getvalue(), err.getvalue())

    def stop(self, signum: int = signal.SIGINT) -> tuple[int, str]:
        """SIGINT, as Ctrl-C sends; the exit status and everything on stderr."""
        if self.proc.poll() is None:
            self.proc.send_signal(signum)
        _, err = self.proc.communicate(timeout=15)
        return self.proc.returncode, err


@pytest.fixture
def fake() -> Iterator[Fake]:
    # Jobs finish at once: a CLI wait's first look comes after 1 s otherwise.
    served = Fake("--job-delay", "0", "--seed", "3")
    try:
        yield served
    finally:
        if served.proc.poll() is None:
            served.proc.kill()
            served.proc.communicate()


@pytest.mark.slow
def test_prints_exports_serves_the_cli_and_stops_cleanly_on_sigint(fake: Fake) -> None:
    """One served fake: the CLI in another process reads it, a job created through it
    finishes, and Ctrl-C stops it with two lines on stderr."""
    assert set(fake.variables) == {"SVC_BASE_URL", "SVC_API_TOKEN", "SVC_ACCOUNT_URL"}
    assert fake.variables["SVC_BASE_URL"].startswith("http://127.0.0.1:")
    assert fake.variables["SVC_API_TOKEN"] == FakeService.DEFAULT_TOKEN

    orgs = fake.cli("orgs")
    assert orgs.returncode == 0, orgs.stderr
    assert {o["name"] for o in json.loads(orgs.stdout)}

    created = fake.cli_here(
        "jobs", "create", "--name", "Shell", "--email", "producer@service.example", "--org", "1",
        "--audio-url", "https://media.example/mixes/shell.mp3", "--start", "2025-03-01",
        "--end", "2025-03-01", "--territory", "GB", "--wait", "--wait-timeout", "30",
    )  # fmt: skip
    assert created.returncode == 0, created.stderr
    job = json.loads(created.stdout)
    assert job["status"] == "Processed"  # today's service (without --legacy)

    code, err = fake.stop()
    assert code == 0
    lines = err.splitlines()
    assert lines[-1] == "svc-async fake: stopped"
    assert "Traceback" not in err
    assert len(lines) == 2 and "Ctrl-C stops it" in lines[0]
    assert "(jobs take 0s, " in lines[0]


@pytest.mark.slow
def test_legacy_fake_speaks_the_older_shapes() -> None:
    """--legacy: jobs end at Completed, search answers {jobs, count}; the CLI reads both,
    and a status filter of today's names is the older service's 400 (exit 5)."""
    served = Fake("--legacy", "--job-delay", "0")  # jobs finish at once
    try:
        created = served.cli_here(
            "jobs", "create", "--name", "Older", "--email", "producer@service.example",
            "--org", "1", "--audio-url", "https://media.example/mixes/older.mp3",
            "--start", "2025-03-01", "--end", "2025-03-01", "--territory", "GB",
            "--tag", "legacy-run", "--wait", "--wait-timeout", "30",
        )  # fmt: skip
        found = served.cli_here("jobs", "search", "--tag", "legacy-run")
        refused = served.cli_here("jobs", "search", "--status", "Processed")
    finally:
        code, err = served.stop()
    assert code == 0
    assert "(legacy shapes, jobs take 0s, " in err.splitlines()[0]
    assert created.returncode == 0, created.stderr
    job = json.loads(created.stdout)
    assert job["status"] == "Completed"
    assert "type" not in job and "outputFiles" not in job
    assert found.returncode == 0, found.stderr
    page = json.loads(found.stdout)
    assert page["count"] == 1
    assert [(j["id"], j["status"]) for j in page["jobs"]] == [(job["id"], "Completed")]
    assert refused.returncode == 5
    assert "received 'Processed'" in refused.stderr


@pytest.mark.slow
def test_sigterm_stops_it_the_same_way(fake: Fake) -> None:
    code, err = fake.stop(signal.SIGTERM)
    assert code == 0
    assert err.splitlines()[-1] == "svc-async fake: stopped"


@pytest.mark.slow
def test_burst_429_flags_reach_the_fake_and_the_cli_says_when_to_retry() -> None:
    # 90 s is beyond the SDK's default max_server_wait, so it is reported, not slept through.
    served = Fake("--burst-429-rate", "1", "--burst-retry-after", "90")
    try:
        result = served.cli_here("seasons")
    finally:
        code, _ = served.stop()
    assert code == 0
    assert result.returncode == 5
    assert result.stdout == ""
    assert result.stderr.startswith("svc-async: error: rate limited by the service (HTTP 429)")
    assert "retry in 90s (after " in result.stderr
    assert result.stderr.count("\n") == 1


@pytest.mark.slow
def test_timeout_is_the_whole_commands_deadline() -> None:
    """Each attempt would take 2 s and there are 4; --timeout 0.2 ends the whole command."""
    served = Fake("--latency", "2", "--error-rate", "1")
    try:
        began = time.monotonic()
        result = served.cli_here("--timeout", "0.2", "seasons")
        took = time.monotonic() - began
    finally:
        served.stop()
    assert result.returncode == 6
    assert result.stderr == "svc-async: error: --timeout: the command did not finish within 0.2s\n"
    assert took < 6.0  # four 2 s attempts would take over 8 s


def test_a_port_in_use_is_one_line_and_exit_6(capsys: pytest.CaptureFixture[str]) -> None:
    codes: list[int] = []
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        # In this process (main, as the console script runs it), on a thread: were the
        # port taken after all, the fake would serve there instead of returning.
        thread = threading.Thread(
            target=lambda: codes.append(main(["fake", "--port", str(port)])), daemon=True
        )
        thread.start()
        thread.join(30)
    out, err = capsys.readouterr()
    assert codes == [6]
    assert out == ""
    assert err.startswith(f"svc-async fake: error: cannot listen on port {port}")
    assert err.count("\n") == 1


def test_fault_flags_become_a_fault_config() -> None:
    parse = build_parser().parse_args
    assert fault_config(parse(["fake"])) is None
    assert parse(["fake"]).legacy is False
    assert parse(["fake", "--legacy"]).legacy is True
    args = parse(
        ["fake", "--latency", "0.2", "--error-rate", "0.1", "--reset-rate", "0.05",
         "--malformed-rate", "0.01", "--latency-spike", "0.5", "--spike-seconds", "2"]
    )  # fmt: skip
    assert fault_config(args) == FaultConfig(
        latency=0.2,
        error_5xx=0.1,
        reset=0.05,
        malformed_json=0.01,
        latency_spike=0.5,
        spike_seconds=2.0,
    )


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (["--rate-limit", "100/60"], (100, 60.0)),
        (["--rate-limit", "off"], None),
        ([], (1000, 60.0)),
    ],
)
def test_rate_limit_flag(flags: list[str], expected: tuple[int, float] | None) -> None:
    assert build_parser().parse_args(["fake", *flags]).rate_limit == expected


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--rate-limit", "lots"], "expected REQUESTS/SECONDS such as 100/60, or off"),
        (["--error-rate", "2"], "argument --error-rate: must be from 0 to 1, got 2"),
        (["--port", "70000"], "argument --port: must be from 0 to 65535, got 70000"),
    ],
)
def test_bad_fake_flags_are_usage_errors(
    flags: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["fake", *flags])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err
