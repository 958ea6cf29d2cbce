"""What tests read back from the fake: requests received, counts, deliveries, records.

A mixin of ``FakeService``.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from .faults import same_route
from .resources.entries import render_entry
from .resources.jobs import render_job
from .webhooks import WebhookDelivery

if TYPE_CHECKING:
    from .core import ServiceCore
    from .files import FileStore
    from .state import State
    from .webhooks import WebhookDispatcher
    from .wire import RecordedRequest

JSON = dict[str, Any]


class Observers:
    """Recorded requests, counters, webhook deliveries and rendered records."""

    state: State
    files: FileStore
    core: ServiceCore
    _webhooks: WebhookDispatcher
    base_url: str | None
    in_flight: int
    max_in_flight: int

    def now(self) -> float:  # pragma: no cover - provided by FakeService
        raise NotImplementedError

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received (both origins), in arrival order."""
        return self.core.requests

    @property
    def calls(self) -> Counter[tuple[str, str]]:
        """Request counts keyed by (METHOD, route template), e.g.
        ``("GET", "/api/public/v1/verification-job/{verificationJobId}")``."""
        return self.core.calls

    def count(self, method: str, route: str) -> int:
        """How many ``method`` requests hit ``route``: a template with any placeholder
        names (``.../verification-job/{id}`` counts the same as
        ``.../{verificationJobId}``), or a literal path."""
        method = method.upper()
        if "{" in route:
            return sum(
                n for (m, t), n in self.core.calls.items() if m == method and same_route(t, route)
            )
        hits = self.core.calls.get((method, route), 0)
        if hits:
            return hits
        return sum(1 for r in self.core.requests if r.method == method and r.path == route)

    @property
    def rate_limited(self) -> int:
        """How many 429 answers were sent (enforced limit and injected bursts)."""
        return self.core.rate_limited

    @property
    def faults_injected(self) -> int:
        """How many faults (other than plain latency) the current config injected."""
        return self.core.injector.injected

    def reset_counters(self) -> None:
        """Forget recorded requests, call counts, 429 count and the in-flight peak."""
        self.core.requests.clear()
        self.core.calls.clear()
        self.core.rate_limited = 0
        self.max_in_flight = self.in_flight

    @property
    def webhook_deliveries(self) -> list[WebhookDelivery]:
        """Every delivery made: status updates, entry updates, output-file callbacks and
        test deliveries (``WebhookDelivery.kind`` tells them apart)."""
        return self._webhooks.deliveries

    async def wait_webhooks(self, timeout: float = 5.0) -> None:
        """Wait until everything due was announced and all deliveries are done."""
        self._webhooks.start()
        await self._webhooks.wait_idle(timeout)

    async def send_test_webhook(self, url: str | None = None) -> WebhookDelivery:
        """POST ``{"id": 0, "status": <processed>, "isTest": true}`` to the webhook URL."""
        target = url or self._webhooks.url
        if target is None:
            raise ValueError("no webhook_url configured")
        payload = {"id": 0, "status": self.core.flavour.processed, "isTest": True}
        return await self._webhooks.deliver(target, payload)

    @property
    def jobs(self) -> dict[int, JSON]:
        """Every job as the service would return it now (id -> wire-format dict)."""
        return {jid: self.job(jid) for jid in sorted(self.state.jobs)}

    def job(self, job_id: int, base: str | None = None) -> JSON:
        """One job as the service would return it now."""
        base = base or self.base_url or "http://fake.invalid"
        return render_job(self.core, self.state.jobs[job_id], base=base, now=self.now())

    def entry(self, entry_id: int, base: str | None = None) -> JSON:
        """One entry as the service would return it now."""
        base = base or self.base_url or "http://fake.invalid"
        return render_entry(self.core, self.state.entries[entry_id], base=base, now=self.now())
