"""The ``svc-async`` command line: parse, run one command, print, map errors to exit codes.

``main(argv) -> int`` is the console script (``svc-async``), ``python -m svc_async`` and
``python -m svc_async.cli``. The rooms: ``args`` (the grammar), ``commands`` (what each
command does with a ``Client``), ``exit_codes`` (failures to exit statuses and one-line
messages), ``views`` (models to tables), ``render``/``rich_render``/``terminal``
(drawing them), ``demo`` (the guided tour), ``fleet`` (``fleet status``: a fleet's
Redis, read without a ``Client``) and ``webhooks`` (``webhooks send``: deliveries POSTed
to a receiver as the service sends them). The SDK never imports this package.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import traceback
from collections.abc import Mapping, Sequence
from typing import NoReturn

import orjson

from ..auth import ApiKeyAuth
from ..client import Client
from ..errors import JobWaitTimeout
from ..redact import redact_text
from .args import PROG, build_parser
from .commands import COMMANDS, Outcome, Ui, Unfinished, check_args, job_outcome
from .exit_codes import CommandTimeout, ExitCode, UsageError, describe, exit_code_for
from .render import Styled
from .terminal import make_renderer, progress_renderer

__all__ = ["ExitCode", "UsageError", "exit_code_for", "main"]


def _secrets(args: argparse.Namespace) -> tuple[str, ...]:
    values = (
        getattr(args, "token", None),
        getattr(args, "api_key_secret", None),
        getattr(args, "webhook_secret", None),
        os.environ.get("SVC_API_TOKEN"),
        os.environ.get("SVC_API_KEY_SECRET"),
        os.environ.get("SVC_WEBHOOK_SECRET"),
    )
    return tuple(v for v in values if v)


def _fail(exc: BaseException, args: argparse.Namespace) -> int:
    code = exit_code_for(exc)
    message = redact_text(describe(exc), _secrets(args))
    print(f"{PROG}: error: {message}", file=sys.stderr)
    if code == ExitCode.UNEXPECTED:
        if getattr(args, "verbose", 0):
            lines = traceback.format_exception(exc)
            print(redact_text("".join(lines), _secrets(args)), file=sys.stderr, end="")
        else:
            print(f"{PROG}: run with -v for a traceback; please report it", file=sys.stderr)
    return int(code)


def _api_key(args: argparse.Namespace, env: Mapping[str, str]) -> ApiKeyAuth:
    """The API key of ``--api-key-id``/``--api-key-secret``, SVC_* filling the other half."""
    if args.token:
        raise UsageError("pass either --token or an API key, not both")
    key_id = args.api_key_id or env.get("SVC_API_KEY_ID")
    secret = args.api_key_secret or env.get("SVC_API_KEY_SECRET")
    if not (key_id and secret):
        raise UsageError(
            "an API key needs --api-key-id and --api-key-secret"
            " (or SVC_API_KEY_ID and SVC_API_KEY_SECRET)"
        )
    return ApiKeyAuth(key_id, secret)


def _require_credentials(args: argparse.Namespace, env: Mapping[str, str]) -> None:
    """Refuse to start without a token or an API key, in the flags or the environment."""
    if not (
        args.token
        or env.get("SVC_API_TOKEN")
        or (env.get("SVC_API_KEY_ID") and env.get("SVC_API_KEY_SECRET"))
    ):
        raise UsageError(
            "no credentials: pass --token or --api-key-id/--api-key-secret,"
            " or set SVC_API_TOKEN (or SVC_API_KEY_ID and SVC_API_KEY_SECRET)"
        )


def make_client(args: argparse.Namespace) -> Client:
    """A Client from the global options, the SVC_* variables filling what is not given."""
    env = os.environ
    if not (args.base_url or env.get("SVC_BASE_URL")):
        raise UsageError("no service URL: pass --base-url or set SVC_BASE_URL")
    auth = None
    if args.api_key_id or args.api_key_secret:
        auth = _api_key(args, env)
    else:
        _require_credentials(args, env)
    base_url = args.base_url
    if args.account_url and not base_url:
        # The Client never mixes a host passed in code with one from the environment;
        # here each flag falls back to its own variable, as --help says.
        base_url = env.get("SVC_BASE_URL")
    # --timeout is the whole command's deadline (see _run), not a per-request limit.
    return Client(base_url, token=args.token, auth=auth, account_url=args.account_url)


async def _run(args: argparse.Namespace, ui: Ui) -> Outcome:
    """Run the command under ``--timeout``; a job it saw is kept for printing on failure."""
    if args.command == "fleet":  # no Client: it reads the fleet's Redis
        from .fleet import fleet_command

        return await fleet_command(args, ui)
    if args.command == "webhooks":  # no Client: it plays the service's side
        from .webhooks import send_command

        return await send_command(args, ui)
    command = COMMANDS[(args.command, getattr(args, "jobs_command", None))]
    async with make_client(args) as svc:
        deadline = asyncio.timeout(args.timeout)
        try:
            async with deadline:
                return await command(svc, args, ui)
        except JobWaitTimeout as exc:
            flag = "--wait-timeout" if args.jobs_command == "create" else "--timeout"
            named = JobWaitTimeout(f"{flag}: {exc}", job=exc.job)
            job = exc.job or (ui.jobs[-1] if ui.jobs else None)
            if job is None:
                raise named from exc
            raise Unfinished(job_outcome(job), named) from exc
        except TimeoutError as exc:
            if not deadline.expired():
                raise
            text = f"--timeout: the command did not finish within {args.timeout:g}s"
            if args.command == "jobs" and args.jobs_command == "create" and not ui.jobs:
                text += " (the job may have been created: look for it with jobs search)"
            failure = CommandTimeout(text)
            if ui.jobs:
                raise Unfinished(job_outcome(ui.jobs[-1]), failure) from exc
            raise failure from exc


def _print(outcome: Outcome, table: bool) -> None:
    if table:
        outcome.draw(make_renderer(sys.stdout))
    else:
        text = orjson.dumps(outcome.data, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS)
        sys.stdout.write(text.decode() + "\n")
    sys.stdout.flush()


def _quiet_broken_pipe() -> None:
    """After the reader of stdout went away: point stdout at /dev/null so exit is quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


class _StatusLines(logging.Handler):
    """Shows the SDK's INFO records (pacing holds, retries) as status lines on a terminal."""

    def __init__(self, ui: Ui) -> None:
        super().__init__(logging.INFO)
        self._ui = ui

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = redact_text(record.getMessage(), ())
            self._ui.progress.line(Styled(f"{PROG}: {text}", "yellow"))
        except Exception:  # a status line must never break the command
            self.handleError(record)


def _configure_logging(verbose: int, ui: Ui | None = None) -> logging.Handler | None:
    """``-v``: log lines on stderr; else on a terminal, INFO records as status lines."""
    logger = logging.getLogger("svc_async")
    if not verbose:
        if ui is None or not ui.progress.is_terminal:
            return None
        handler: logging.Handler = _StatusLines(ui)
        logger.addHandler(handler)
        if logger.getEffectiveLevel() > logging.INFO:
            logger.setLevel(logging.INFO)
        return handler
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(f"{PROG}: %(levelname)s %(name)s: %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG if verbose > 1 else logging.INFO)
    return handler


def _parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    args = parser.parse_args(argv)
    command_parser: argparse.ArgumentParser = getattr(args, "command_parser", parser)

    def error(message: str) -> NoReturn:
        command_parser.error(message)

    check_args(args, error)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); return the exit code.

    Ctrl-C at any point is one line on stderr and exit status 130.
    """
    try:
        return _main(argv)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return int(ExitCode.INTERRUPTED)


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    try:
        args = _parse(parser, argv)
    except SystemExit as exc:  # --help, --version, or a usage error (already printed)
        return exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    if args.command == "fake":
        from .fake import run_fake

        return run_fake(args)
    if args.command == "demo":
        from .demo import run_demo

        return run_demo(delay=args.delay, seed=args.seed, color=not args.no_color, plain=args.plain)
    ui = Ui(progress=progress_renderer(sys.stderr))
    handler = _configure_logging(args.verbose, ui)
    try:
        outcome = asyncio.run(_run(args, ui))
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return int(ExitCode.INTERRUPTED)
    except Unfinished as unfinished:
        _show(unfinished.outcome, args.table)
        code = _fail(unfinished.cause, args)
        return int(ExitCode.WAIT_TIMEOUT) if code == ExitCode.NETWORK else code
    except Exception as exc:
        return _fail(exc, args)
    finally:
        if handler is not None:
            logging.getLogger("svc_async").removeHandler(handler)
    _show(outcome, args.table)
    return int(ExitCode.OK)


def _show(outcome: Outcome, table: bool) -> None:
    try:
        _print(outcome, table)
    except BrokenPipeError:
        _quiet_broken_pipe()
