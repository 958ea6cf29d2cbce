"""Testing tools: ``FakeService``, an in-memory Licence Verification Service.

``FakeService`` implements the whole interface (auth, organisations, seasons, events,
entries, verification jobs with background processing, webhooks, rate limits, signed
file links) on plain JSON, independently of the SDK's models, so it can check the SDK
end to end. Run it on a loopback port:

```python
from svc_async import Client
from svc_async.testing import FakeService

async with FakeService(seed=1) as fake, fake.serve() as url:
    async with Client(url, token=FakeService.DEFAULT_TOKEN) as svc:
        print(len(await svc.orgs.list()), "organisations")
```

or in-process, without sockets:

```python
fake = FakeService()
async with Client("http://fake.invalid", token=fake.DEFAULT_TOKEN,
                  transport=fake.transport()) as svc:
    print(len(await svc.seasons.list()), "seasons")
```

Time is on ``fake.clock`` (wall time plus ``advance``; ``FakeClock(start=...)`` freezes
it; ``FakeService(clock=VirtualClock())`` shares a client's virtual time), faults come
from ``FaultConfig``, and everything received is in ``fake.requests``.
It speaks today's service (its current published types) unless
``FakeService(legacy=True)``; signed links live on a separate files origin
(``fake.files_url``).

The house: ``service`` (the object, running it) with ``builders``, ``drivers``,
``observe`` and ``knobs`` as its mixins; ``core`` (sans-I/O request handling) gathers
the route tables of ``resources``, one module per resource (``auth``, ``orgs``,
``seasons``, ``events``, ``entries``, ``jobs``), each declaring its routes, request
rules, handlers and rendering, on ``resources.base``; ``access`` (tokens, rate limit),
``validation`` (zod-style issues) and ``wire`` (HTTP values); the data in ``state``,
``seed``, ``today`` (today's optional shapes), ``licensing`` and ``lifecycle``;
``files`` (storage), ``webhooks``, ``faults``, ``clock``, ``flavour`` and ``app`` (the
two adapters).
"""

from .clock import FakeClock, VirtualClock, format_timestamp, parse_timestamp
from .core import ROUTE_TEMPLATES
from .faults import FaultConfig
from .files import FILES_ORIGIN
from .flavour import CURRENT_STATUSES, LEGACY_STATUSES
from .resources.jobs import AUDIO_EXTENSIONS, LICENSE_SOURCES
from .seed import SCENARIOS
from .service import FakeService
from .state import Account
from .webhooks import WebhookDelivery
from .wire import Outcome, RawRequest, RecordedRequest

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
