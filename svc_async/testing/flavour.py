"""Which service the fake speaks: today's (current published types) or the old examples'.

Only shapes and vocabularies differ; the data, rules and timings are the same.
"""

from __future__ import annotations

import attrs

__all__ = ["CURRENT_STATUSES", "LEGACY_STATUSES", "Flavour"]

CURRENT_STATUSES: tuple[str, ...] = (
    "Created",
    "Downloading",
    "DetectingMusic",
    "Matching",
    "Matched",
    "Processed",
    "Submitted",
    "Errored",
)
"""Job statuses of today's service, in order; search accepts only these."""

LEGACY_STATUSES: tuple[str, ...] = (
    "Created",
    "Downloading",
    "DetectingMusic",
    "Matching",
    "Completed",
    "Confirmed",
    "Errored",
)
"""Job statuses before 2025-02 (the published examples show ``Completed``)."""


@attrs.frozen
class Flavour:
    """Today's service (default) or, with ``legacy=True``, the published examples' one.

    Legacy: jobs end at Completed (Confirmed once submitted), search answers
    ``{jobs, count}``, 12-key licence checks (job answers without the three Master
    ones; today all 13 everywhere), string ``svcMixId``, no ``md5Hash``, no
    job ``editURL``/``isClaimed``/``type``/``outputFiles``/``outputFileType``, and a
    season without an invite link omits the ``inviteURL`` key.
    """

    legacy: bool = False

    @property
    def phases(self) -> tuple[str, ...]:
        """Statuses a job passes through before its final one."""
        return self.statuses[:5] if not self.legacy else self.statuses[:4]

    @property
    def processed(self) -> str:
        """The status of a job whose automatic processing is done."""
        return "Completed" if self.legacy else "Processed"

    @property
    def submitted(self) -> str:
        """The status of a job its claimant has submitted."""
        return "Confirmed" if self.legacy else "Submitted"

    @property
    def statuses(self) -> tuple[str, ...]:
        """Every status search accepts."""
        return LEGACY_STATUSES if self.legacy else CURRENT_STATUSES

    @property
    def results_key(self) -> str:
        """The name of the list in a job search answer."""
        return "jobs" if self.legacy else "results"
