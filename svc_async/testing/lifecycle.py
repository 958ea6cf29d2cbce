"""A job's life on the fake clock, and the notices it owes (webhooks and callbacks).

A job created at ``t`` with processing delay ``d`` walks through the flavour's phases in
equal steps (today: Created, Downloading, DetectingMusic, Matching, Matched; legacy: the
first four) and shows its final status from ``t + d``: Processed (legacy Completed), or
Errored, which comes at ``t + d/2``. Submitted (legacy Confirmed) follows when a test
calls ``FakeService.submit``. A VOD job's output file is Pending from the finish,
Processing ``lag/2`` later and Completed ``lag`` later (``lag`` = ``d/2``).

Reads are pure functions of the clock; only deliveries run in the background.
"""

from __future__ import annotations

from typing import Any

from .flavour import Flavour
from .state import Job, OutputFile

JSON = dict[str, Any]

__all__ = [
    "due_notices",
    "finish_job",
    "job_status",
    "output_ready_at",
    "output_status",
    "submit_job",
]


def job_status(job: Job, now: float, flavour: Flavour) -> str:
    """The job's status at ``now``."""
    if job.submitted_at is not None and now >= job.submitted_at:
        return flavour.submitted
    if now >= job.finish_at:
        return "Errored" if job.final_status == "Errored" else flavour.processed
    phases = flavour.phases
    span = job.finish_at - job.created_at
    if job.final_status == "Errored":
        span *= 2
    index = int(len(phases) * (now - job.created_at) / span) if span > 0 else 0
    return phases[max(0, min(index, len(phases) - 1))]


def is_processed(job: Job, now: float) -> bool:
    """True once automatic processing finished without error."""
    return now >= job.finish_at and job.final_status != "Errored"


def finish_job(job: Job, now: float, error: str | None = None) -> None:
    """Make ``job`` finish at ``now``, as Errored with ``error`` when one is given."""
    job.finish_at = min(job.finish_at, now)
    if error is not None:
        job.final_status = "Errored"
        job.error_message = error or "Processing failed"
        job.recording = None
        job.output = None
    elif job.recording is not None:
        job.recording.created_at = min(job.recording.created_at, now)
        job.recording.updated_at = job.finish_at


def submit_job(job: Job, now: float) -> None:
    """The claimant confirms the songs and submits: the job is claimed and Submitted."""
    if not is_processed(job, now):
        raise ValueError(f"job {job.id} is not processed yet; advance the clock first")
    if job.submitted_at is not None:
        raise ValueError(f"job {job.id} was already submitted")
    job.claimed = True
    job.submitted_at = now


def output_ready_at(job: Job, out: OutputFile) -> float:
    """When ``out`` is Completed."""
    return job.finish_at + out.lag


def output_status(job: Job, out: OutputFile, now: float) -> str:
    """Pending, Processing or Completed at ``now`` (only asked once processed)."""
    if now >= output_ready_at(job, out):
        return "Completed"
    return "Processing" if now >= job.finish_at + out.lag / 2 else "Pending"


def due_notices(job: Job, now: float) -> tuple[list[str], float | None]:
    """Notices of ``job`` due at ``now`` and not yet sent (``final``, ``output``),
    marked sent, and when the next one falls due (None: nothing more)."""
    due: list[str] = []
    upcoming: list[float] = []
    if "final" not in job.announced:
        if now >= job.finish_at:
            job.announced.add("final")
            due.append("final")
        else:
            upcoming.append(job.finish_at)
    out = job.output
    if out is not None and "output" not in job.announced and job.final_status != "Errored":
        ready = output_ready_at(job, out)
        if now >= ready:
            job.announced.add("output")
            due.append("output")
        else:
            upcoming.append(ready)
    return due, min(upcoming) if upcoming else None
