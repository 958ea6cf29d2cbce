"""Testing tools: ``FakeService``, an in-memory Licence Verification Service.

``FakeService`` implements the whole interface (auth, organisations, seasons, events,
entries, verification jobs with background processing, webhooks, rate limits, signed
file links) on plain JSON, independently of the SDK's models, so it can check the SDK
end to end. Run it on a loopback port:

```python
async with FakeService(seed=1) as fake, fake.serve() as url:
    async with Client(url, token=FakeService.DEFAULT_TOKEN) as svc:
        ...
```

or in-process, without sockets:

```python
fake = FakeService()
async with Client("http://fake.invalid", token=fake.DEFAULT_TOKEN,
                  transport=fake.transport()) as svc:
    ...
```

Time is on ``fake.clock`` (wall time plus ``advance``; ``FakeClock(start=...)`` freezes
it; ``FakeService(clock=VirtualClock())`` shares a client's virtual time), faults come
from ``FaultConfig``, and everything received is in ``fake.requests``.
It speaks today's service (TYPES.md) unless ``FakeService(legacy=True)``; signed links
live on a separate files origin (``fake.files_url``).

The house: ``service`` (the object, running it) with ``builders``, ``drivers``,
``observe`` and ``knobs`` as its mixins; ``core`` (sans-I/O request handling) over
``endpoints``, ``rules`` (what requests are accepted), ``access`` (tokens, rate limit)
and ``wire`` (HTTP values); the data in ``state``, ``seed``, ``today`` (today's optional
shapes), ``licensing``, ``jobs``, ``lifecycle`` and ``render``; ``files`` (storage),
``webhooks``, ``faults``, ``clock``, ``flavour`` and ``app`` (the two adapters).
"""

from .clock import FakeClock, VirtualClock, format_timestamp, parse_timestamp
from .faults import FaultConfig
from .files import FILES_ORIGIN
from .flavour import CURRENT_STATUSES, LEGACY_STATUSES
from .handlers import ROUTE_TEMPLATES, Outcome, RawRequest, RecordedRequest
from .jobs import AUDIO_EXTENSIONS
from .rules import LICENSE_SOURCES
from .seed import SCENARIOS
from .service import FakeService
from .state import Account
from .webhooks import WebhookDelivery

__all__ = [
    "AUDIO_EXTENSIONS",
    "CURRENT_STATUSES",
    "FILES_ORIGIN",
    "LEGACY_STATUSES",
    "LICENSE_SOURCES",
    "ROUTE_TEMPLATES",
    "SCENARIOS",
    "Account",
    "FakeClock",
    "FakeService",
    "FaultConfig",
    "Outcome",
    "RawRequest",
    "RecordedRequest",
    "VirtualClock",
    "WebhookDelivery",
    "format_timestamp",
    "parse_timestamp",
]
