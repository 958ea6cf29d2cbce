"""The webhook receiver in every framework users build on, under real servers.

Each framework's app (tests/webhook_server.py) runs in a server process of its own; one
server per framework serves all its checks, the last of which is SIGTERM while a callback
runs. FastAPI under uvicorn (ASGI) and Flask under waitress (WSGI) run in the default
suite; the rest of the matrix is marked ``frameworks`` (``pytest -m frameworks``; CI runs
it as a step of its own).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from ..webhook_server import PATH, SECRET, SLOW_JOB

HERE = Path(__file__).parent
ASGI = {"fastapi", "starlette", "litestar", "django-asgi"}
# Starlette's Mount answers its bare path with a redirect to the path and a slash: the
# delivery URL given to the service ends in "/" (the webhooks page says so).
SLASHED = {"fastapi", "starlette"}
MATRIX = [
    "fastapi",
    "flask",
    pytest.param("starlette", marks=pytest.mark.frameworks),
    pytest.param("litestar", marks=pytest.mark.frameworks),
    pytest.param("django-asgi", marks=pytest.mark.frameworks),
    pytest.param("django-wsgi", marks=pytest.mark.frameworks),
]


class Server:
    """A framework's server process, its port and the record its callbacks write."""

    def __init__(self, framework: str, record: Path) -> None:
        self.framework = framework
        self.path = PATH + "/" if framework in SLASHED else PATH
        self.record = record
        env = {**os.environ, "PYTHONPATH": str(HERE.parents[1])}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.webhook_server", framework, str(record)],
            cwd=HERE.parents[1],
            stdout=subprocess.PIPE,
            env=env,
            text=True,
        )
        assert self.process.stdout is not None
        self.port = int(self.process.stdout.readline())

    def url(self, secret: str = SECRET) -> str:
        return f"http://127.0.0.1:{self.port}{self.path}?key={secret}"

    def lines(self) -> list[dict[str, Any]]:
        if not self.record.exists():
            return []
        return [json.loads(line) for line in self.record.read_text().splitlines()]

    def runs(self, job: int, phase: str = "end") -> int:
        return sum(1 for line in self.lines() if line["job"] == job and line["phase"] == phase)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(10)
        assert self.process.stdout is not None
        self.process.stdout.close()


async def _eventually(check: Any, timeout: float = 20.0) -> None:
    end = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < end, "timed out"
        await asyncio.sleep(0.02)


async def _ready(server: Server) -> None:
    """The server answers (a GET the receiver refuses with 405) once it is up."""
    async with aiohttp.ClientSession() as http:
        end = time.monotonic() + 30
        while True:
            try:
                async with http.get(server.url()) as answer:
                    assert answer.status == 405
                    return
            except aiohttp.ClientConnectionError:
                assert time.monotonic() < end, "the server never answered"
                await asyncio.sleep(0.05)


async def _big_body(server: Server, streamed: bool) -> int:
    """A 5 MiB POST: the answer's status. Streamed (ASGI), the receiver answers before
    the body is sent; a WSGI server reads it all first."""
    size = 5 * 1024 * 1024
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    head = (
        f"POST {server.path}?key={SECRET} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Content-Type: application/json\r\nContent-Length: {size}\r\n\r\n"
    )
    writer.write(head.encode() + (b"x" * (size if not streamed else 1024)))
    await writer.drain()
    status_line = await asyncio.wait_for(reader.readline(), 20)
    writer.close()
    return int(status_line.split()[1])


async def _slow_body(server: Server) -> int:
    """A POST whose body stops after 10 of 100 bytes: the answer's status."""
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    head = (
        f"POST {server.path}?key={SECRET} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n"
    )
    writer.write(head.encode() + b'{"id": 7, ')
    await writer.drain()
    status_line = await asyncio.wait_for(reader.readline(), 20)
    writer.close()
    return int(status_line.split()[1])


@pytest.mark.slow
@pytest.mark.parametrize("framework", MATRIX)
async def test_a_receiver_mounted_in_the_framework_keeps_every_rule(
    framework: str, tmp_path: Path
) -> None:
    server = Server(framework, tmp_path / "record.jsonl")
    try:
        await _ready(server)
        async with aiohttp.ClientSession() as http:
            delivery = {"id": 7, "status": "Processed"}
            async with http.post(server.url(), json=delivery) as answer:
                assert 200 <= answer.status < 300
            await _eventually(lambda: server.runs(7) == 1)

            async with http.post(server.url(), json=delivery) as answer:  # a duplicate
                assert 200 <= answer.status < 300
            async with http.post(server.url(), json={"id": 8, "status": "Errored"}) as answer:
                assert 200 <= answer.status < 300
            await _eventually(lambda: server.runs(8) == 1)
            await asyncio.sleep(0.3)
            assert server.runs(7, "start") == 1

            async with http.post(server.url("wrong"), json=delivery) as answer:
                assert answer.status == 401
            async with http.post(
                server.url(), data=b"{not json", headers={"Content-Type": "application/json"}
            ) as answer:
                assert answer.status == 400
        assert await _big_body(server, framework in ASGI) == 413
        if framework in ASGI:  # a WSGI server reads the body itself before the app runs
            assert await _slow_body(server) == 408
        assert server.runs(9, "start") == 0

        async with aiohttp.ClientSession() as http:
            slow = {"id": SLOW_JOB, "status": "Processed"}
            async with http.post(server.url(), json=slow) as answer:
                assert 200 <= answer.status < 300
        await _eventually(lambda: server.runs(SLOW_JOB, "start") == 1)
        server.process.send_signal(signal.SIGTERM)
        code = await asyncio.to_thread(server.process.wait, 30)
        assert server.runs(SLOW_JOB) == 1, server.lines()  # the callback finished
        # uvicorn raises the signal again once it has shut down gracefully
        assert code in (0, -signal.SIGTERM)
    finally:
        server.stop()
