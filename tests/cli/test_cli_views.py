"""What the CLI and demo show of today's job fields: type, claim, links, manual verdicts."""

from __future__ import annotations

import datetime as dt
import io

import pytest

from svc_async.cli.args import build_parser
from svc_async.cli.render import Column, PlainRenderer, Table, text_of
from svc_async.cli.views import (
    failing_checks,
    job_summary,
    jobs_table,
    manual_statuses,
    manual_verdict,
    recording_table,
    verdict_table,
)
from svc_async.models import (
    CURRENT_JOB_STATUSES,
    CheckResult,
    JobStatus,
    JobType,
    LicenseChecks,
    ManualStatus,
    OutputFile,
    Song,
    SoundRecording,
    VerificationJob,
)

NOW = dt.datetime(2025, 3, 1, tzinfo=dt.UTC)
LINK = "https://files.example/out/muted.mp3?X-Amz-Signature=abc"


def _song(title: str, manual: ManualStatus | str | None) -> Song:
    return Song(
        title=title,
        artists="Some Artist",
        start_time=0,
        end_time=95,
        license_status="Unverified",
        manual_status=manual,
    )


def _job(**fields: object) -> VerificationJob:
    recording = SoundRecording(
        created_at=NOW,
        updated_at=NOW,
        download_url="https://files.example/rec.mp3",
        upload_file_name="rec.mp3",
        license_status="Partially Licensed",
        status="Complete",
        songs=[
            _song("Approved One", ManualStatus(status="Manually Approved", details="Cleared by phone")),
            _song("Old Style", "Manually Rejected"),
            _song("Untouched", None),
        ],
    )  # fmt: skip
    base: dict[str, object] = {
        "id": 41,
        "organisation_id": 1,
        "status": JobStatus.PROCESSED,
        "name": "Tigers VOD",
        "recording": recording,
    }
    base.update(fields)
    return VerificationJob(**base)  # type: ignore[arg-type]


def _draw(table: Table) -> str:
    out = io.StringIO()
    PlainRenderer(out).table(table)
    return out.getvalue()


def _fields(table: Table) -> dict[str, str]:
    return {text_of(row[0]): text_of(row[1]) for row in table.rows}


def test_summary_shows_type_claim_edit_link_and_output_files() -> None:
    job = _job(
        type=JobType.VOD,
        is_claimed=False,
        edit_url="https://app.example/jobs/41/edit?key=k",
        output_files=[
            OutputFile(id=7, verification_job_id=41, status="Completed", download_url=LINK,
                       operation="Mute", file_type="Audio"),
            OutputFile(id=8, verification_job_id=41, status="Pending", operation="Mute"),
        ],
    )  # fmt: skip
    table = job_summary(job)
    fields = _fields(table)
    assert fields["Type"] == "VOD"
    assert fields["Claimed"] == "no"
    assert fields["Edit link"] == "https://app.example/jobs/41/edit?key=k"
    files = [text_of(row[1]) for row in table.rows if text_of(row[0]) == "Output file"]
    assert files == [f"Mute Audio #7 Completed {LINK}", "Mute #8 Pending"]


def test_summary_leaves_out_what_the_service_did_not_say() -> None:
    fields = _fields(job_summary(_job()))
    assert fields["Type"] == "-"
    assert "Claimed" not in fields and "Edit link" not in fields
    assert "Output file" not in fields


def test_manual_statuses_in_both_forms_show_under_their_song() -> None:
    drawn = _draw(verdict_table(_job()))
    assert "Manually Approved: Cleared by phone" in drawn
    assert "Manually Rejected" in drawn
    assert "* manual status" in drawn
    lines = drawn.splitlines()
    approved = next(i for i, line in enumerate(lines) if "Approved One" in line)
    assert "Manually Approved" in lines[approved + 1]  # the note sits under its row
    assert all(len(line) <= 80 for line in lines)


def test_a_manual_note_ending_in_a_full_stop_joins_the_checks_cleanly() -> None:
    song = _song("Dotted", ManualStatus(status="Manually Rejected", details="Wrong team."))
    drawn = " ".join(_draw(recording_table(_job().recording, "Songs")).split())
    assert "Songs (3 songs)" in drawn
    drawn = " ".join(_draw(recording_table(_recording([song]), "Entry #9")).split())
    assert "Entry #9 (1 song)" in drawn
    assert "Manually Rejected: Wrong team; no checks" in drawn
    assert ".;" not in drawn


def _recording(songs: list[Song]) -> SoundRecording:
    rec = _job().recording
    assert rec is not None
    return SoundRecording(
        created_at=rec.created_at,
        updated_at=rec.updated_at,
        download_url=rec.download_url,
        upload_file_name=rec.upload_file_name,
        license_status=rec.license_status,
        status=rec.status,
        songs=songs,
    )


def test_manual_statuses_lists_each_verdict_and_skips_cleared_ones() -> None:
    songs = [
        _song("a", ManualStatus(status="Manually Approved", details="ok")),
        _song("b", "User Updated"),
        _song("c", None),
        _song("d", ManualStatus(status=None, details="cleared")),
        _song("e", ManualStatus(status="Manually Approved")),
    ]
    assert manual_statuses(_recording(songs)) == [
        "Manually Approved",
        "User Updated",
        "Manually Approved",
    ]
    assert manual_statuses(None) == []


def _checked(**results: CheckResult) -> Song:
    return Song(
        title="t",
        artists="a",
        start_time=0,
        end_time=1,
        license_status="Unverified",
        license_checks=LicenseChecks(**results),  # type: ignore[arg-type]
    )


def test_few_failing_checks_are_named_many_are_counted_by_result() -> None:
    few = _checked(
        licensee_name_match=CheckResult.REJECTED,
        title_matches=CheckResult.UNKNOWN,
        valid_date=CheckResult.ACCEPTED,
    )
    assert text_of(failing_checks(few)) == ("Licensee Name Match: Rejected, Title Matches: Unknown")
    many = _checked(
        licensee_name_match=CheckResult.REJECTED,
        title_matches=CheckResult.UNKNOWN,
        artists_match=CheckResult.UNKNOWN,
        valid_date=CheckResult.UNKNOWN,
        full_ownership=CheckResult.ACCEPTED,
    )
    assert text_of(failing_checks(many)) == "Licensee Name Match: Rejected, 3 checks Unknown"
    same = _checked(title_matches=CheckResult.UNKNOWN, valid_date=CheckResult.UNKNOWN)
    assert text_of(failing_checks(same)) == "all 2 Unknown"


@pytest.mark.parametrize(
    ("manual", "shown"),
    [
        (None, None),
        ("User Updated", "User Updated"),
        (ManualStatus(status="Manually Rejected", details=None), "Manually Rejected"),
        (ManualStatus(status=None, details=None), None),
    ],
)
def test_manual_verdict(manual: ManualStatus | str | None, shown: str | None) -> None:
    cell = manual_verdict(_song("x", manual))
    assert (None if cell is None else text_of(cell)) == shown


def test_jobs_table_has_the_type_and_puts_errors_under_the_row() -> None:
    jobs = [
        _job(type=JobType.ROUTINE),
        _job(id=42, status=JobStatus.ERRORED, error_message="Unable to decode audio " * 5),
    ]
    drawn = _draw(jobs_table(jobs))
    assert "Routine" in drawn
    assert all(len(line) <= 80 for line in drawn.splitlines())
    assert "Unable to decode audio" in drawn


def test_status_flag_takes_todays_statuses_in_any_case() -> None:
    args = build_parser().parse_args(
        ["jobs", "search", "--status", "processed", "--status", "Errored"]
    )
    assert args.status == ["Processed", "Errored"]


@pytest.mark.parametrize("status", ["completed", "Confirmed", "done"])
def test_unknown_or_legacy_status_is_refused_with_the_valid_list(
    status: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["jobs", "search", "--status", status])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"unknown job status {status!r}; choose from " in err
    assert ", ".join(CURRENT_JOB_STATUSES) in " ".join(err.split())


def test_plain_tables_wrap_long_titles_and_captions() -> None:
    title = "Songs of " + "A Very Long Team Name " * 5
    table = Table(title, [Column("#")], [["1"]], caption="note " * 30)
    lines = _draw(table).splitlines()
    assert all(len(line) <= 80 for line in lines)
    assert " ".join(lines).split().count("Very") == 5
