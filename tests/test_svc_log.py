"""``SVC_LOG=debug|info``: the SDK's log on stderr with no logging set up, and only then.

Each case runs in a fresh interpreter (the variable is read once, at import). The
fleet's outage WARNING (its Redis on a closed port) is the line a user must not miss.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]

SCRIPT = """
import asyncio, importlib, logging, sys

import svc_async
from svc_async import Client
from svc_async.testing import FakeService

if sys.argv[2] == "reload":
    importlib.reload(svc_async)  # imported again: still one handler


async def main():
    fake = FakeService()
    async with Client(
        "http://fake.invalid",
        token=FakeService.DEFAULT_TOKEN,
        transport=fake.transport(),
        fleet=f"redis://127.0.0.1:{sys.argv[1]}/0",
    ) as svc:
        await svc.orgs.list()


asyncio.run(main())
sdk = logging.getLogger("svc_async")
print(len([h for h in sdk.handlers if getattr(h, "svc_log", False)]), len(logging.getLogger().handlers))
"""


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def run(svc_log: str | None, *, reload: bool = True) -> subprocess.CompletedProcess[str]:
    pytest.importorskip("redis")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SVC_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.pop("PYTHONWARNINGS", None)
    if svc_log is not None:
        env["SVC_LOG"] = svc_log
    return subprocess.run(
        [sys.executable, "-c", SCRIPT, str(_closed_port()), "reload" if reload else "once"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=True,
    )


WARNING = "WARNING svc_async.fleet.store: fleet store redis://127.0.0.1:"


@pytest.mark.slow
@pytest.mark.parametrize("value", ["info", "debug", " INFO "])
def test_svc_log_shows_the_fleets_warning_on_stderr(value: str) -> None:
    done = run(value)
    warnings = [line for line in done.stderr.splitlines() if WARNING in line]
    assert len(warnings) == 1, done.stderr  # one handler, one line
    assert "unavailable" in warnings[0] and "carrying on locally" in warnings[0]
    assert done.stdout.split() == ["1", "0"]  # on svc_async only, once; the root untouched
    debug_lines = [line for line in done.stderr.splitlines() if " DEBUG svc_async." in line]
    assert bool(debug_lines) is (value == "debug"), done.stderr


@pytest.mark.slow
def test_without_svc_log_the_sdk_prints_nothing() -> None:
    done = run(None)
    assert done.stderr == ""
    assert done.stdout.split() == ["0", "0"]


@pytest.mark.slow
def test_an_unknown_svc_log_warns_once_and_is_ignored() -> None:
    done = run("loud", reload=False)  # read once, at import
    assert done.stderr.count("SVC_LOG='loud' is ignored: use debug or info") == 1, done.stderr
    assert "RuntimeWarning" in done.stderr and WARNING not in done.stderr
    assert done.stdout.split() == ["0", "0"]
