"""The worked examples of ARCHITECTURE.md, measured: what one call passes through.

``await svc.jobs.get(7, timeout=2)`` runs against a real aiohttp server on 127.0.0.1
through the default transport, pacing on, as a user's call would; a profile hook
records every function of the SDK (``testing/`` aside) that the third such call enters.
The figures ARCHITECTURE.md gives (functions and files) must be the ones measured here,
so the page cannot drift from the code.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from types import FrameType
from typing import Any

from aiohttp import web

import svc_async
from svc_async import Client

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
