"""Testing tools: ``FakeService``, an in-memory Licence Verification Service.

``FakeService`` implements the whole interface (auth, organisations, seasons, events,
entries, verification jobs with background processing, webhooks, rate limits, signed
file links) on plain JSON, independently of the SDK's models, so it can check the SDK
end to end. Run it on a loopback port::

    async with FakeService(seed=1).serve() as url:
        async with Client(url, token=FakeService.DEFAULT_TOKEN) as svc: ...

or in-process, without sockets::

    fake = FakeService()
    async with Client("http://fake.invalid", token=fake.DEFAULT_TOKEN,
                      transport=fake.transport()) as svc: ...

Time is on ``fake.clock`` (wall time plus ``advance``; ``FakeClock(start=...)`` freezes
it), faults come from ``FaultConfig``, and everything received is in ``fake.requests``.
"""

from .clock import FakeClock, format_timestamp, parse_timestamp
from .faults import FaultConfig
from .handlers import ROUTE_TEMPLATES, Outcome, RawRequest, RecordedRequest
from .jobs import AUDIO_EXTENSIONS
from .seed import SCENARIOS
from .service import FakeService
from .state import Account
from .webhooks import WebhookDelivery

__all__ = [
    "AUDIO_EXTENSIONS",
    "ROUTE_TEMPLATES",
    "SCENARIOS",
    "Account",
    "FakeClock",
    "FakeService",
    "FaultConfig",
    "Outcome",
    "RawRequest",
    "RecordedRequest",
    "WebhookDelivery",
    "format_timestamp",
    "parse_timestamp",
]
