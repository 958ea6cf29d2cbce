"""The fake's runtime knobs as properties of ``FakeService`` (a mixin)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .core import ServiceCore
    from .faults import FaultConfig
    from .resources.base import Settings
    from .webhooks import WebhookDispatcher


class Knobs:
    """Settings that may be changed while the fake runs."""

    settings: Settings
    core: ServiceCore
    _webhooks: WebhookDispatcher

    @property
    def processing_delay(self) -> float:
        """Seconds from job creation to its final status (new jobs only)."""
        return self.settings.processing_delay

    @processing_delay.setter
    def processing_delay(self, value: float) -> None:
        self.settings.processing_delay = value

    @property
    def token_ttl(self) -> float | None:
        """Lifetime in seconds of access tokens issued from now on (None: forever)."""
        return self.settings.token_ttl

    @token_ttl.setter
    def token_ttl(self, value: float | None) -> None:
        self.settings.token_ttl = value

    @property
    def rate_limit(self) -> tuple[int, float] | None:
        """(requests, window seconds) per token, fixed window; None disables it."""
        return self.settings.rate_limit

    @rate_limit.setter
    def rate_limit(self, value: tuple[int, float] | None) -> None:
        self.settings.rate_limit = value

    @property
    def search_lag(self) -> float:
        """Seconds after creation before a job shows up in search."""
        return self.settings.search_lag

    @search_lag.setter
    def search_lag(self, value: float) -> None:
        self.settings.search_lag = value

    @property
    def clock_skew(self) -> float:
        """Seconds added to the clock for everything the server says (Date, timestamps)."""
        return self.settings.clock_skew

    @clock_skew.setter
    def clock_skew(self, value: float) -> None:
        self.settings.clock_skew = value

    @property
    def faults(self) -> FaultConfig | None:
        """The active fault configuration; assigning one restarts its random sequence."""
        return self.core.injector.config

    @faults.setter
    def faults(self, value: FaultConfig | None) -> None:
        self.core.injector.config = value

    @property
    def webhook_url(self) -> str | None:
        """Where job status updates are POSTed (None: nowhere)."""
        return self._webhooks.url

    @webhook_url.setter
    def webhook_url(self, value: str | None) -> None:
        self._webhooks.url = value
