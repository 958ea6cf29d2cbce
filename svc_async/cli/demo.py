"""``svc-async demo``: a guided tour of the SDK against a FakeService on 127.0.0.1.

The fake runs on a real loopback port and the tour reaches it only through the
public SDK (``svc_async.Client``), the way an application would: organisations
as a tree, seasons, events, every entry of every event fetched concurrently, a
licence summary per event, the songs a person reviewed, a routine job and a
VOD job created, the routine one awaited, its verdict song by song and its
submission, the VOD job's muted copy made and downloaded, and a tag search.
Only the people in the story (the claimant who submits) are played by the
fake's own drivers. Output uses rich when it is installed and plain text
otherwise.

Run it with ``python -m svc_async demo`` (or ``python -m svc_async.cli.demo``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import io
import sys
from collections import Counter
from collections.abc import Sequence
from typing import TextIO

import yarl

from .._version import __version__
from ..client import Client
from ..clock import SYSTEM_CLOCK, Clock
from ..errors import SvcError
from ..models import (
    Entry,
    Event,
    JobRequest,
    JobStatus,
    JobType,
    LicenseDetails,
    LicenseSource,
    LicenseStatus,
    ManualStatusValue,
    Organisation,
    OutputFile,
    OutputFileOperation,
    OutputFileRequest,
    OutputFileStatus,
    VerificationJob,
)
from ..resources.polling import PollPolicy
from ..testing import FakeService
from .args import DEFAULT_DEMO_DELAY, add_demo_options
from .exit_codes import ExitCode, describe, exit_code_for
from .render import Renderer, Segment, Styled
from .terminal import make_renderer
from .views import (
    events_table,
    jobs_table,
    licence_summary,
    manual_statuses,
    org_tree,
    plural,
    recording_table,
    seasons_table,
    status_cell,
    verdict_table,
)

DEMO_AUDIO_URL = "https://media.example/mixes/mavericks-senior-elite-2025.mp3"
"""The recording the demo submits (the fake picks songs from a hash of the URL)."""

DEMO_VIDEO_URL = "https://media.example/videos/mavericks-senior-elite-2025.mp4"
"""The competition video submitted as a VOD job (its muted copy is the output file)."""

DEMO_TAGS = ("demo", "Seniors", "2025")
SEARCH_TAG = "Seniors"
CONCURRENCY = 4


def _code(text: str) -> Styled:
    return Styled(text, "dim italic")


class Tour:
    """One run of the demo: a renderer, the fake's processing delay, a clock."""

    def __init__(
        self, ui: Renderer, *, delay: float, seed: int, clock: Clock = SYSTEM_CLOCK
    ) -> None:
        self.ui = ui
        self.delay = delay
        self.seed = seed
        self.clock = clock
        self.started = clock.now()

    def _elapsed(self) -> str:
        return f"{self.clock.now() - self.started:.1f}s"

    async def run(self) -> None:
        """Start the fake, tour the SDK, stop the fake."""
        ui = self.ui
        fake = FakeService(seed=self.seed, processing_delay=self.delay, clock=self.clock)
        ui.rule(f"svc_async {__version__} - Licence Verification Service demo")
        async with fake.serve("127.0.0.1") as url:
            ui.line(
                "A FakeService is listening on ",
                Styled(url, "bold"),
                " (seed ",
                str(self.seed),
                f", jobs take {self.delay:g}s).",
            )
            ui.line("Everything below goes through the public SDK over HTTP:")
            ui.line(_code(f"    async with Client({url!r}, token=...) as svc:"))
            async with Client(url, token=FakeService.DEFAULT_TOKEN, clock=self.clock) as svc:
                orgs = await self.organisations(svc)
                names = {o.id: o.name for o in orgs}
                await self.seasons(svc, names)
                events = await self.events(svc, names)
                entries, failed = await self.entries(svc, events)
                self.summary(events, entries, failed)
                self.reviewed(events, entries)
                job, vod = await self.verification(svc, orgs)
                self.verdict(job)
                await self.submission(svc, fake, job)
                await self.output_file(svc, vod)
                await self.search(svc)
                self.footer(svc)

    async def organisations(self, svc: Client) -> list[Organisation]:
        """The organisation tree."""
        self.ui.rule("1. Organisations")
        self.ui.line(_code("orgs = await svc.orgs.list()"))
        orgs = await svc.orgs.list()
        self.ui.tree(org_tree(orgs, "Organisations you can access"))
        return orgs

    async def seasons(self, svc: Client, names: dict[int, str]) -> None:
        """Every season."""
        self.ui.rule("2. Seasons")
        self.ui.line(_code("seasons = await svc.seasons.list()"))
        self.ui.table(seasons_table(await svc.seasons.list(), names))

    async def events(self, svc: Client, names: dict[int, str]) -> list[Event]:
        """Every event, page by page."""
        self.ui.rule("3. Events")
        self.ui.line(_code("events = [e async for e in svc.events.iter()]"))
        events = [event async for event in svc.events.iter()]
        self.ui.table(events_table(events, names))
        return events

    async def entries(
        self, svc: Client, events: Sequence[Event]
    ) -> tuple[dict[int, list[Entry]], list[int]]:
        """Every entry of every event, a few events at a time, with a progress bar."""
        self.ui.rule("4. Entries of every event, fetched concurrently")
        self.ui.line(
            _code(f"async for batch in svc.entries.for_events(ids, concurrency={CONCURRENCY}):")
        )
        found: dict[int, list[Entry]] = {}
        failed: list[int] = []
        began = self.clock.now()
        with self.ui.progress(f"Entries of {plural(len(events), 'event')}", len(events)) as bar:
            batches = svc.entries.for_events(
                [e.id for e in events],
                concurrency=CONCURRENCY,
                progress=lambda done, total: bar.advance(),
            )
            async with contextlib.aclosing(batches):
                async for batch in batches:
                    if batch.error is not None:
                        failed.append(batch.event_id)
                    else:
                        found[batch.event_id] = batch.entries
        took = self.clock.now() - began
        count = sum(len(v) for v in found.values())
        recordings = sum(1 for v in found.values() for e in v if e.sound_recording is not None)
        self.ui.line(
            Styled(str(count), "bold"),
            f" {'entry' if count == 1 else 'entries'} ({recordings} with a recording)",
            f" from {plural(len(found), 'event')} in",
            f" {took * 1000:.0f} ms, at most {CONCURRENCY} requests in flight.",
        )
        for event_id in failed:
            self.ui.line(Styled(f"event {event_id} failed", "bold red"))
        return found, failed

    def summary(
        self, events: Sequence[Event], entries: dict[int, list[Entry]], failed: Sequence[int]
    ) -> None:
        """Licence status counts per event."""
        self.ui.rule("5. Licence status summary")
        self.ui.table(licence_summary(events, entries, failed))

    def _request(self, orgs: Sequence[Organisation]) -> JobRequest:
        return JobRequest(
            name="Manchester Mavericks - Senior Elite routine",
            email="producer@service.example",
            organisation_id=_root(orgs).id,
            audio_file_url=DEMO_AUDIO_URL,
            start_date=dt.date(2025, 3, 14),
            end_date=dt.date(2025, 3, 16),
            required_territories=["GB", "US", "FR"],
            external_id="MAV-SE-2025",
            tags=list(DEMO_TAGS),
            license_details=[
                LicenseDetails(
                    license_source=LicenseSource.OTHER,
                    license_source_name="Club music library",
                    license_file_urls=["https://licences.example/mavericks-2025.pdf"],
                )
            ],
        )

    def _vod_request(self, orgs: Sequence[Organisation]) -> JobRequest:
        return JobRequest(
            name="Manchester Mavericks - Senior Elite video",
            email="producer@service.example",
            organisation_id=_root(orgs).id,
            audio_file_url=DEMO_VIDEO_URL,
            start_date=dt.date(2025, 3, 14),
            end_date=dt.date(2025, 4, 14),
            required_territories=["GB"],
            external_id="MAV-SE-2025-VOD",
            tags=list(DEMO_TAGS),
            type=JobType.VOD,
            output_file=OutputFileRequest(operation=OutputFileOperation.MUTE),
        )

    def _policy(self) -> PollPolicy:
        """Poll often enough to see each status the fake passes through."""
        interval = self._interval()
        return PollPolicy(
            wait_initial=interval,
            wait_exp_base=1.0,
            wait_max=interval,
            wait_jitter=0.0,
            timeout=self.delay + 30.0,
        )

    def _interval(self) -> float:
        return max(0.1, min(0.5, self.delay / 12))

    def _since(self, began: float) -> Styled:
        return Styled(f"  +{self.clock.now() - began:4.1f}s  ", "dim")

    async def verification(
        self, svc: Client, orgs: Sequence[Organisation]
    ) -> tuple[VerificationJob, VerificationJob]:
        """Create a routine job and a VOD job, then wait for the routine one, showing
        each status as it changes; returns both (the VOD job as created)."""
        ui = self.ui
        ui.rule("7. Verification jobs, created and awaited")
        request = self._request(orgs)
        ui.line(
            "Submitting ",
            Styled(request.audio_file_url, "bold"),
            " for ",
            ", ".join(request.required_territories),
            ".",
        )
        ui.line(_code("job = await svc.jobs.create(JobRequest(...))"))
        job = await svc.jobs.create(request)
        ui.line(
            "Created job ",
            Styled(f"#{job.id}", "bold"),
            f" ({job.type or 'Routine'}) with status ",
            status_cell(job.status),
            ".",
        )
        ui.line("And the same routine's video, to be muted where its music is unlicensed:")
        ui.line(_code("vod = await svc.jobs.create(JobRequest(..., type=JobType.VOD,"))
        ui.line(_code('    output_file=OutputFileRequest(operation="Mute")))'))
        vod = await svc.jobs.create(self._vod_request(orgs))
        ui.line(
            "Created job ",
            Styled(f"#{vod.id}", "bold"),
            f" ({vod.type or 'VOD'}) with status ",
            status_cell(vod.status),
            ".",
        )
        ui.line(_code("job = await svc.jobs.wait(job.id, on_status=show)"))
        began = self.clock.now()

        def show(snapshot: VerificationJob) -> None:
            ui.line(self._since(began), status_cell(snapshot.status))

        with ui.status(f"Waiting for job #{job.id}..."):
            job = await svc.jobs.wait(job.id, policy=self._policy(), on_status=show)
        return job, vod

    def verdict(self, job: VerificationJob) -> None:
        """The job's songs and the checks that did not pass."""
        ui = self.ui
        ui.rule("8. The verdict, song by song")
        if job.error_message:
            ui.line(Styled(f"Job #{job.id} failed: {job.error_message}", "bold red"))
            return
        ui.table(verdict_table(job))
        if job.recording is not None:
            songs = job.recording.songs
            good = sum(1 for song in songs if song.license_status == LicenseStatus.LICENSED)
            ui.line(
                "Overall: ",
                status_cell(job.recording.license_status),
                f" ({good} of {plural(len(songs), 'song')} licensed for",
                f" {', '.join(job.required_territories)}).",
            )

    def reviewed(self, events: Sequence[Event], entries: dict[int, list[Entry]]) -> None:
        """How many songs a person gave a manual status, and one such recording."""
        ui = self.ui
        ui.rule("6. Songs a person reviewed")
        reviewed = [
            (event, entry, found)
            for event in events
            for entry in entries.get(event.id, [])
            if (found := manual_statuses(entry.sound_recording))
        ]
        if not reviewed:
            ui.line("No song carries a manual status.")
            return
        counts = Counter(status for *_, found in reviewed for status in found)
        # the first recording with the most kinds of manual verdict, a rejection rather
        # than an approval, then the most songs
        event, shown, _ = max(
            reviewed,
            key=lambda r: (
                len(set(r[2])),
                ManualStatusValue.MANUALLY_REJECTED in r[2],
                ManualStatusValue.MANUALLY_APPROVED in r[2],
                _songs(r[1]),
            ),
        )
        ui.line(
            _code("song.manual_status"),
            " is a person's verdict on a song; all entries hold ",
            *_listing(counts),
            ".",
        )
        title = f"Songs of {shown.name} (entry #{shown.id}) at {event.title}"
        ui.table(recording_table(shown.sound_recording, title))

    async def submission(self, svc: Client, fake: FakeService, job: VerificationJob) -> None:
        """The claimant submits the job through its edit link (the fake plays them)."""
        ui = self.ui
        ui.rule("9. Claimed and submitted")
        if job.error_message or job.status != JobStatus.PROCESSED:
            ui.line(f"Job #{job.id} is {job.status}; there is nothing to submit.")
            return
        ui.line(
            "Whoever holds the job's ",
            _code("edit_url"),
            " can claim it, confirm the songs and submit;",
        )
        ui.line(
            "here the fake plays that person, ",
            _code("fake.submit(job.id)"),
            ", and the SDK reads the job:",
        )
        fake.submit(job.id)
        ui.line(_code("job = await svc.jobs.get(job.id)"))
        job = await svc.jobs.get(job.id)
        claimed = {True: "yes", False: "no", None: "-"}[job.is_claimed]
        ui.line(
            "Job ",
            Styled(f"#{job.id}", "bold"),
            " is now ",
            status_cell(job.status),
            f" (claimed: {claimed}).",
        )

    async def output_file(self, svc: Client, vod: VerificationJob) -> None:
        """Wait for the VOD job, then for its output file, and download it."""
        ui = self.ui
        ui.rule("10. The VOD job's output file")
        ui.line(_code("vod = await svc.jobs.wait(vod.id)"))
        with ui.status(f"Waiting for job #{vod.id}..."):
            vod = await svc.jobs.wait(vod.id, policy=self._policy())
        ui.line(
            "Job ",
            Styled(f"#{vod.id}", "bold"),
            f" ({vod.type or 'VOD'}) is ",
            status_cell(vod.status),
            "; its output file is made after that.",
        )
        ui.line(
            "Polling ",
            _code("svc.jobs.get(vod.id)"),
            " and reading ",
            _code("vod.output_files"),
            ":",
        )
        output = await self._output_ready(svc, vod)
        if output is None:
            return
        link = yarl.URL(output.download_url or "")
        ui.line(
            "Output file ",
            Styled(f"#{output.id}", "bold"),
            f" ({output.operation or '-'}, {output.file_type or '-'}) is ready at a signed",
            " link (query not shown):",
        )
        ui.line("  ", Styled(str(link.with_query(None)), "bold"), "?..." if link.query else "")
        buffer = io.BytesIO()
        ui.line(_code("await svc.download(file.download_url, buffer)"))
        result = await svc.download(output.download_url or "", buffer)
        ui.line(
            f"Downloaded {result.bytes_written / 1024:.0f} KiB",
            f" ({result.content_type or 'no content type'});",
            " the SDK never logs the link's signature.",
        )

    async def _output_ready(self, svc: Client, vod: VerificationJob) -> OutputFile | None:
        """Poll the job until its first output file is Completed (or fails)."""
        ui = self.ui
        began = self.clock.now()
        deadline = began + self.delay + 30.0
        last: str | None = None
        while True:
            output = vod.output_files[0] if vod.output_files else None
            status = None if output is None else str(output.status)
            if status != last:
                ui.line(self._since(began), status_cell(status, "no output file yet"))
                last = status
            if vod.error_message or status == OutputFileStatus.ERRORED:
                ui.line(Styled(f"Job #{vod.id} made no output file.", "bold red"))
                return None
            if output is not None and output.is_ready:
                return output
            if self.clock.now() > deadline:
                ui.line(Styled("The output file was not made in time.", "bold red"))
                return None
            await self.clock.sleep(self._interval())
            vod = await svc.jobs.get(vod.id)

    async def search(self, svc: Client) -> None:
        """Jobs carrying a tag."""
        self.ui.rule("11. Searching jobs by tag")
        self.ui.line(_code(f"page = await svc.jobs.search(tags=[{SEARCH_TAG!r}])"))
        page = await svc.jobs.search(tags=[SEARCH_TAG])
        title = f"Jobs tagged {SEARCH_TAG!r}: {len(page.jobs)} of {page.count}"
        self.ui.table(jobs_table(page.jobs, title))

    def footer(self, svc: Client) -> None:
        """Rate limit left and time taken."""
        self.ui.rule("Done")
        rate = svc.rate_limit
        if rate is not None and rate.remaining is not None:
            self.ui.line(
                f"Rate limit: {rate.remaining} of {rate.limit} requests left in this window",
                f" (svc.rate_limit). Tour finished in {self._elapsed()}.",
            )
        else:
            self.ui.line(f"Tour finished in {self._elapsed()}.")


def _songs(entry: Entry) -> int:
    recording = entry.sound_recording
    return 0 if recording is None else len(recording.songs)


def _listing(counts: Counter[str]) -> list[Segment]:
    """``3 Manually Approved, 1 Manually Rejected`` with each status coloured."""
    parts: list[Segment] = []
    for status, count in sorted(counts.items()):
        if parts:
            parts.append(", ")
        parts.extend((f"{count} ", status_cell(status)))
    return parts


def _width(out: TextIO) -> int | None:
    """Let a terminal decide; elsewhere (pipes, CI logs) use 80 columns."""
    isatty = getattr(out, "isatty", None)
    return None if callable(isatty) and isatty() else 80


def run_demo(
    *,
    delay: float = DEFAULT_DEMO_DELAY,
    seed: int = 0,
    color: bool = True,
    plain: bool = False,
    out: TextIO | None = None,
) -> int:
    """Run the tour and return an exit code (0 on success)."""
    stream = out if out is not None else sys.stdout
    width = _width(stream)
    ui = make_renderer(stream, color=None if color else False, plain=plain, width=width)
    tour = Tour(ui, delay=delay, seed=seed)
    try:
        asyncio.run(tour.run())
    except KeyboardInterrupt:
        print("svc-async demo: interrupted", file=sys.stderr)
        return int(ExitCode.INTERRUPTED)
    except SvcError as exc:
        print(f"svc-async demo: error: {describe(exc)}", file=sys.stderr)
        return int(exit_code_for(exc))
    return int(ExitCode.OK)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m svc_async.cli.demo [--no-color] [--delay S] [--seed N]``."""
    parser = argparse.ArgumentParser(
        prog="python -m svc_async.cli.demo",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_demo_options(parser)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    return run_demo(delay=args.delay, seed=args.seed, color=not args.no_color, plain=args.plain)


if __name__ == "__main__":
    sys.exit(main())


def _root(orgs: Sequence[Organisation]) -> Organisation:
    """The demo account's root organisation (the first one without a parent)."""
    return next((o for o in orgs if o.parent_id is None), orgs[0])
