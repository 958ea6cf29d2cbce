"""``svc-async demo``: the tour runs end to end, as a real process, in good time."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from svc_async.cli.demo import main as demo_main
from svc_async.cli.demo import run_demo

ROOT = Path(__file__).resolve().parent.parent

SECTIONS = (
    "Organisations",
    "Seasons",
    "Events",
    "Entries of every event, fetched concurrently",
    "Licence status summary",
    "A verification job, created and awaited",
    "The verdict, song by song",
    "Searching jobs by tag",
    "Done",
)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SVC_")}
    env["PYTHONPATH"] = str(ROOT)
    env.pop("COLUMNS", None)
    return env


def _check_tour(out: str) -> None:
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 80, max(lines, key=len)
    assert [line for line in lines if line != line.rstrip()] == []
    for section in SECTIONS:
        assert section in out, section
    # the organisation tree, every event, the summary's totals
    assert "National Cheer & Dance Federation" in out
    assert "Manchester Mavericks Cheer" in out
    assert "Vancouver" in out and "Invitational" in out  # the last event (cells may wrap)
    assert "All events" in out
    assert "12/12" in out
    # the job's status changes as they happened, then its verdict with a failing check
    order = [out.index(s) for s in ("Created", "Downloading", "DetectingMusic", "Matching")]
    assert order == sorted(order)
    assert "Completed" in out or "Processed" in out
    assert "Territory Match FR: Rejected" in out
    assert "Partially Licensed" in out
    # the tag search found the seeded jobs and the new one
    assert "Jobs tagged 'Seniors'" in out
    assert "Errored" in out


def test_demo_as_a_subprocess() -> None:
    began = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "svc_async", "demo", "--no-color", "--delay", "1"],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    took = time.monotonic() - began
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert took < 30
    assert "\x1b[" not in proc.stdout  # --no-color, and not a terminal
    _check_tour(proc.stdout)


def test_demo_without_rich() -> None:
    """With rich not importable the demo falls back to plain text and still runs."""
    code = (
        "import sys; sys.modules['rich'] = None\n"
        "from svc_async.cli import main\n"
        "sys.exit(main(['demo', '--delay', '0.5', '--seed', '7']))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "== 1. Organisations" in proc.stdout
    assert "Entries of 12 events: 12/12 done" in proc.stdout
    assert "╭" not in proc.stdout
    _check_tour(proc.stdout)


def test_demo_in_process_plain() -> None:
    out = io.StringIO()
    assert run_demo(delay=0.4, seed=2, plain=True, out=out) == 0
    _check_tour(out.getvalue())


def test_demo_module_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert demo_main(["--help"]) == 0
    assert "--delay" in capsys.readouterr().out
    assert demo_main(["--delay", "soon"]) == 2


@pytest.mark.parametrize("after", ["A FakeService is listening", "Created job"])
def test_ctrl_c_anywhere_in_the_tour_is_one_line(after: str) -> None:
    """SIGINT once the tour is under way (serving, or waiting for the job): exit 130."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "svc_async", "demo", "--no-color", "--delay", "20"],
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if after in line:
            break
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert err == "svc-async demo: interrupted\n"
