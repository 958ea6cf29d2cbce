"""Exact JSON: integers beyond 64 bits kept, nesting judged at one depth on every Python."""

from __future__ import annotations

import orjson

from svc_async._core.exact_json import MAX_EXACT_DEPTH, has_long_number, loads_exact, too_deep

BIG = 2**70 + 1


def _nested(depth: int) -> bytes:
    return b"[" * depth + str(BIG).encode() + b"]" * depth


def test_big_integers_come_back_exact_where_orjson_gives_a_float() -> None:
    body = b'{"id": %d}' % BIG
    assert has_long_number(body)
    assert isinstance(orjson.loads(body)["id"], float)
    assert loads_exact(body) == {"id": BIG}


def test_the_deepest_allowed_nesting_is_read_and_one_more_level_is_refused() -> None:
    assert not too_deep(_nested(MAX_EXACT_DEPTH))
    data = loads_exact(_nested(MAX_EXACT_DEPTH))
    for _ in range(MAX_EXACT_DEPTH):
        data = data[0]
    assert data == BIG
    assert too_deep(_nested(MAX_EXACT_DEPTH + 1))


def test_brackets_inside_strings_do_not_count_as_nesting() -> None:
    text = '"' + "[{" * 2000 + '\\"' + "]" + '"'
    body = ('{"s": ' + text + ', "n": ' + str(BIG) + "}").encode()
    assert not too_deep(body)
    assert loads_exact(body)["n"] == BIG


def test_objects_and_arrays_both_count() -> None:
    depth = MAX_EXACT_DEPTH // 2 + 1
    body = b'{"a": [' * depth + str(BIG).encode() + b"]}" * depth
    assert too_deep(body)
