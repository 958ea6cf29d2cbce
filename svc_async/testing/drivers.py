"""What tests make happen in the fake's world: entries changing, jobs finishing,
being claimed and submitted, tokens expiring. A mixin of ``FakeService``; each change
is announced as the service would (entry-update and status webhooks).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .builders import Builders
from .clock import format_timestamp
from .lifecycle import finish_job, submit_job

if TYPE_CHECKING:
    from .webhooks import WebhookDispatcher

JSON = dict[str, Any]
_UNSET: Any = object()


class Drivers(Builders):
    """Changing entries and moving jobs along, with the webhooks that follow."""

    _webhooks: WebhookDispatcher

    def update_entry(
        self,
        entry_id: int,
        *,
        name: str = _UNSET,
        email: str | None = _UNSET,
        fields: Mapping[str, str | list[str]] = _UNSET,
        recording: str | Sequence[str] | None = _UNSET,
    ) -> JSON:
        """Change an entry as its team would, and POST the entry-update webhook.

        Only the arguments given change; ``fields`` replaces the answers it names;
        ``recording`` uploads a new recording (a scenario as in ``add_entry``; None
        removes it). The webhook (``{entry, eventId}`` or ``{entry, seasonId}``, the
        full entry) goes to ``webhook_url`` when one is set. Returns the payload.
        """
        entry = self.state.entries[entry_id]
        if name is not _UNSET:
            entry.name = name
        if email is not _UNSET:
            entry.email = email
        questions, territories = self._questions(entry)
        if fields is not _UNSET:
            changed = {f["key"]: f for f in self._answers(questions, fields)}
            kept = [f for f in entry.fields if f.get("key") not in changed]
            entry.fields = kept + list(changed.values())
        if recording is not _UNSET:
            entry.recording = (
                None if recording is None else self._recording(entry, recording, territories)
            )
        return self._announce_entry(entry)

    def upload_recording(self, entry_id: int, scenario: str | Sequence[str] = "licensed") -> JSON:
        """The team uploads a new recording (``scenario`` as in ``add_entry``); see
        ``update_entry`` for the webhook. Returns the payload."""
        return self.update_entry(entry_id, recording=scenario)

    def touch_recording(self, entry_id: int) -> str:
        """Bump an entry's recording ``updatedAt`` to now; returns the new timestamp."""
        rec = self.state.entries[entry_id].recording
        if rec is None:
            raise ValueError(f"entry {entry_id} has no recording")
        rec.updated_at = max(self.now(), rec.updated_at + 0.001)
        return format_timestamp(rec.updated_at)

    def finish_job(self, job_id: int, *, error: str | None = None) -> None:
        """Make a job finish now (Errored with ``error`` when given)."""
        finish_job(self.state.jobs[job_id], self.now(), error)
        self._webhooks.wake()

    def claim(self, job_id: int) -> None:
        """Someone holding the job's ``editURL`` claims it (``isClaimed`` becomes true)."""
        self.state.jobs[job_id].claimed = True

    def submit(self, job_id: int) -> None:
        """The claimant confirms the songs and submits: Submitted (legacy Confirmed).

        The job must be processed; it becomes claimed, and a status update is POSTed to
        ``webhook_url`` when one is set. Raises ValueError otherwise.
        """
        job = self.state.jobs[job_id]
        submit_job(job, self.now())
        if self._webhooks.url:
            status = self.core.flavour.submitted
            self._webhooks.post(self._webhooks.url, {"id": job.id, "status": status})

    def expire_tokens(self) -> None:
        """Expire every access token issued so far (static tokens are unaffected)."""
        self.core.expire_tokens()

    def set_file(self, key: str, content: bytes) -> None:
        """Store the bytes served for file ``key`` (a recording's ``file_key``)."""
        self.files.contents[key] = content
