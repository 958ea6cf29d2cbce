"""svc_async: the asyncio SDK for the Licence Verification Service."""

from typing import TYPE_CHECKING, Any

from ._version import __version__
from .auth import ApiKeyAuth, Auth, BearerAuth, HeaderAuth
from .client import Client
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
    NotFoundError,
    PermissionDeniedError,
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
    WebhookVerificationError,
    WrongEventLoopError,
)
from .models import (
    CheckResult,
    Entry,
    EntryField,
    Event,
    ExternalLicense,
    ExternalLicenseFile,
    JobRequest,
    JobSearchResults,
    JobStatus,
    LicenseChecks,
    LicenseData,
    LicenseDetails,
    LicenseRight,
    LicenseSource,
    LicenseStatus,
    Logo,
    Organisation,
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
from .ratelimit import Pacer
from .retry import RetryBudget, RetryPolicy
from .transport import (
    AiohttpTransport,
    MockTransport,
    Request,
    Response,
    Timeout,
    Transport,
    json_response,
)

if TYPE_CHECKING:
    from .bulk import EntryBatch
    from .polling import PollPolicy
    from .sync import EventCursor, SyncResult, SyncState
    from .webhooks import JobStatusUpdate, WebhookPayloadError, WebhookReceiver

_LAZY = {
    "EntryBatch": "bulk",
    "PollPolicy": "polling",
    "EventCursor": "sync",
    "SyncResult": "sync",
    "SyncState": "sync",
    "JobStatusUpdate": "webhooks",
    "WebhookPayloadError": "webhooks",
    "WebhookReceiver": "webhooks",
}


def __getattr__(name: str) -> Any:
    """Load the poller, bulk, sync and webhook names on first use (import time)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'svc_async' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "APIError",
    "AiohttpTransport",
    "AmbiguousCreateError",
    "ApiKeyAuth",
    "Auth",
    "AuthenticationError",
    "BadRequestError",
    "BearerAuth",
    "CheckResult",
    "Client",
    "ClientClosedError",
    "ConflictError",
    "ConnectError",
    "ConnectTimeout",
    "ConnectionLostError",
    "Entry",
    "EntryBatch",
    "EntryField",
    "Event",
    "EventCursor",
    "ExternalLicense",
    "ExternalLicenseFile",
    "HeaderAuth",
    "JobRequest",
    "JobSearchResults",
    "JobStatus",
    "JobStatusUpdate",
    "JobWaitTimeout",
    "LicenseChecks",
    "LicenseData",
    "LicenseDetails",
    "LicenseRight",
    "LicenseSource",
    "LicenseStatus",
    "Logo",
    "MockTransport",
    "NotFoundError",
    "Organisation",
    "Pacer",
    "PermissionDeniedError",
    "PollPolicy",
    "RateLimit",
    "RateLimitError",
    "RecordingStatus",
    "RedirectError",
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
    "Timeout",
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
]
