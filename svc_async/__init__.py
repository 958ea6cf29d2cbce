"""svc_async: the asyncio SDK for the Licence Verification Service."""

import logging as _logging
import os as _os
import sys as _sys
import warnings as _warnings
from typing import TYPE_CHECKING, Any, TextIO

from ._core.loop_thread import LoopThread
from ._pipeline.answers import Reply
from ._pipeline.ratelimit import Pacer
from ._transports.aiohttp import AiohttpTransport
from ._transports.base import Request, Response, Timeout, Transport, json_response
from ._transports.mock import MockTransport
from ._version import __version__
from .auth import ApiKeyAuth, Auth, BearerAuth, HeaderAuth
from .client import Client
from .clock import Clock, SystemClock
from .errors import (
    AmbiguousCreateError,
    APIError,
    AuthenticationError,
    BadRequestError,
    ClientClosedError,
    ConflictError,
    ConnectError,
    ConnectionLostError,
    ConnectTimeout,
    JobWaitTimeout,
    LocalProtocolError,
    NotFoundError,
    PermissionDeniedError,
    ProxyError,
    RateLimitError,
    RedirectError,
    RequestTimeout,
    ResponseDecodeError,
    ResponseTooLargeError,
    ServerError,
    SignedURLExpired,
    SvcError,
    TransportError,
    UnprocessableEntityError,
    ValidationIssue,
    WebhookPayloadError,
    WebhookVerificationError,
    WrongEventLoopError,
)
from .models import (
    CURRENT_JOB_STATUSES,
    FINISHED_CURRENT_JOB_STATUSES,
    FINISHED_JOB_STATUSES,
    LEGACY_JOB_STATUSES,
    BespokeAgreement,
    BespokeRightsholder,
    CheckResult,
    Composer,
    Entry,
    EntryField,
    Event,
    ExternalLicense,
    ExternalLicenseFile,
    GrantType,
    JobRequest,
    JobSearchResults,
    JobStatus,
    JobType,
    LicenseChecks,
    LicenseData,
    LicenseDetails,
    LicensedUses,
    LicenseRight,
    LicenseSource,
    LicenseStatus,
    Logo,
    ManualStatus,
    ManualStatusValue,
    Organisation,
    OutputFile,
    OutputFileOperation,
    OutputFileRequest,
    OutputFileStatus,
    OutputFileType,
    PublicDomainProof,
    RateLimit,
    RecordingStatus,
    Season,
    SignupField,
    SignupFieldType,
    Song,
    SoundRecording,
    SvcLicense,
    VerificationJob,
)
from .retry import RetryBudget, RetryPolicy
from .types import AttemptTimeoutArg, CallOptions, Progress, TimeoutArg

# A library leaves output to the application: without this, Python's last-resort
# handler would print the SDK's warnings to stderr of programs that configured nothing.
_logging.getLogger(__name__).addHandler(_logging.NullHandler())

_SVC_LOG_LEVELS = {"debug": _logging.DEBUG, "info": _logging.INFO}


class _SvcLogHandler(_logging.StreamHandler[TextIO]):
    """The stderr handler ``SVC_LOG`` asks for, marked so it is never added twice."""

    svc_log = True


def _log_as_svc_log_says() -> None:
    """``SVC_LOG=debug|info``: the SDK's log on stderr at that level, nothing else.

    The one change to logging the package makes, and only when asked by that variable
    (read here, once, at import): one handler on the ``svc_async`` logger (not the
    root), and that logger's level lowered to it if needed. Another value warns once
    and is ignored.
    """
    value = _os.environ.get("SVC_LOG", "").strip()
    if not value:
        return
    level = _SVC_LOG_LEVELS.get(value.lower())
    if level is None:
        _warnings.warn(
            f"SVC_LOG={value!r} is ignored: use debug or info", RuntimeWarning, stacklevel=2
        )
        return
    logger = _logging.getLogger(__name__)
    if any(getattr(h, "svc_log", False) is True for h in logger.handlers):
        return  # already there (the package imported again, e.g. reloaded)
    handler = _SvcLogHandler(_sys.stderr)
    handler.setLevel(level)
    handler.setFormatter(_logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logger.addHandler(handler)
    if logger.level == _logging.NOTSET or logger.level > level:
        logger.setLevel(level)


_log_as_svc_log_says()

if TYPE_CHECKING:
    from ._transports.httpx import HttpxTransport
    from .converter import to_dict
    from .resources.bulk import EntryBatch
    from .resources.downloads import DownloadResult
    from .resources.polling import PollPolicy
    from .resources.sync import EventCursor, SyncResult, SyncState
    from .webhooks import EntryUpdate, JobStatusUpdate, OutputFileUpdate, WebhookReceiver

_LAZY = {
    "to_dict": "converter",
    "DownloadResult": "resources.downloads",
    "EntryBatch": "resources.bulk",
    "PollPolicy": "resources.polling",
    "EventCursor": "resources.sync",
    "SyncResult": "resources.sync",
    "SyncState": "resources.sync",
    "JobStatusUpdate": "webhooks",
    "EntryUpdate": "webhooks",
    "OutputFileUpdate": "webhooks",
    "WebhookReceiver": "webhooks",
    "HttpxTransport": "_transports.httpx",  # imports httpx: the ``httpx`` extra
}


def __getattr__(name: str) -> Any:
    """Load the poller, bulk, sync, webhook, download, converter and httpx transport names
    on first use."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'svc_async' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "CURRENT_JOB_STATUSES",
    "FINISHED_CURRENT_JOB_STATUSES",
    "FINISHED_JOB_STATUSES",
    "LEGACY_JOB_STATUSES",
    "APIError",
    "AiohttpTransport",
    "AmbiguousCreateError",
    "ApiKeyAuth",
    "AttemptTimeoutArg",
    "Auth",
    "AuthenticationError",
    "BadRequestError",
    "BearerAuth",
    "BespokeAgreement",
    "BespokeRightsholder",
    "CallOptions",
    "CheckResult",
    "Client",
    "ClientClosedError",
    "Clock",
    "Composer",
    "ConflictError",
    "ConnectError",
    "ConnectTimeout",
    "ConnectionLostError",
    "DownloadResult",
    "Entry",
    "EntryBatch",
    "EntryField",
    "EntryUpdate",
    "Event",
    "EventCursor",
    "ExternalLicense",
    "ExternalLicenseFile",
    "GrantType",
    "HeaderAuth",
    "HttpxTransport",
    "JobRequest",
    "JobSearchResults",
    "JobStatus",
    "JobStatusUpdate",
    "JobType",
    "JobWaitTimeout",
    "LicenseChecks",
    "LicenseData",
    "LicenseDetails",
    "LicenseRight",
    "LicenseSource",
    "LicenseStatus",
    "LicensedUses",
    "LocalProtocolError",
    "Logo",
    "LoopThread",
    "ManualStatus",
    "ManualStatusValue",
    "MockTransport",
    "NotFoundError",
    "Organisation",
    "OutputFile",
    "OutputFileOperation",
    "OutputFileRequest",
    "OutputFileStatus",
    "OutputFileType",
    "OutputFileUpdate",
    "Pacer",
    "PermissionDeniedError",
    "PollPolicy",
    "Progress",
    "ProxyError",
    "PublicDomainProof",
    "RateLimit",
    "RateLimitError",
    "RecordingStatus",
    "RedirectError",
    "Reply",
    "Request",
    "RequestTimeout",
    "Response",
    "ResponseDecodeError",
    "ResponseTooLargeError",
    "RetryBudget",
    "RetryPolicy",
    "Season",
    "ServerError",
    "SignedURLExpired",
    "SignupField",
    "SignupFieldType",
    "Song",
    "SoundRecording",
    "SvcError",
    "SvcLicense",
    "SyncResult",
    "SyncState",
    "SystemClock",
    "Timeout",
    "TimeoutArg",
    "Transport",
    "TransportError",
    "UnprocessableEntityError",
    "ValidationIssue",
    "VerificationJob",
    "WebhookPayloadError",
    "WebhookReceiver",
    "WebhookVerificationError",
    "WrongEventLoopError",
    "__version__",
    "json_response",
    "to_dict",
]
