"""A transport's settings are checked when it is made: a wrong type is a ``TypeError``,
a wrong value a ``ValueError``, each naming the setting, before anything is sent. They
were taken as given, to fail at the first send as a ``TransportError`` (``limit="10"``),
hang every send until its timeout (``limit=-1``), read the environment's proxy on a
truthy ``trust_env="no"``, or aim at a host made of a number (``proxy=123``)."""

from __future__ import annotations

from typing import Any

import pytest

from svc_async import AiohttpTransport, HttpxTransport, MockTransport, Response

KINDS = {"aiohttp": AiohttpTransport, "httpx": HttpxTransport}

WRONG_TYPES = [
    ("max_body_size", "10"),
    ("max_body_size", None),
    ("max_body_size", True),
    ("max_body_size", 1.5),
    ("limit", "10"),
    ("limit", 2.0),
    ("keepalive_timeout", "15"),
    ("keepalive_timeout", True),
    ("trust_env", "no"),
    ("trust_env", 0),
    ("proxy", 123),
    ("proxy", b"http://proxy:3128"),
]
WRONG_VALUES = [
    ("max_body_size", 0),
    ("max_body_size", -1),
    ("limit", -1),
    ("keepalive_timeout", -1),
    ("keepalive_timeout", float("nan")),
]


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize(("name", "value"), WRONG_TYPES, ids=repr)
def test_a_setting_of_the_wrong_type_is_a_type_error(kind: str, name: str, value: Any) -> None:
    with pytest.raises(TypeError, match=name):
        KINDS[kind](**{name: value})


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize(("name", "value"), WRONG_VALUES, ids=repr)
def test_a_setting_out_of_range_is_a_value_error(kind: str, name: str, value: Any) -> None:
    with pytest.raises(ValueError, match=name):
        KINDS[kind](**{name: value})


@pytest.mark.parametrize(("value", "error"), [(-1, ValueError), ("1", TypeError)])
def test_aiohttp_s_limit_per_host_is_checked_too(value: Any, error: type[Exception]) -> None:
    with pytest.raises(error, match="limit_per_host"):
        AiohttpTransport(limit_per_host=value)


@pytest.mark.parametrize(("value", "error"), [("1", TypeError), (True, TypeError), (0, ValueError)])
def test_the_mock_s_max_body_size_is_checked_the_same(value: Any, error: type[Exception]) -> None:
    with pytest.raises(error, match="max_body_size"):
        MockTransport(lambda request: Response(200), max_body_size=value)


@pytest.mark.parametrize("kind", list(KINDS))
def test_good_settings_pass(kind: str) -> None:
    KINDS[kind](limit=0, keepalive_timeout=0, max_body_size=1, trust_env=False)
    KINDS[kind](limit=10, keepalive_timeout=2.5, proxy="http://proxy:3128")
