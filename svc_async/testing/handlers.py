"""Former home of the core and endpoints, kept so old imports keep working.

The core lives in ``core``, the endpoints in ``endpoints``, the HTTP values in ``wire``.
"""

from .core import ROUTE_TEMPLATES, ServiceCore, Settings
from .wire import Outcome, Pending, RawRequest, RecordedRequest, error_body

__all__ = [
    "ROUTE_TEMPLATES",
    "Outcome",
    "Pending",
    "RawRequest",
    "RecordedRequest",
    "ServiceCore",
    "Settings",
    "error_body",
]
