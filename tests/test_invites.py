"""Pre-filled signup links: encoding, reserved keys, the token kept, bad input refused."""

from __future__ import annotations

import datetime as dt
import urllib.parse

import pytest

from svc_async import Client, Event, Season, SignupField
from svc_async.invites import RESERVED_KEYS, invite_link
from svc_async.testing import FakeService

BASE = "https://verify.example/my-events/event/18/invite?token=2231e83a799236929a78757e7436277b"
DAY = dt.datetime(2025, 3, 1, tzinfo=dt.UTC)


def _event(invite_url: str | None = BASE, keys: tuple[str | None, ...] = ()) -> Event:
    fields = [
        SignupField(id=i + 1, question=f"Q{i}", type="shortAnswer", key=key)
        for i, key in enumerate(keys)
    ]
    return Event(
        id=18,
        organisation_id=1,
        title="Spring Open",
        start_date=DAY,
        end_date=DAY,
        invite_url=invite_url,
        signup_fields=fields,
    )


def _query(url: str) -> list[tuple[str, str]]:
    return urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query, keep_blank_values=True)


def test_fields_name_and_email_are_added_and_the_token_kept() -> None:
    link = invite_link(
        _event(), {"uniqueID": "12345678"}, name="Ava Smith", email="ava@club.example"
    )
    assert link.startswith(BASE + "&")
    assert _query(link) == [
        ("token", "2231e83a799236929a78757e7436277b"),
        ("uniqueID", "12345678"),
        ("entryName", "Ava Smith"),
        ("entryEmail", "ava@club.example"),
    ]


def test_values_are_encoded_like_encode_uri_component() -> None:
    link = invite_link(BASE, {"team": "Ava & Bo = #1 / 100%+ ü"})
    raw = link.split("&team=", 1)[1]
    assert raw == "Ava%20%26%20Bo%20%3D%20%231%20%2F%20100%25%2B%20%C3%BC"
    assert dict(_query(link))["team"] == "Ava & Bo = #1 / 100%+ ü"


def test_keys_are_encoded_too_and_ints_are_accepted() -> None:
    link = invite_link(BASE, {"club id": 42})
    assert link.endswith("&club%20id=42")


@pytest.mark.parametrize("key", sorted(RESERVED_KEYS))
def test_reserved_keys_are_refused(key: str) -> None:
    with pytest.raises(ValueError, match=rf"fields\['{key}'\].*reserved"):
        invite_link(BASE, {key: "x"})


def test_the_token_is_kept_byte_for_byte() -> None:
    odd = "https://verify.example/invite?token=a%2Bb+c&ref=x#section"
    link = invite_link(odd, {"uniqueID": "7"})
    assert link == "https://verify.example/invite?token=a%2Bb+c&ref=x&uniqueID=7#section"


def test_an_existing_parameter_of_the_same_name_is_replaced() -> None:
    link = invite_link(BASE + "&uniqueID=old&entryName=Old", {"uniqueID": "new"}, name="New")
    assert _query(link) == [
        ("token", "2231e83a799236929a78757e7436277b"),
        ("uniqueID", "new"),
        ("entryName", "New"),
    ]


def test_no_parameters_gives_the_invite_url_unchanged() -> None:
    assert invite_link(_event()) == BASE


def test_a_season_works_like_an_event() -> None:
    season = Season(
        id=3,
        organisation_id=1,
        title="2025",
        start_date=DAY,
        end_date=DAY,
        invite_url="https://verify.example/seasons/3/invite?token=abc",
    )
    assert invite_link(season, name="Bo") == (
        "https://verify.example/seasons/3/invite?token=abc&entryName=Bo"
    )


def test_keys_the_target_does_not_declare_are_refused_unless_unchecked() -> None:
    event = _event(keys=("uniqueID", None, "division"))
    assert "division=Senior" in invite_link(event, {"division": "Senior"})
    with pytest.raises(ValueError, match=r"fields\['divison'\].*known: division, uniqueID"):
        invite_link(event, {"divison": "Senior"})
    assert "divison=Senior" in invite_link(event, {"divison": "Senior"}, check_keys=False)
    # A target that lists no keyed fields cannot be checked: any key goes.
    assert "anything=1" in invite_link(_event(keys=(None,)), {"anything": "1"})


def test_bad_input_is_refused_naming_the_argument_without_leaking_the_token() -> None:
    with pytest.raises(ValueError, match="Event 18 has no invite_url"):
        invite_link(_event(invite_url=None))
    with pytest.raises(ValueError, match="not an absolute http") as caught:
        invite_link("{{lvsURL}}/my-events/event/18/invite?token=2231e83a7992")
    assert "2231e83a7992" not in str(caught.value)
    with pytest.raises(TypeError, match="target must be an Event"):
        invite_link(18)
    with pytest.raises(TypeError, match="fields must be a mapping"):
        invite_link(BASE, [("uniqueID", "1")])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"fields\['uniqueID'\] must be a str"):
        invite_link(BASE, {"uniqueID": ["a", "b"]})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match=r"fields\['flag'\] must be a str"):
        invite_link(BASE, {"flag": True})
    with pytest.raises(ValueError, match="email must be a valid email address"):
        invite_link(BASE, email="not an email")
    with pytest.raises(ValueError, match="name must not be empty"):
        invite_link(BASE, name=" ")


async def test_a_fake_service_event_invite_link_keeps_its_token() -> None:
    fake = FakeService()
    async with Client(
        "http://fake.invalid", token=FakeService.DEFAULT_TOKEN, transport=fake.transport()
    ) as svc:
        events = await svc.events.list()
    event = next(e for e in events if e.invite_url)
    link = invite_link(event, {"uniqueID": "A 1"}, name="Zoë", check_keys=False)
    token = dict(_query(event.invite_url or ""))["token"]
    assert dict(_query(link)) == {"token": token, "uniqueID": "A 1", "entryName": "Zoë"}
    assert link.startswith(event.invite_url or "")


def test_the_readme_example() -> None:
    event = _event(keys=("uniqueID", "division"))
    link = invite_link(
        event,
        {"uniqueID": "12345678", "division": "Senior Elite"},
        name="Ava Smith",
        email="ava@club.example",
    )
    assert link == (
        BASE + "&uniqueID=12345678&division=Senior%20Elite"
        "&entryName=Ava%20Smith&entryEmail=ava%40club.example"
    )
