"""Webhook deliveries: the receiver, its payloads and their parsers.

``WebhookReceiver`` answers the service's deliveries; ``JobStatusUpdate``,
``EntryUpdate`` and ``OutputFileUpdate`` are what its callbacks get.
"""

from .receiver import (
    DEFAULT_CALLBACK_RETRY,
    DEFAULT_PATH,
    MAX_BODY,
    Delivery,
    EntryCallback,
    EntryUpdate,
    JobStatusUpdate,
    JobSubscription,
    OutputFileCallback,
    OutputFileUpdate,
    ReceiverStats,
    RedactedAccessLogger,
    StatusCallback,
    Verifier,
    WebhookPayloadError,
    WebhookReceiver,
    feed_sync_state,
    parse_delivery,
    parse_entry_update,
    parse_output_file,
    parse_status_update,
)

__all__ = [
    "DEFAULT_CALLBACK_RETRY",
    "DEFAULT_PATH",
    "MAX_BODY",
    "Delivery",
    "EntryCallback",
    "EntryUpdate",
    "JobStatusUpdate",
    "JobSubscription",
    "OutputFileCallback",
    "OutputFileUpdate",
    "ReceiverStats",
    "RedactedAccessLogger",
    "StatusCallback",
    "Verifier",
    "WebhookPayloadError",
    "WebhookReceiver",
    "feed_sync_state",
    "parse_delivery",
    "parse_entry_update",
    "parse_output_file",
    "parse_status_update",
]
