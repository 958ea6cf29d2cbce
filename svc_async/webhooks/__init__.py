"""Webhook deliveries: the receiver, its payloads and their parsers.

``WebhookReceiver`` answers the service's deliveries (``await receiver.receive(body,
query, headers)``, or mounted in aiohttp); ``JobStatusUpdate``, ``EntryUpdate`` and
``OutputFileUpdate`` are what its callbacks get. Inside: ``core`` (the rules, no I/O),
``delivery`` (the memory backend and the callback runs), ``redis`` (the fleet's
backend), ``aiohttp`` (the adapter), ``waiters`` and ``wake`` (job wake-ups).
"""

from .aiohttp import RedactedAccessLogger
from .core import DEFAULT_PATH, MAX_BODY, Answer
from .delivery import ReceiverStats
from .feed import feed_sync_state
from .payloads import (
    Delivery,
    EntryCallback,
    EntryUpdate,
    JobStatusUpdate,
    OutputFileCallback,
    OutputFileUpdate,
    StatusCallback,
    parse_delivery,
    parse_entry_update,
    parse_output_file,
    parse_status_update,
)
from .receiver import DEFAULT_CALLBACK_RETRY, Verifier, WebhookPayloadError, WebhookReceiver
from .waiters import JobSubscription, WakeSource

__all__ = [
    "DEFAULT_CALLBACK_RETRY",
    "DEFAULT_PATH",
    "MAX_BODY",
    "Answer",
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
    "WakeSource",
    "WebhookPayloadError",
    "WebhookReceiver",
    "feed_sync_state",
    "parse_delivery",
    "parse_entry_update",
    "parse_output_file",
    "parse_status_update",
]
