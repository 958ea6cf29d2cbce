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


def exit_code_for(exc: BaseException) -> ExitCode:
    """The exit status that stands for ``exc``."""
    if isinstance(exc, AuthenticationError | PermissionDeniedError):
        return ExitCode.AUTH
    if isinstance(exc, NotFoundError):
        return ExitCode.NOT_FOUND
    if isinstance(exc, JobWaitTimeout):
        return ExitCode.WAIT_TIMEOUT
    if isinstance(exc, LocalProtocolError):  # refused here, before sending: not the network
        return ExitCode.USAGE
    if isinstance(exc, TransportError | CommandTimeout | FleetStoreError):
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
    if isinstance(exc, TransportError):
        return f"network: {text}"
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
