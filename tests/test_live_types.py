"""Documents the live service may send (today's published types): both converter passes, nothing lost.

Every generated document parses with the fast (generated) pass and with the precise
(cattrs) pass, to equal models; ``to_dict`` gives the document back. A document changed
at any point is accepted by both passes or refused by both.
"""

from __future__ import annotations

import datetime as dt
import pickle
import traceback
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import svc_async
from svc_async import ResponseDecodeError, to_dict
from svc_async import converter as conv
from svc_async import models as m

from . import strategies as s
from .conftest import load

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _wire(doc: Any) -> Any:
    """The document as the client receives it (through real JSON bytes)."""
    return orjson.loads(orjson.dumps(doc))


def _absent_keys(model: Any) -> Any:
    """Every ``extra.absent`` record in a model tree, for comparing the two passes."""
    if isinstance(model, list):
        return [_absent_keys(x) for x in model]
    if not hasattr(model, "__attrs_attrs__"):
        return None
    out = {"": getattr(getattr(model, "extra", None), "absent", None)}
    for field in model.__attrs_attrs__:
        value = getattr(model, field.name)
        if isinstance(value, list) or hasattr(value, "__attrs_attrs__"):
            out[field.name] = _absent_keys(value)
    return out


def _both_passes(doc: Any, tp: Any) -> Any:
    fast = conv.get_converter().structure(doc, tp)
    precise = conv._precise().structure(doc, tp)
    assert fast == precise
    assert repr(fast) == repr(precise)
    assert _absent_keys(fast) == _absent_keys(precise)
    return fast


@pytest.mark.parametrize("name", sorted(s.DOCUMENTS))
def test_generated_documents_parse_with_both_passes_and_come_back(name: str) -> None:
    tp, documents = s.DOCUMENTS[name]

    @SETTINGS
    @given(doc=documents)
    def check(doc: Any) -> None:
        doc = _wire(doc)
        model = _both_passes(doc, tp)
        assert s.differences(doc, to_dict(model)) == []
        assert s.differences(doc, to_dict(conv._precise().structure(doc, tp))) == []

    check()


def _leaf_paths(doc: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(doc, dict):
        for key, value in doc.items():
            out += _leaf_paths(value, (*path, key))
    elif isinstance(doc, list):
        for index, value in enumerate(doc):
            out += _leaf_paths(value, (*path, index))
    return out


def _replace(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    doc[path[0]] = _replace(doc[path[0]], path[1:], value)
    return doc


@pytest.mark.parametrize("name", ["entries", "job", "search", "seasons"])
def test_both_passes_accept_and_refuse_the_same_documents(name: str) -> None:
    tp, documents = s.DOCUMENTS[name]

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(doc=documents, data=st.data())
    def check(doc: Any, data: st.DataObject) -> None:
        doc = _wire(doc)
        path = data.draw(st.sampled_from(_leaf_paths(doc)), label="path")
        doc = _replace(doc, path, data.draw(s.json_value, label="value"))
        outcomes = []
        for make in (conv.get_converter, conv._precise):
            try:
                outcomes.append(("ok", make().structure(doc, tp)))
            except Exception as exc:
                outcomes.append(("refused", type(exc).__name__))
        (fast, fast_value), (precise, precise_value) = outcomes
        assert fast == precise, (fast_value, precise_value)
        if fast == "ok":
            assert fast_value == precise_value
            assert to_dict(fast_value) == to_dict(precise_value)

    check()


def test_valid_documents_never_need_the_precise_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """If the fast pass refused valid documents, the precise one would quietly do the work."""

    def no_precise() -> Any:
        raise AssertionError("the precise converter was built for a valid document")

    monkeypatch.setattr(conv, "_precise", no_precise)
    for name, tp in _EXAMPLES:
        conv.structure(load(name), tp)

    @SETTINGS
    @given(doc=s.DOCUMENTS["entries"][1], job=s.DOCUMENTS["search"][1])
    def check(doc: Any, job: Any) -> None:
        conv.structure(_wire(doc), list[m.Entry])
        conv.structure(_wire(job), m.JobSearchResults)

    check()


_EXAMPLES = [
    ("get-my-organisations.response.json", list[m.Organisation]),
    ("get-seasons.response.json", list[m.Season]),
    ("get-events.response.json", list[m.Event]),
    ("get-event-entries.response-0.json", list[m.Entry]),
    ("get-event-entries.response-1.json", list[m.Entry]),
    ("get-event-entries.response-2.json", list[m.Entry]),
    ("get-season-entries.response-0.json", list[m.Entry]),
    ("create-verification-job.response.json", m.VerificationJob),
    ("get-verification-job.response.json", m.VerificationJob),
    ("search-verification-jobs.response.json", m.JobSearchResults),
]


@pytest.mark.parametrize(("name", "tp"), _EXAMPLES)
def test_every_published_example_comes_back_exactly(name: str, tp: Any) -> None:
    raw = load(name)
    model = _both_passes(raw, tp)
    assert s.differences(raw, to_dict(model)) == []


def _song(**changes: Any) -> dict[str, Any]:
    job = load("get-verification-job.response.json")
    song: dict[str, Any] = job["recording"]["songs"][0]
    song.update(changes)
    return song


def test_todays_song_shapes_parse() -> None:
    unchecked = conv.structure(
        _song(licenseData=None, licenseChecks=None, svcMixId=1234, manualStatus=None), m.Song
    )
    assert unchecked.license_data is None and unchecked.license_checks is None
    assert unchecked.svc_mix_id == 1234
    old = conv.structure(_song(svcMixId="mix-9", manualStatus="Manually Approved"), m.Song)
    assert old.svc_mix_id == "mix-9" and old.manual_status == "Manually Approved"
    manual = {"status": "Manually Rejected", "details": "wrong song"}
    rejected = conv.structure(_song(manualStatus=manual), m.Song)
    assert rejected.manual_status == m.ManualStatus(
        status=m.ManualStatusValue.MANUALLY_REJECTED, details="wrong song"
    )
    assert to_dict(rejected)["manualStatus"] == manual


@pytest.mark.parametrize(
    ("change", "path", "message"),
    [
        ({"manualStatus": 3}, "$.manualStatus", "expected an object or a string"),
        ({"manualStatus": {"status": 1, "details": ""}}, "$.manualStatus.status", "string"),
        ({"svcMixId": True}, "$.svcMixId", "expected a number or a string"),
        (
            {"licenseChecks": {"Publishing Arrangement Rights": 0}},
            "$.licenseChecks['Publishing Arrangement Rights']",
            "expected a string (CheckResult)",
        ),
    ],
)
def test_wrong_new_shapes_name_their_path(change: dict[str, Any], path: str, message: str) -> None:
    with pytest.raises(ResponseDecodeError) as info:
        conv.structure(_song(**change), m.Song)
    assert info.value.path == path and message in str(info.value)


def test_publishing_arrangement_rights_is_a_failing_check() -> None:
    checks = dict(_song()["licenseChecks"], **{"Publishing Arrangement Rights": "Rejected"})
    parsed = conv.structure(checks, m.LicenseChecks)
    assert parsed.publishing_arrangement_rights is m.CheckResult.REJECTED
    assert parsed.failing()["publishing_arrangement_rights"] is m.CheckResult.REJECTED
    assert parsed.extra == {}


def test_null_download_links_and_md5() -> None:
    entries = load("get-event-entries.response-0.json")
    entry = next(e for e in entries if e["soundRecording"])
    entry["soundRecording"]["md5Hash"] = "9e107d9d372bb6826bd81d3542a419d6"
    song = entry["soundRecording"]["songs"][0]
    song["licenseData"] = {
        "licenseSource": "Public Domain Music",
        "svcLicense": {"ref": "r", "downloadURL": None},
        "externalLicense": {"id": 1, "files": [{"id": 2, "downloadURL": None}]},
        "bespokeAgreement": None,
        "publicDomainProof": {
            "composers": [{"name": "J. S. Bach", "yearDied": 1750}],
            "iswc": None,
            "source": "IMSLP",
            "notes": None,
        },
    }
    parsed = conv.structure(entry, m.Entry)
    assert parsed.sound_recording is not None
    assert parsed.sound_recording.md5_hash == "9e107d9d372bb6826bd81d3542a419d6"
    data = parsed.sound_recording.songs[0].license_data
    assert data is not None and data.license_source is m.LicenseSource.PUBLIC_DOMAIN_MUSIC
    assert data.svc_license is not None and data.svc_license.download_url is None
    assert data.external_license is not None
    assert data.external_license.files[0].download_url is None
    assert data.public_domain_proof is not None
    assert data.public_domain_proof.composers[0] == m.Composer(name="J. S. Bach", year_died=1750)
    assert s.differences(entry, to_dict(parsed)) == []


def test_new_job_fields_and_output_files() -> None:
    job = load("get-verification-job.response.json")
    job.update(
        status="Processed",
        editURL="https://svc.example/jobs/4/edit?token=t",
        isClaimed=False,
        type="VOD",
        outputFileType="Audio",
        outputFiles=[
            {
                "id": 7,
                "verificationJobId": 4,
                "status": "Completed",
                "downloadURL": "https://files.example/muted.mp3?X-Amz-Signature=s",
                "operation": "Mute",
                "fileType": "Audio",
            }
        ],
    )
    parsed = conv.structure(job, m.VerificationJob)
    assert parsed.type is m.JobType.VOD and parsed.is_claimed is False
    assert parsed.edit_url == "https://svc.example/jobs/4/edit?token=t"
    assert parsed.output_file_type is m.OutputFileType.AUDIO
    (out,) = parsed.output_files
    assert out.status is m.OutputFileStatus.COMPLETED and out.is_ready
    assert out.operation is m.OutputFileOperation.MUTE and out.verification_job_id == 4
    assert parsed.is_finished and not parsed.failed
    assert s.differences(job, to_dict(parsed)) == []


@pytest.mark.parametrize(
    ("status", "finished"),
    [
        ("Created", False),
        ("Downloading", False),
        ("DetectingMusic", False),
        ("Matching", False),
        ("Matched", False),
        ("Processed", True),
        ("Submitted", True),
        ("Errored", True),
        ("Completed", True),
        ("Confirmed", True),
        ("SomethingNew", False),
    ],
)
def test_job_is_finished_on_both_vocabularies(status: str, finished: bool) -> None:
    job = m.VerificationJob(id=1, organisation_id=1, status=status)
    assert job.is_finished is finished
    errored = m.VerificationJob(id=1, organisation_id=1, status=status, error_message="boom")
    assert errored.is_finished and errored.failed


def test_only_current_statuses_are_sendable() -> None:
    assert [str(x) for x in m.CURRENT_JOB_STATUSES] == [
        "Created",
        "Downloading",
        "DetectingMusic",
        "Matching",
        "Matched",
        "Processed",
        "Submitted",
        "Errored",
    ]
    assert not m.LEGACY_JOB_STATUSES & set(m.CURRENT_JOB_STATUSES)
    assert set(m.JobStatus) == set(m.CURRENT_JOB_STATUSES) | m.LEGACY_JOB_STATUSES
    assert m.FINISHED_CURRENT_JOB_STATUSES == (
        m.JobStatus.PROCESSED,
        m.JobStatus.SUBMITTED,
        m.JobStatus.ERRORED,
    )
    assert m.LEGACY_JOB_STATUSES <= m.FINISHED_JOB_STATUSES


def test_search_answers_name_their_list_and_keep_it() -> None:
    page = load("search-verification-jobs.response.json")
    assert conv.structure(page, m.JobSearchResults).list_key == "jobs"
    today = {"results": page["jobs"], "count": page["count"]}
    parsed = conv.structure(today, m.JobSearchResults)
    assert parsed.list_key == "results" and [j.id for j in parsed.jobs] == [3, 4]
    assert s.differences(today, to_dict(parsed)) == []


def test_a_search_answer_without_a_list_is_a_decode_error() -> None:
    with pytest.raises(ResponseDecodeError) as info:
        conv.structure({"count": 3, "items": []}, m.JobSearchResults)
    assert info.value.path == "$"
    assert "'results'" in str(info.value) and "'jobs'" in str(info.value)
    with pytest.raises(ResponseDecodeError) as info:
        conv.structure({"results": [{"id": "x"}], "count": 1}, m.JobSearchResults)
    assert info.value.path == "$.results[0].id"


def test_unknown_keys_are_kept_at_any_depth() -> None:
    job = load("get-verification-job.response.json")
    job["reviewer"] = {"name": "Ana"}
    job["recording"]["songs"][0]["licenseChecks"]["Sync Rights"] = "Accepted"
    job["recording"]["songs"][0]["licenseData"]["externalLicense"]["files"][0]["size"] = 12
    parsed = conv.structure(job, m.VerificationJob)
    assert parsed.extra == {"reviewer": {"name": "Ana"}}
    assert parsed.recording is not None
    song = parsed.recording.songs[0]
    assert song.license_checks is not None
    assert song.license_checks.extra == {"Sync Rights": "Accepted"}
    assert song.license_data is not None and song.license_data.external_license is not None
    assert song.license_data.external_license.files[0].extra == {"size": 12}
    assert s.differences(job, to_dict(parsed)) == []


def test_extra_is_shared_when_empty_and_read_only() -> None:
    built = m.Organisation(id=1, name="x", logo=m.Logo(id=2))
    parsed = conv.structure(to_dict(built), m.Organisation)  # every key present, none unknown
    assert parsed == built
    assert parsed.extra == {} and parsed.extra is built.extra  # one shared empty mapping
    assert parsed.logo is not None and parsed.logo.extra is built.extra
    with pytest.raises(TypeError):
        built.extra["x"] = 1  # type: ignore[index]
    lossy = conv.structure({"id": 1, "name": "x", "z": 1}, m.Organisation)
    with pytest.raises(TypeError):
        lossy.extra.update(z=2)  # type: ignore[attr-defined]
    assert lossy.extra == {"z": 1}


def test_a_null_and_an_absent_key_stay_different() -> None:
    with_null = {"id": 1, "name": "Org", "parentId": None}
    without = {"id": 1, "name": "Org"}
    a = conv.structure(with_null, m.Organisation)
    b = conv.structure(without, m.Organisation)
    assert a == b  # the same organisation...
    assert to_dict(a) == with_null and to_dict(b) == without  # ...as each document had it
    built = m.Organisation(id=1, name="Org")
    assert set(to_dict(built)) >= {"parentId", "logo", "createdAt"}  # built by hand: every key
    import attrs

    renamed = attrs.evolve(b, name="New name")  # keeps extra, so the absent keys stay out
    assert to_dict(renamed) == {"id": 1, "name": "New name"}
    adopted = attrs.evolve(b, parent_id=7)  # ...unless given a value: then it is data
    assert to_dict(adopted) == {"id": 1, "name": "Org", "parentId": 7}


def test_numbers_keep_their_kind_and_integral_floats_are_integers() -> None:
    song = conv.structure(_song(startTime=12, endTime=30.5), m.Song)
    assert type(to_dict(song)["startTime"]) is int and to_dict(song)["endTime"] == 30.5
    job = conv.structure(
        dict(load("get-verification-job.response.json"), id=4.0), m.VerificationJob
    )
    assert job.id == 4 and type(job.id) is int
    with pytest.raises(ResponseDecodeError):
        conv.structure(dict(load("get-verification-job.response.json"), id=4.5), m.VerificationJob)


def test_a_check_that_is_none_is_left_out() -> None:
    """None means "the answer did not include this check" (job answers omit Master*)."""
    checks = m.LicenseChecks(licensee_name_match=m.CheckResult.ACCEPTED, territory_match=None)
    assert to_dict(checks) == {"Licensee Name Match": "Accepted"}
    assert conv.structure({"Valid Date": None}, m.LicenseChecks) == m.LicenseChecks()


def test_models_survive_pickle_with_their_extra() -> None:
    job = load("get-verification-job.response.json")
    job["futureField"] = [1, 2]
    parsed = conv.structure(job, m.VerificationJob)
    again = pickle.loads(pickle.dumps(parsed))
    assert again == parsed and again.extra == {"futureField": [1, 2]}
    assert to_dict(again) == to_dict(parsed)


def test_every_model_class_is_discovered() -> None:
    """A model added to models.py gets its camelCase names without being listed anywhere."""
    import attrs

    found = {c for c in vars(m).values() if isinstance(c, type) and attrs.has(c)}
    assert found == set(conv._MODELS)
    doc = {"id": 1, "verificationJobId": 2, "status": "Pending", "downloadURL": None}
    assert conv.get_converter().structure(doc, m.OutputFile).verification_job_id == 2


def test_generated_code_shows_in_tracebacks() -> None:
    fast = conv.get_converter().get_structure_hook(m.Logo)
    try:
        fast({"id": "seven"}, m.Logo)
    except Exception as exc:
        text = "".join(traceback.format_exception(exc))
    assert "fast structure Logo" in text
    assert "if type(v0) is not int" in text


def test_job_request_body_sends_nulls_and_leaves_out_what_is_unset() -> None:
    import attrs

    from .test_examples import example_request

    body = conv.unstructure(attrs.evolve(example_request(), email=None, external_id=None))
    assert body["email"] is None and body["externalId"] is None
    assert "type" not in body and "outputFile" not in body
    unset = m.JobRequest(
        name="n",
        email="a@b.example",
        organisation_id=1,
        audio_file_url="https://files.example/a.mp3",
        start_date=dt.date(2025, 1, 1),
        end_date=dt.date(2025, 1, 2),
    )
    assert conv.unstructure(unset)["externalId"] == ""
    vod = attrs.evolve(
        example_request(),
        type=m.JobType.VOD,
        output_file=m.OutputFileRequest(callback_url="https://app.example/muted"),
    )
    body = orjson.loads(orjson.dumps(conv.unstructure(vod)))
    assert body["type"] == "VOD"
    assert body["outputFile"] == {"operation": "Mute", "callbackURL": "https://app.example/muted"}
    typed = m.OutputFileRequest(file_type=m.OutputFileType.AUDIO)
    assert orjson.loads(orjson.dumps(conv.unstructure(typed))) == {
        "operation": "Mute",
        "fileType": "Audio",
    }


def test_timestamps_keep_sub_millisecond_precision() -> None:
    moment = dt.datetime(2025, 1, 2, 3, 4, 5, 123456, tzinfo=dt.UTC)
    assert conv.parse_timestamp(conv.format_timestamp(moment)) == moment
    assert conv.format_timestamp(moment.replace(microsecond=123000)).endswith(".123Z")


def test_to_dict_is_exported() -> None:
    assert svc_async.to_dict is to_dict
    assert "to_dict" in svc_async.__all__
