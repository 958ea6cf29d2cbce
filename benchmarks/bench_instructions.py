"""Instructions per small call, counted by valgrind: the SDK against the typed ceiling.

Timings on a shared 2-core machine move by several percent from run to run; instruction
counts do not. Each candidate of ``bench_throughput``'s small body (``jobs.get`` of one
VerificationJob at concurrency 32, against its canned asyncio server in another process)
runs in a fresh client process under ``valgrind --tool=callgrind``, once with no measured
calls and once with ``CALLS``; the difference divided by ``CALLS`` is the client's
instructions per call, start-up and warm-up cancelled out.

Figures: ``aiohttp+structure`` instructions / ``sdk`` instructions (1.0 = the ceiling,
the same direction as the throughput ratio) and the SDK's own instructions per call.
Instructions are not time: the SDK's extra Python runs at a lower rate than aiohttp's
code on a busy core, so the time ratio is lower than this one. Needs ``valgrind``;
without it, or with ``--quick`` (each run costs about 20 s), it records why it did not run.

    python benchmarks/bench_instructions.py [--quick]
"""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import _harness as h
import bench_throughput as bt

CALLS = 1000
WARMUP = 300
CANDIDATES = ("aiohttp+structure", "sdk")


async def _client(name: str, calls: int, base: str) -> None:
    """The measured process: warm up, then ``calls`` calls of ``name`` at concurrency 32."""
    clients = await bt.Clients(base).__aenter__()
    try:
        call = clients.small()[name]
        await h.run_calls(call, WARMUP, 32)
        if calls:
            await h.run_calls(call, calls, 32)
    finally:
        await clients.__aexit__(None, None, None)


def _instructions(name: str, calls: int, base: str) -> int:
    """Instructions the whole client process ran (callgrind's ``I refs``)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        proc = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={out}",
                sys.executable,
                __file__,
                "--client",
                name,
                str(calls),
                base,
            ],
            capture_output=True,
            text=True,
            timeout=600,
        )
    if proc.returncode != 0:
        raise RuntimeError(f"{name} under valgrind failed:\n{proc.stderr[-2000:]}")
    found = re.search(r"I\s+refs:\s+([\d,]+)", proc.stderr)
    if found is None:
        raise RuntimeError(f"no instruction count in valgrind's output:\n{proc.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def main() -> None:
    """Count every candidate; write results/instructions.json."""
    if sys.argv[1:2] == ["--client"]:
        name, calls, base = sys.argv[2], int(sys.argv[3]), sys.argv[4]
        asyncio.run(_client(name, calls, base))
        return
    reason = None
    if shutil.which("valgrind") is None:
        reason = "valgrind not found"
    elif h.is_quick():
        reason = "full runs only (about 20 s per valgrind run)"
    if reason is not None:
        h.write_result("instructions", {"skipped": reason, "summary": []})
        return
    per_call: dict[str, float] = {}
    with h.ServerProcess(bt.__file__, "--serve-canned") as base:
        for name in CANDIDATES:
            idle = _instructions(name, 0, base)
            busy = _instructions(name, CALLS, base)
            per_call[name] = (busy - idle) / CALLS
            print(f"  {name}: {per_call[name]:,.0f} instructions per call", flush=True)
    ceiling, sdk = per_call["aiohttp+structure"], per_call["sdk"]
    summary: list[dict[str, Any]] = [
        h.figure(
            "small c=32: (aiohttp+structure) / sdk, instructions per call",
            ceiling / sdk,
            target=">= 0.9",
            met=ceiling / sdk >= 0.9,
        ),
        h.figure("small c=32: sdk instructions over the ceiling", (sdk - ceiling) / 1000, unit="k"),
    ]
    h.write_result(
        "instructions",
        {
            "server": "canned asyncio server in a separate process on 127.0.0.1",
            "calls": CALLS,
            "instructions_per_call": {k: round(v) for k, v in per_call.items()},
            "summary": summary,
        },
    )


if __name__ == "__main__":
    main()
