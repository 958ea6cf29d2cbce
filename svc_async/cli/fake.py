"""``svc-async fake``: serve a seeded FakeService on 127.0.0.1 until Ctrl-C.

Lets a person try the command line (or their own code) without writing Python: the
fake's address and token are printed as ``export`` lines to paste into another shell.
SIGINT or SIGTERM stops it with one line on stderr and exit status 0. With
``--webhook-url`` the fake posts its deliveries (a job's final status, a submission) to
the user's own receiver, the secret in the URL's query as the service puts it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from typing import TextIO

from ..redact import redact_url
from ..testing import FakeService, FaultConfig
from .args import PROG
from .exit_codes import ExitCode, UsageError
from .webhooks import delivery_url


def fault_config(args: argparse.Namespace) -> FaultConfig | None:
    """The ``FaultConfig`` the fault flags ask for, or None when none is set."""
    options = {
        "latency": args.latency,
        "latency_spike": args.latency_spike,
        "spike_seconds": args.spike_seconds,
        "error_5xx": args.error_rate,
        "reset": args.reset_rate,
        "malformed_json": args.malformed_rate,
        "burst_429": args.burst_429_rate,
        "burst_retry_after": args.burst_retry_after,
    }
    defaults = FaultConfig()
    if all(getattr(defaults, name) == value for name, value in options.items()):
        return None
    return FaultConfig(**options)


def webhook_target(args: argparse.Namespace) -> str | None:
    """Where the fake posts its deliveries: ``--webhook-url`` with the secret as ``?key=``
    (``--webhook-secret``, else ``SVC_WEBHOOK_SECRET`` when the URL has no key)."""
    if args.webhook_url is None:
        if args.webhook_secret is not None:
            raise UsageError("--webhook-secret needs --webhook-url")
        return None
    return delivery_url(args.webhook_url, args.webhook_secret, "key", "--webhook-url")


def make_fake(args: argparse.Namespace) -> FakeService:
    """A FakeService configured from the ``fake`` command's flags."""
    rate_limit: tuple[int, float] | None = args.rate_limit
    return FakeService(
        webhook_url=webhook_target(args),
        seed=args.seed,
        processing_delay=args.job_delay,
        rate_limit=rate_limit,
        search_lag=args.search_lag,
        faults=fault_config(args),
        legacy=args.legacy,
    )


def export_lines(url: str) -> list[str]:
    """The shell lines that point the CLI (and ``Client.from_env``-style code) at ``url``."""
    return [
        f"export SVC_BASE_URL={url}",
        f"export SVC_API_TOKEN={FakeService.DEFAULT_TOKEN}",
        f"export SVC_ACCOUNT_URL={url}",
    ]


async def _serve(args: argparse.Namespace, out: TextIO, err: TextIO) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signum, stop.set)
    fake = make_fake(args)
    async with fake.serve("127.0.0.1", args.port) as url:
        print("\n".join(export_lines(url)), file=out, flush=True)
        jobs = f"jobs take {args.job_delay:g}s"
        if args.legacy:
            jobs = f"legacy shapes, {jobs}"
        rate = args.rate_limit
        limit = "no rate limit" if rate is None else f"{rate[0]} requests per {rate[1]:g}s"
        print(
            f"{PROG} fake: serving seed {args.seed} on {url} ({jobs}, {limit});"
            " paste the lines above into another shell; Ctrl-C stops it",
            file=err,
            flush=True,
        )
        if fake.webhook_url is not None:
            target = redact_url(fake.webhook_url)
            print(f"{PROG} fake: posting deliveries to {target}", file=err, flush=True)
        await stop.wait()


def run_fake(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Serve until SIGINT/SIGTERM; print one line on stopping and return 0."""
    stdout = out if out is not None else sys.stdout
    stderr = err if err is not None else sys.stderr
    try:
        asyncio.run(_serve(args, stdout, stderr))
    except UsageError as exc:
        print(f"{PROG}: error: {exc}", file=stderr)
        return int(ExitCode.USAGE)
    except KeyboardInterrupt:  # signal handlers unavailable (e.g. not the main thread)
        pass
    except OSError as exc:
        print(f"{PROG} fake: error: cannot listen on port {args.port}: {exc.strerror}", file=stderr)
        return int(ExitCode.NETWORK)
    print(f"{PROG} fake: stopped", file=stderr, flush=True)
    return int(ExitCode.OK)
