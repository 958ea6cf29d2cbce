"""Views of the SDK's models for people: tables and trees as plain data.

Pure functions from models to ``Table``/``TreeNode`` values; the CLI's ``--table``
output and the demo draw them with a ``Renderer``.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from ..models import (
    CREATION_TAG_PREFIX,
    LICENSE_CHECK_NAMES,
    CheckResult,
    Entry,
    Event,
    JobStatus,
    LicenseChecks,
    LicenseStatus,
    ManualStatus,
    ManualStatusValue,
    Organisation,
    OutputFile,
    RecordingStatus,
    Season,
    Song,
    SoundRecording,
    VerificationJob,
)
from .render import Cell, Column, Segment, Styled, Table, TreeNode

_STYLES: dict[str, str] = {
    LicenseStatus.LICENSED: "bold green",
    LicenseStatus.PARTIALLY_LICENSED: "yellow",
    LicenseStatus.PENDING: "yellow",
    LicenseStatus.UNVERIFIED: "bold red",
    LicenseStatus.NO_AUDIO_UPLOADED: "dim",
    CheckResult.ACCEPTED: "green",
    CheckResult.UNKNOWN: "yellow",
    CheckResult.REJECTED: "bold red",
    JobStatus.PROCESSED: "bold green",
    JobStatus.SUBMITTED: "bold green",
    JobStatus.COMPLETED: "bold green",
    JobStatus.CONFIRMED: "bold green",
    JobStatus.ERRORED: "bold red",
    ManualStatusValue.MANUALLY_APPROVED: "bold green",
    ManualStatusValue.MANUALLY_REJECTED: "bold red",
    ManualStatusValue.USER_UPDATED: "yellow",
    RecordingStatus.COMPLETE: "green",
    RecordingStatus.FAILED: "bold red",
}

_CHECK_TITLES = {attr: title for title, attr in LICENSE_CHECK_NAMES.items()}

SUMMARY_STATUSES: dict[str, str] = {
    LicenseStatus.LICENSED: "Licensed",
    LicenseStatus.PARTIALLY_LICENSED: "Partial",
    LicenseStatus.PENDING: "Pending",
    LicenseStatus.UNVERIFIED: "Unverified",
}
"""Licence statuses with a column in the per-event summary (others count as "Other")."""


def plural(count: int, singular: str, plural_form: str | None = None) -> str:
    """``1 song``, ``2 songs``; ``plural_form`` for irregular words (``entries``)."""
    word = singular if count == 1 else (plural_form or f"{singular}s")
    return f"{count} {word}"


def status_cell(status: str | None, empty: str = "-") -> Styled:
    """A status coloured by its meaning (green good, yellow open, red bad)."""
    if status is None:
        return Styled(empty, "dim")
    return Styled(str(status), _STYLES.get(str(status), "cyan"))


def day(value: dt.datetime | dt.date | None) -> str:
    """``YYYY-MM-DD`` (UTC for datetimes), or ``-``."""
    if value is None:
        return "-"
    if isinstance(value, dt.datetime):
        value = value.astimezone(dt.UTC).date()
    return value.isoformat()


def user_tags(tags: Iterable[str]) -> list[str]:
    """Tags without the SDK's own exactly-once creation tag."""
    return [t for t in tags if not t.startswith(CREATION_TAG_PREFIX)]


def _org_label(org: Organisation) -> list[Segment]:
    label: list[Segment] = [Styled(org.name, "bold"), Styled(f"  #{org.id}", "dim")]
    if org.is_event_producer:
        label.append(Styled("  event producer", "magenta"))
    return label


def org_tree(orgs: Sequence[Organisation], title: str = "Organisations") -> TreeNode:
    """The organisations as a tree; orphans (parent not visible) hang off the top."""
    ids = {o.id for o in orgs}
    children: dict[int | None, list[Organisation]] = {}
    for org in sorted(orgs, key=lambda o: o.id):
        parent = org.parent_id if org.parent_id in ids else None
        children.setdefault(parent, []).append(org)

    def node(org: Organisation) -> TreeNode:
        return TreeNode(_org_label(org), [node(c) for c in children.get(org.id, [])])

    roots = [node(o) for o in children.get(None, [])]
    return TreeNode([Styled(f"{title} ({len(orgs)})", "bold cyan")], roots)


def orgs_table(orgs: Sequence[Organisation]) -> Table:
    """One row per organisation."""
    names = {o.id: o.name for o in orgs}
    rows = [
        [
            str(o.id),
            o.name,
            "-" if o.parent_id is None else f"{names.get(o.parent_id, '?')} (#{o.parent_id})",
            "yes" if o.is_event_producer else "",
            day(o.created_at),
        ]
        for o in sorted(orgs, key=lambda o: o.id)
    ]
    columns = [
        Column("ID", "right"),
        Column("Name"),
        Column("Parent"),
        Column("Producer"),
        Column("Created"),
    ]
    return Table(f"Organisations ({len(orgs)})", columns, rows)


def _org(org_id: int, names: Mapping[int, str] | None) -> str:
    if names and org_id in names:
        return names[org_id]
    return f"#{org_id}"


def seasons_table(seasons: Sequence[Season], org_names: Mapping[int, str] | None = None) -> Table:
    """One row per season."""
    rows = [
        [
            str(s.id),
            s.title,
            _org(s.organisation_id, org_names),
            f"{day(s.start_date)} .. {day(s.end_date)}",
            str(len(s.signup_fields)),
            "yes" if s.is_locked else "",
        ]
        for s in seasons
    ]
    columns = [
        Column("ID", "right"),
        Column("Season"),
        Column("Organisation"),
        Column("Dates"),
        Column("Signup fields", "right"),
        Column("Locked"),
    ]
    return Table(f"Seasons ({len(seasons)})", columns, rows)


def events_table(events: Sequence[Event], org_names: Mapping[int, str] | None = None) -> Table:
    """One row per event."""
    rows = [
        [
            str(e.id),
            e.title,
            _org(e.organisation_id, org_names),
            e.territory or "-",
            day(e.start_date)
            if e.start_date == e.end_date
            else f"{day(e.start_date)} +{(e.end_date - e.start_date).days}d",
        ]
        for e in events
    ]
    columns = [
        Column("ID", "right"),
        Column("Event"),
        Column("Organisation"),
        Column("Where"),
        Column("When"),
    ]
    return Table(f"Events ({len(events)})", columns, rows)


def entries_table(entries: Sequence[Entry], title: str = "Entries") -> Table:
    """One row per entry, with its recording's licence status."""
    rows: list[list[Cell]] = []
    for e in entries:
        rec = e.sound_recording
        division = e.field("division")
        rows.append(
            [
                str(e.id),
                e.name,
                e.email or "-",
                division if isinstance(division, str) else "-",
                str(len(rec.songs)) if rec is not None else "-",
                status_cell(None if rec is None else rec.license_status, "no recording"),
            ]
        )
    columns = [
        Column("ID", "right"),
        Column("Name"),
        Column("Email"),
        Column("Division"),
        Column("Songs", "right"),
        Column("Licence"),
    ]
    return Table(f"{title} ({len(entries)})", columns, rows)


def licence_counts(entries: Iterable[Entry]) -> Counter[str]:
    """Entries by their recording's licence status; ``"none"`` for no recording."""
    counts: Counter[str] = Counter()
    for entry in entries:
        rec = entry.sound_recording
        counts["none" if rec is None else str(rec.license_status)] += 1
    return counts


def licence_summary(
    events: Sequence[Event], entries: Mapping[int, Sequence[Entry]], failed: Iterable[int] = ()
) -> Table:
    """Per event: how many entries are Licensed, Partially Licensed, Pending, Unverified."""
    failed_ids = set(failed)
    per_event = {
        e.id: licence_counts(entries.get(e.id, ())) for e in events if e.id not in failed_ids
    }
    total: Counter[str] = sum(per_event.values(), Counter())
    any_other = _others(total) > 0
    columns = [
        Column("Event"),
        Column("All", "right"),
        *(Column(header, "right") for header in SUMMARY_STATUSES.values()),
        *([Column("Other", "right")] if any_other else []),
        Column("No audio", "right"),
    ]

    def counts_row(label: Segment, counts: Counter[str]) -> list[Cell]:
        cells: list[Cell] = [label, str(sum(counts.values()))]
        for status in SUMMARY_STATUSES:
            cells.append(_count(counts[status], _STYLES[status]))
        if any_other:
            cells.append(_count(_others(counts), "cyan"))
        cells.append(_count(counts["none"], ""))
        return cells

    rows: list[list[Cell]] = []
    for event in events:
        if event.id in failed_ids:
            rows.append([event.title, Styled("failed", "bold red"), *[""] * (len(columns) - 2)])
        else:
            rows.append(counts_row(event.title, per_event[event.id]))
    rows.append(counts_row(Styled("All events", "bold"), total))
    return Table("Licence status of entries, per event", columns, rows)


def _others(counts: Counter[str]) -> int:
    known = sum(counts[s] for s in SUMMARY_STATUSES) + counts["none"]
    return sum(counts.values()) - known


def _count(value: int, style: str) -> Styled:
    return Styled(str(value), style if value else "dim")


def jobs_table(jobs: Sequence[VerificationJob], title: str = "Verification jobs") -> Table:
    """One row per job: type, status, verdict, tags; an error message as a note under it."""
    rows: list[list[Cell]] = []
    notes: dict[int, Cell] = {}
    for index, job in enumerate(jobs):
        verdict: Cell = status_cell(None if job.recording is None else job.recording.license_status)
        if job.error_message:
            notes[index] = Styled(job.error_message, "red")
        rows.append(
            [
                str(job.id),
                job.name or "-",
                str(job.type) if job.type else "-",
                status_cell(job.status),
                verdict,
                ", ".join(user_tags(job.tags)) or "-",
            ]
        )
    columns = [
        Column("ID", "right"),
        Column("Name"),
        Column("Type"),
        Column("Status"),
        Column("Verdict"),
        Column("Tags"),
    ]
    return Table(title, columns, rows, notes=notes)


_LISTED_CHECKS = 3
"""Up to this many failing checks are named one by one; beyond it, a large group of
one result is counted instead (``Licensee Name Match: Rejected, 13 checks Unknown``)."""


def check_title(name: str) -> str:
    """``territory_match[FR]`` -> ``Territory Match FR``; attribute names -> JSON names."""
    if name.startswith("territory_match[") and name.endswith("]"):
        return f"Territory Match {name[len('territory_match[') : -1]}"
    return _CHECK_TITLES.get(name, name)


def failing_checks(song: Song) -> Cell:
    """The checks of ``song`` that are not Accepted, coloured by result, compactly: named
    when few, counted by result when many."""
    checks = song.license_checks or LicenseChecks()
    results = checks.results()
    failing = checks.failing()
    if not failing:
        return Styled("all accepted", "green") if results else Styled("no checks", "dim")
    values = {str(value) for value in failing.values()}
    if len(failing) == len(results) and len(values) == 1:
        value = values.pop()
        return Styled(f"all {len(results)} {value}", _STYLES.get(value, "cyan"))
    groups: dict[str, list[str]] = {}
    for name, value in failing.items():
        groups.setdefault(str(value), []).append(name)
    parts: list[Segment] = []
    for value, names in groups.items():
        style = _STYLES.get(value, "cyan")
        if len(failing) > _LISTED_CHECKS and len(names) > 2:
            shown = [f"{len(names)} checks {value}"]  # one line, not fourteen names
        else:
            shown = [f"{check_title(name)}: {value}" for name in names]
        for text in shown:
            if parts:
                parts.append(", ")
            parts.append(Styled(text, style))
    return tuple(parts)


def _clock(seconds: float) -> str:
    whole = int(seconds)
    return f"{whole // 60}:{whole % 60:02d}"


def manual_verdict(song: Song) -> Cell | None:
    """A person's verdict on the song (``Manually Rejected: details``), or None."""
    manual = song.manual_status
    if manual is None:
        return None
    if isinstance(manual, ManualStatus):
        if manual.status is None and not manual.details:
            return None
        status = str(manual.status or "Manual status")
        text = f"{status}: {manual.details}" if manual.details else status
    else:
        status = text = str(manual)
    return Styled(text, _STYLES.get(status, "cyan"))


def _song_note(song: Song) -> Cell:
    """Under a song's row: its manual verdict, if any, then the checks not accepted."""
    manual = manual_verdict(song)
    checks = failing_checks(song)
    checks_parts = checks if isinstance(checks, tuple) else (checks,)
    if manual is None:
        return checks_parts
    if isinstance(manual, Styled) and manual.text.endswith("."):
        manual = Styled(manual.text[:-1], manual.style)  # "details.; all accepted" reads badly
    manual_parts = manual if isinstance(manual, tuple) else (manual,)
    return (*manual_parts, "; ", *checks_parts)


def verdict_table(job: VerificationJob) -> Table:
    """The job's songs (source, status); a note under each row holds the manual verdict
    and the checks not accepted, so the table fits 80 columns."""
    return recording_table(job.recording, f"Verdict of job #{job.id}")


def recording_table(recording: SoundRecording | None, subject: str) -> Table:
    """A recording's songs as in ``verdict_table`` (a job's, or an entry's), titled
    ``subject (N songs)``; a ``*`` marks a song with a manual status."""
    songs = [] if recording is None else recording.songs
    rows: list[list[Cell]] = []
    notes: dict[int, Cell] = {}
    for i, song in enumerate(songs, 1):
        status: Cell = status_cell(song.license_status)
        if song.manual_status is not None:
            status = (status_cell(song.license_status), Styled(" *", "bold"))
        rows.append(
            [
                str(i),
                f"{song.title} - {song.artists}",
                f"{_clock(song.start_time)}-{_clock(song.end_time)}",
                str((song.license_data and song.license_data.license_source) or "-"),
                status,
            ]
        )
        notes[i - 1] = _song_note(song)
    columns = [
        Column("#", "right"),
        Column("Song"),
        Column("Time"),
        Column("Source"),
        Column("Status"),
    ]
    caption = None
    if recording is not None:
        caption = f"recording {recording.status}, licence status {recording.license_status}"
        if any(song.manual_status is not None for song in songs):
            caption += "; * manual status"
    return Table(f"{subject} ({plural(len(songs), 'song')})", columns, rows, caption, notes=notes)


def manual_statuses(recording: SoundRecording | None) -> list[str]:
    """The manual verdicts on a recording's songs (``Manually Approved``, ...), in order;
    songs without one, or whose verdict was cleared, are left out."""
    found: list[str] = []
    for song in [] if recording is None else recording.songs:
        manual = song.manual_status
        if isinstance(manual, ManualStatus):
            if manual.status is not None:
                found.append(str(manual.status))
        elif manual:
            found.append(str(manual))
    return found


def output_file_cell(output: OutputFile) -> Cell:
    """An output file: what it is, its status, and its link once made."""
    kind = " ".join(str(part) for part in (output.operation, output.file_type) if part)
    status = status_cell(str(output.status))
    head: tuple[Segment, ...] = (f"{kind or 'file'} #{output.id} ", status)
    if output.download_url:
        return (*head, " ", output.download_url)
    return head


def job_summary(job: VerificationJob) -> Table:
    """The job's fields as a two-column table."""
    rows: list[list[Cell]] = [
        ["ID", str(job.id)],
        ["Name", job.name or "-"],
        ["Email", job.email or "-"],
        ["Organisation", f"#{job.organisation_id}"],
        ["Status", status_cell(job.status)],
        ["Type", str(job.type) if job.type else "-"],
        ["Territories", ", ".join(job.required_territories) or "-"],
        ["Dates", f"{day(job.start_date)} .. {day(job.end_date)}"],
        ["Tags", ", ".join(user_tags(job.tags)) or "-"],
        ["External id", job.external_id or "-"],
    ]
    if job.is_claimed is not None:
        rows.append(["Claimed", "yes" if job.is_claimed else "no"])
    if job.edit_url:
        rows.append(["Edit link", job.edit_url])
    if job.error_message:
        rows.append(["Error", Styled(job.error_message, "bold red")])
    if job.recording is not None:
        rows.append(["Licence", status_cell(job.recording.license_status)])
    for output in job.output_files:
        rows.append(["Output file", output_file_cell(output)])
    return Table(f"Verification job #{job.id}", [Column("Field"), Column("Value")], rows)
