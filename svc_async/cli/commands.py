"""What each CLI command does with an open ``Client``: the calls, the JSON, the tables.

Each command returns an ``Outcome``: the JSON-ready data for stdout and a function
drawing the same data as tables. Progress and status changes go to ``ui.progress`` (a
renderer on stderr, silent when stderr is not a terminal).
"""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ..client import Client
from ..converter import unstructure
from ..models import Event, JobRequest, LicenseDetails, VerificationJob
from ..resources.polling import PollPolicy
from .render import Renderer, Styled
from .views import (
    entries_table,
    events_table,
    job_summary,
    jobs_table,
    org_tree,
    orgs_table,
    seasons_table,
    status_cell,
    verdict_table,
)

_MAX_PAGE = 100


@dataclass(frozen=True, slots=True)
class Outcome:
    """A command's result: ``data`` for JSON output, ``draw`` for ``--table``."""

    data: Any
    draw: Callable[[Renderer], None]


@dataclass(frozen=True, slots=True)
class Ui:
    """Where a command reports progress (stderr, or nowhere), and the jobs it has seen.

    ``jobs`` holds the latest snapshot of a job the command created or waited for, so a
    command cut short by a deadline can still print the job it was about.
    """

    progress: Renderer
    jobs: list[VerificationJob] = field(default_factory=list)

    def saw(self, job: VerificationJob) -> None:
        """Remember ``job`` as the latest snapshot."""
        self.jobs[:] = [job]


class Unfinished(Exception):
    """A command stopped short of its goal but has something to print (``outcome``).

    ``cause`` is the failure to report after printing; the job a ``--wait`` ran out of
    time on is the usual case (exit 8, the job JSON still on stdout).
    """

    def __init__(self, outcome: Outcome, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.outcome = outcome
        self.cause = cause


Command = Callable[[Client, argparse.Namespace, Ui], Awaitable[Outcome]]


def _page_args(args: argparse.Namespace, parser_error: Callable[[str], None]) -> None:
    if args.all and (args.limit is not None or args.offset is not None):
        parser_error("--all cannot be combined with --limit or --offset")


def check_args(args: argparse.Namespace, parser_error: Callable[[str], None]) -> None:
    """Cross-option rules argparse cannot express; calls ``parser_error`` on a breach."""
    if args.command == "events" or (args.command == "jobs" and args.jobs_command == "search"):
        _page_args(args, parser_error)
    creating = args.command == "jobs" and args.jobs_command == "create"
    if creating and (args.license_file or args.license_source_name) and not args.license_source:
        parser_error("--license-file and --license-source-name need --license-source")
    if creating and args.start > args.end:
        parser_error(f"--start/--end: --start {args.start} is after --end {args.end}")
    if args.command == "fleet":
        _fleet_args(args, parser_error)


def _fleet_args(args: argparse.Namespace, parser_error: Callable[[str], None]) -> None:
    if args.json and args.table:
        parser_error("--json and --table: choose one")
    if args.base_url is not None and (args.account is not None or args.webhook_secret):
        which = "--account" if args.account is not None else "--webhook-secret"
        parser_error(f"--base-url and {which} name different namespaces: choose one")


async def orgs(svc: Client, args: argparse.Namespace, ui: Ui) -> Outcome:
    """``orgs``: every organisation the account can access."""
    with ui.progress.status("Reading organisations..."):
        found = await svc.orgs.list()

    def draw(out: Renderer) -> None:
        out.table(orgs_table(found))
        out.tree(org_tree(found))

    return Outcome(unstructure(found), draw)


async def seasons(svc: Client, args: argparse.Namespace, ui: Ui) -> Outcome:
    """``seasons``: every season."""
    with ui.progress.status("Reading seasons..."):
        found = await svc.seasons.list()
    return Outcome(unstructure(found), lambda out: out.table(seasons_table(found)))


async def events(svc: Client, args: argparse.Namespace, ui: Ui) -> Outcome:
    """``events``: one page, or every page with ``--all``."""
    found: list[Event] = []
    if args.all:
        with ui.progress.progress("Reading events", None) as bar:
            async for event in svc.events.iter(organisation_id=args.org, page_size=_MAX_PAGE):
                found.append(event)
                bar.advance()
    else:
        with ui.progress.status("Reading events..."):
            found = await svc.events.list(
                organisation_id=args.org, limit=args.limit, offset=args.offset
            )
    return Outcome(unstructure(found), lambda out: out.table(events_table(found)))


async def entries(svc: Client, args: argparse.Namespace, ui: Ui) -> Outcome:
    """``entries``: the entries of one event or one season."""
    if args.event is not None:
        with ui.progress.status(f"Reading entries of event {args.event}..."):
            found = await svc.entries.for_event(args.event, updated_after=args.since)
        title = f"Entries of event {args.event}"
    else:
        with ui.progress.status(f"Reading entries of season {args.season}..."):
            found = await svc.entries.for_season(args.season, updated_after=args.since)
        title = f"Entries of season {args.season}"
    return Outcome(unstructure(found), lambda out: out.table(entries_table(found, title)))


def job_outcome(job: VerificationJob) -> Outcome:
    def draw(out: Renderer) -> None:
        out.table(job_summary(job))
        if job.recording is not None:
            out.table(verdict_table(job))

    return Outcome(unstructure(job), draw)


def _status_reporter(ui: Ui) -> Callable[[VerificationJob], None]:
    def on_status(job: VerificationJob) -> None:
        ui.saw(job)
        ui.progress.line(Styled(f"job {job.id}: ", "dim"), status_cell(job.status))

    return on_status


async def jobs_create(svc: Client, args: argparse.Namespace, ui: Ui) -> Outcome:
    """``jobs create``: submit a recording; with ``--wait`` also wait for the verdict."""
    details = []
    if args.license_source:
        details.append(
            LicenseDetails(
                license_source=args.license_source,
                license_source_name=args.license_source_name or "",
                license_file_urls=list(args.license_file),
            )
        )
    request = JobRequest(
        name=args.name,
        email=args.email,
        organisation_id=args.org,
        audio_file_url=args.audio_url,
        start_date=args.start,
        end_date=args.end,
        required_territories=list(args.territory),
        external_id=args.external_id,
        tags=list(args.tag),
        license_details=details,
    )
    with ui.progress.status("Creating the job..."):
        job = await svc.jobs.create(request)
    ui.saw(job)
    if not args.wait:
        return job_outcome(job)
    return await _wait_for(svc, job.id, args, ui, f"Waiting for job {job.id}'s verdict...")


async def jobs_get(svc: Client, args: argparse.Namespace, ui: Ui) -> Outcome:
    """``jobs get ID``: one job in full."""
    with ui.progress.status(f"Reading job {args.job_id}..."):
        job = await svc.jobs.get(args.job_id)
    return job_outcome(job)


async def jobs_search(svc: Client, args: argparse.Namespace, ui: Ui) -> Outcome:
    """``jobs search``: one page (``{"jobs", "count"}``), or every page with ``--all``."""
    if args.all:
        found: list[VerificationJob] = []
        with ui.progress.progress("Searching jobs", None) as bar:
            async for job in svc.jobs.iter_search(
                tags=args.tag, statuses=args.status, organisation_id=args.org, page_size=_MAX_PAGE
            ):
                found.append(job)
                bar.advance()
        count = len(found)
    else:
        with ui.progress.status("Searching jobs..."):
            page = await svc.jobs.search(
                tags=args.tag,
                statuses=args.status,
                organisation_id=args.org,
                limit=25 if args.limit is None else args.limit,
                offset=args.offset or 0,
            )
        found, count = page.jobs, page.count
    data = {"jobs": unstructure(found), "count": count}

    def draw(out: Renderer) -> None:
        out.table(jobs_table(found, f"Verification jobs ({len(found)} of {count})"))

    return Outcome(data, draw)


async def jobs_wait(svc: Client, args: argparse.Namespace, ui: Ui) -> Outcome:
    """``jobs wait ID``: poll until the job is finished, then print it."""
    return await _wait_for(svc, args.job_id, args, ui, f"Waiting for job {args.job_id}...")


async def _wait_for(
    svc: Client, job_id: int, args: argparse.Namespace, ui: Ui, status: str
) -> Outcome:
    """Wait for ``job_id`` under ``--wait-timeout``, showing ``status`` and each change."""
    with ui.progress.status(status):
        job = await svc.jobs.wait(
            job_id,
            timeout=args.wait_timeout,
            policy=PollPolicy(timeout=args.wait_timeout),
            on_status=_status_reporter(ui),
        )
    return job_outcome(job)


COMMANDS: dict[tuple[str, str | None], Command] = {
    ("orgs", None): orgs,
    ("seasons", None): seasons,
    ("events", None): events,
    ("entries", None): entries,
    ("jobs", "create"): jobs_create,
    ("jobs", "get"): jobs_get,
    ("jobs", "search"): jobs_search,
    ("jobs", "wait"): jobs_wait,
}
"""Each command (and jobs action) to its implementation."""
