"""Static type test: ``structure`` returns what it was asked for (``mypy --strict tests/typing``).

Nothing here runs under pytest; mypy fails if an endpoint's result type collapses to Any.
"""

from __future__ import annotations

from typing import Any, assert_type

from svc_async import (
    Entry,
    JobSearchResults,
    ManualStatus,
    Organisation,
    OutputFile,
    VerificationJob,
    to_dict,
)
from svc_async.converter import structure


def check(data: Any) -> None:
    assert_type(structure(data, VerificationJob), VerificationJob)
    assert_type(structure(data, JobSearchResults), JobSearchResults)
    assert_type(structure(data, OutputFile, status=200), OutputFile)
    assert_type(structure(data, list[Entry]), list[Entry])
    assert_type(structure(data, list[Organisation]), list[Organisation])
    job = structure(data, VerificationJob)
    assert_type(job.output_files, list[OutputFile])
    assert_type(job.is_finished, bool)
    song = structure(data, list[Entry])[0].sound_recording
    if song is not None and song.songs:
        assert_type(song.songs[0].manual_status, ManualStatus | str | None)
        assert_type(song.songs[0].svc_mix_id, int | str | None)
    assert_type(to_dict(job), Any)
