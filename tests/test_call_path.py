"""The worked examples of ARCHITECTURE.md, measured: what one call passes through.

``await svc.jobs.get(7, timeout=2)`` runs against a real aiohttp server on 127.0.0.1
through the default transport, pacing on, as a user's call would; a profile hook
records every function of the SDK (``testing/`` aside) that the third such call enters.
The figures ARCHITECTURE.md gives (functions and files) must be the ones measured here,
so the page cannot drift from the code.
"""

from __future__ import annotations

import asyncio
import re
import sys
from pathlib import Path
from types import FrameType
from typing import Any

import aiohttp
from aiohttp import web

import svc_async
from svc_async import Client, JobStatusUpdate, WebhookReceiver
from svc_async.webhooks import DEFAULT_PATH

PACKAGE = Path(svc_async.__file__).parent
ARCHITECTURE = PACKAGE.parent / "ARCHITECTURE.md"
JOB = {"id": 7, "organisationId": 1, "status": "Processed", "errorMessage": "", "tags": []}
_CLAIM = re.compile(r"passes through \*\*(\d+) functions in (\d+) files\*\*")


async def _path_of_one_get() -> list[tuple[str, str]]:
    """The SDK functions ``jobs.get(7, timeout=2)`` enters, in first-entered order."""

    async def job(request: web.Request) -> web.Response:
        return web.json_response(JOB)

    app = web.Application()
    app.router.add_get("/api/public/v1/verification-job/7", job)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    entered: list[tuple[str, str]] = []

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        name = frame.f_code.co_filename
        if event == "call" and name.startswith(str(PACKAGE)) and "/testing/" not in name:
            entered.append((str(Path(name).relative_to(PACKAGE)), frame.f_code.co_qualname))

    try:
        async with Client(f"http://127.0.0.1:{port}", token="t") as svc:
            for _ in range(2):  # warm: the pool open, the converter's hooks made
                await svc.jobs.get(7, timeout=2)
            sys.setprofile(profile)
            try:
                await svc.jobs.get(7, timeout=2)
            finally:
                sys.setprofile(None)
    finally:
        await runner.cleanup()
    return list(dict.fromkeys(entered))


async def test_the_worked_example_gives_the_measured_path() -> None:
    path = await _path_of_one_get()
    files = {file for file, _ in path}
    claim = _CLAIM.search(ARCHITECTURE.read_text(encoding="utf-8"))
    assert claim is not None, "ARCHITECTURE.md states the path of jobs.get"
    listing = "\n".join(f"{file} {name}" for file, name in path)
    assert (int(claim[1]), int(claim[2])) == (len(path), len(files)), listing
    assert path[0] == ("resources/jobs.py", "Jobs.get")
    assert ("_transports/aiohttp.py", "AiohttpTransport.send") in path
    assert ("converter.py", "structure") in path  # the model is made inside the call


_STEP = re.compile(r"^(webhooks/\S+\.py)\s+(\S+)", re.M)


async def _path_of_one_delivery() -> list[tuple[str, str]]:
    """The SDK functions a status update entering a local receiver's aiohttp app runs
    through, from the request to its callback's end, in first-entered order."""
    receiver = WebhookReceiver("hook-s3cret-value")
    ran = asyncio.Event()
    entered: list[tuple[str, str]] = []

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        name = frame.f_code.co_filename
        if event == "call" and name.startswith(str(PACKAGE)) and not ran.is_set():
            entered.append((str(Path(name).relative_to(PACKAGE)), frame.f_code.co_qualname))

    @receiver.on_status_update
    async def callback(update: JobStatusUpdate) -> None:
        ran.set()

    runner = web.AppRunner(receiver.app())
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    url = f"http://127.0.0.1:{port}{DEFAULT_PATH}"
    try:
        async with aiohttp.ClientSession() as session:
            for job in (7, 8):  # the second one measured: the route and backend warm
                ran.clear()
                if job == 8:
                    sys.setprofile(profile)
                try:
                    body = {"id": job, "status": "Completed"}
                    async with session.post(url, params={"key": "hook-s3cret-value"}, json=body):
                        pass
                    await asyncio.wait_for(ran.wait(), 10)
                finally:
                    sys.setprofile(None)
    finally:
        await receiver.aclose()
        await runner.cleanup()
    return list(dict.fromkeys(entered))


async def test_the_local_webhook_example_is_the_path_a_delivery_takes() -> None:
    """Each step ARCHITECTURE.md lists for a local receiver is entered, in that order."""
    page = ARCHITECTURE.read_text(encoding="utf-8")
    section = page.split("## Worked example: a status update on a local receiver", 1)[1]
    table = section.split("```", 2)[1]
    steps = [(file, name.split("->")[0].strip()) for file, name in _STEP.findall(table)]
    assert len(steps) >= 5, table
    path = await _path_of_one_delivery()
    qualified = [(file, name.rsplit(".", 1)[-1], name) for file, name in path]
    at = -1
    for file, name in steps:
        found = [
            i
            for i, (f, short, full) in enumerate(qualified)
            if f == file and name in (short, full) and i > at
        ]
        assert found, f"{file} {name} is not entered after step {at}: {path}"
        at = found[0]
