"""What the CLI and demo show of today's job fields: type, claim, links, manual verdicts."""

from __future__ import annotations

import datetime as dt
import io

import pytest

from svc_async.cli.args import build_parser
from svc_async.cli.render import PlainRenderer, Table, text_of
from svc_async.cli.views import job_summary, jobs_table, manual_verdict, verdict_table
from svc_async.models import (
    CURRENT_JOB_STATUSES,
    JobStatus,
    JobType,
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
