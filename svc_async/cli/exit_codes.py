"""Exit codes of the command line and the one-line description of each failure."""

from __future__ import annotations

from enum import IntEnum

from ..errors import (
    APIError,
    AuthenticationError,
    FleetStoreError,
    JobWaitTimeout,
    LocalProtocolError,
    NotFoundError,
    PermissionDeniedError,
    ResponseDecodeError,
    SvcError,
    TransportError,
)
from .wording import api_failure, in_flags


class ExitCode(IntEnum):
    """The exit statuses of ``svc-async`` (also listed in ``--help``)."""

    OK = 0
    UNEXPECTED = 1
    USAGE = 2
    AUTH = 3
    NOT_FOUND = 4
    API_ERROR = 5
    NETWORK = 6
    BAD_RESPONSE = 7
    WAIT_TIMEOUT = 8
    INTERRUPTED = 130


class UsageError(Exception):
    """A problem with the command line or the configuration (exit 2)."""


class CommandTimeout(Exception):
    """The whole command outran ``--timeout`` (exit 6)."""


class ReceiverRefused(Exception):
    """A webhook receiver answered a delivery with something other than 2xx.

    Exits as the same answer from the service would: 3 for 401/403, 4 for 404, else 5.
    """

    def __init__(self, status: int, body: str, secret_param: str = "key") -> None:
        text = " ".join(body.split())[:200]
        super().__init__(f"the receiver answered HTTP {status}" + (f": {text}" if text else ""))
        self.status = status
        self.secret_param = secret_param


class DeliveryNotAnswered(Exception):
    """A webhook delivery got no answer: connection refused, reset, timed out (exit 6)."""


def _refusal_code(exc: ReceiverRefused) -> ExitCode:
    if exc.status in (401, 403):
        return ExitCode.AUTH
    return ExitCode.NOT_FOUND if exc.status == 404 else ExitCode.API_ERROR


def exit_code_for(exc: BaseException) -> ExitCode:
    """The exit status that stands for ``exc``."""
    if isinstance(exc, ReceiverRefused):
        return _refusal_code(exc)
    if isinstance(exc, AuthenticationError | PermissionDeniedError):
        return ExitCode.AUTH
    if isinstance(exc, NotFoundError):
        return ExitCode.NOT_FOUND
    if isinstance(exc, JobWaitTimeout):
        return ExitCode.WAIT_TIMEOUT
    if isinstance(exc, LocalProtocolError):  # refused here, before sending: not the network
        return ExitCode.USAGE
    if isinstance(exc, TransportError | CommandTimeout | FleetStoreError | DeliveryNotAnswered):
        return ExitCode.NETWORK
    if isinstance(exc, ResponseDecodeError):
        return ExitCode.BAD_RESPONSE
    if isinstance(exc, SvcError):
        return ExitCode.API_ERROR
    if isinstance(exc, UsageError | ValueError):
        return ExitCode.USAGE
    if isinstance(exc, KeyboardInterrupt):
        return ExitCode.INTERRUPTED
    return ExitCode.UNEXPECTED


def describe(exc: BaseException) -> str:
    """What went wrong in the CLI's words and, where it helps, what to check.

    One line, except a 400's validation issues, listed one per line under it.
    """
    raw = str(exc)
    text = " ".join(raw.split()) or type(exc).__name__
    if isinstance(exc, AuthenticationError):
        return f"{text} (check --token / SVC_API_TOKEN or the API key)"
    if isinstance(exc, PermissionDeniedError):
        return f"{text} (this account may not access it)"
    if isinstance(exc, LocalProtocolError):
        hint = "nothing was sent: check the options and SVC_* variables for a stray newline"
        return f"{text} ({hint})"
    if isinstance(exc, TransportError | DeliveryNotAnswered):
        return f"network: {text}"
    if isinstance(exc, ReceiverRefused):
        return _refusal(exc, text)
    if isinstance(exc, FleetStoreError):
        return f"{text} (check --fleet / SVC_FLEET_URL)"
    if isinstance(exc, ResponseDecodeError):
        return f"bad response: {text}"
    if isinstance(exc, APIError):
        return api_failure(exc)
    if isinstance(exc, ValueError) and not isinstance(exc, SvcError):
        return in_flags(text)
    if isinstance(exc, SvcError | UsageError | CommandTimeout):
        return text
    return f"unexpected {type(exc).__name__}: {text}"


def _refusal(exc: ReceiverRefused, text: str) -> str:
    """A receiver's refusal, with what to check for the statuses that have a usual cause."""
    if exc.status == 401:
        where = f"--secret / SVC_WEBHOOK_SECRET and --secret-param ({exc.secret_param})"
        return f"{text} (check {where})"
    if exc.status == 404:
        return f"{text} (check the path in --to)"
    return text
