"""``svc-async demo``: the tour runs end to end, as a real process, in good time."""

from __future__ import annotations

import io
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from svc_async.cli.args import DEFAULT_DEMO_DELAY
from svc_async.cli.demo import Tour
from svc_async.cli.demo import main as demo_main
from svc_async.cli.terminal import make_renderer
from svc_async.testing import VirtualClock

ROOT = Path(__file__).resolve().parents[2]

SECTIONS = (
    "1. Organisations",
    "2. Seasons",
    "3. Events",
    "4. Entries of every event, fetched concurrently",
    "5. Licence status summary",
    "6. Songs a person reviewed",
    "7. Verification jobs, created and awaited",
    "8. The verdict, song by song",
    "9. Claimed and submitted",
    "10. The VOD job's output file",
    "11. Searching jobs by tag",
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
    starts = [out.index(section) for section in SECTIONS]
    assert starts == sorted(starts)
    ends = [*starts[1:], len(out)]
    parts = {name: out[a:b] for name, a, b in zip(SECTIONS, starts, ends, strict=True)}
    # the organisation tree, every event, the summary's totals
    assert "National Cheer & Dance Federation" in out
    assert "Manchester Mavericks Cheer" in out
    assert "Vancouver" in out and "Invitational" in out  # the last event (cells may wrap)
    assert "All events" in out
    assert "12/12" in out
    # a recording with a person's verdict, in a verdict table
    reviewed = " ".join(parts["6. Songs a person reviewed"].split())
    assert re.search(r"all entries hold (\d+ (Manually|User)[^,.]*[,.] ?)+", reviewed)
    assert re.search(r"Songs of .* \(entry #\d+\) at ", reviewed)
    assert re.search(r"(Manually Approved|Manually Rejected|User Updated): ", reviewed)
    assert "* manual status" in reviewed
    # a routine job and a VOD job; the routine one's statuses as they happened
    jobs = parts["7. Verification jobs, created and awaited"]
    assert re.search(r"Created job #(\d+) \(Routine\) with status Created", jobs)
    vod_id = re.search(r"Created job #(\d+) \(VOD\) with status Created", jobs)
    assert vod_id is not None
    shown = [line.split()[-1] for line in jobs.splitlines() if line.startswith("  +")]
    assert shown[-1] == "Processed" and len(shown) >= 2
    order = ["Created", "Downloading", "DetectingMusic", "Matching", "Matched", "Processed"]
    # In order, none repeated; on a loaded machine the first poll may come a step late.
    assert [s for s in order if s in shown] == shown
    # its verdict with a failing check
    verdict = parts["8. The verdict, song by song"]
    assert "Territory Match FR: Rejected" in verdict
    assert "Partially Licensed" in verdict
    # a person submits it: Submitted and claimed
    assert re.search(
        r"Job #\d+ is now Submitted \(claimed: yes\)", parts["9. Claimed and submitted"]
    )
    # the VOD job's output file goes Pending ... Completed, then is downloaded
    output = parts["10. The VOD job's output file"]
    assert f"Job #{vod_id[1]} (VOD) is Processed" in output
    made = [line.split()[-1] for line in output.splitlines() if line.startswith("  +")]
    assert made[-1] == "Completed"
    assert set(made) <= {"Pending", "Processing", "Completed"}
    assert re.search(r"Output file #\d+ \(Mute, Audio\) is ready", output)
    assert re.search(r"/files/outputs/\S+\.mp3\?\.\.\.$", output, re.MULTILINE)
    assert "Downloaded 64 KiB (audio/mpeg)" in output
    assert "Signature" not in out and "X-Amz" not in out  # no signed query shown
    # the tag search found the seeded jobs and both new ones, with their types
    search = parts["11. Searching jobs by tag"]
    assert "Jobs tagged 'Seniors': 5 of 5" in search
    assert "Errored" in search and "Submitted" in search
    assert "VOD" in search and "Routine" in search
    assert "Completed" not in search  # today's service: jobs end at Processed


@pytest.mark.slow
def test_demo_as_a_subprocess() -> None:
    began = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "svc_async", "demo", "--no-color", "--delay", "0.2"],
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


@pytest.mark.slow
def test_demo_without_rich() -> None:
    """With rich not importable the demo falls back to plain text and still runs."""
    code = (
        "import sys; sys.modules['rich'] = None\n"
        "from svc_async.cli import main\n"
        "sys.exit(main(['demo', '--delay', '0.2', '--seed', '7']))\n"
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


@pytest.mark.looptime
async def test_demo_in_process_plain_on_virtual_time() -> None:
    # The tour as run_demo runs it (plain, 80 columns), on virtual time: the default 3 s
    # jobs take no real time, and every status they pass through is shown.
    out = io.StringIO()
    ui = make_renderer(out, color=False, plain=True, width=80)
    await Tour(ui, delay=DEFAULT_DEMO_DELAY, seed=2, clock=VirtualClock()).run()
    _check_tour(out.getvalue())


def test_demo_module_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert demo_main(["--help"]) == 0
    assert "--delay" in capsys.readouterr().out
    assert demo_main(["--delay", "soon"]) == 2


def _sigint_as_in_a_terminal() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.slow
@pytest.mark.parametrize(
    "after", ["A FakeService is listening", "(Routine) with status", "(VOD) with status"]
)
def test_ctrl_c_anywhere_in_the_tour_is_one_line(after: str) -> None:
    """SIGINT once the tour is under way (serving, creating the VOD job just after the
    routine one, or waiting for a job): exit 130 at once, one line."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "svc_async", "demo", "--no-color", "--delay", "20"],
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # As from a terminal: a suite started in the background (``cmd &``) has SIGINT
        # ignored, and a child would inherit that and never see the Ctrl-C.
        preexec_fn=_sigint_as_in_a_terminal,
    )
    assert proc.stdout is not None
    try:
        for line in proc.stdout:
            if after in line:
                break
        proc.send_signal(signal.SIGINT)
        began = time.monotonic()
        _, err = proc.communicate(timeout=10)  # at once, not after the 20 s job
        took = time.monotonic() - began
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert took < 10
    assert proc.returncode == 130
    assert err == "svc-async demo: interrupted\n"
