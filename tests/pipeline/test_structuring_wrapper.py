"""The garbage collector is the user's: the SDK never switches it, and runs each
structuring step inside the user's ``converter.wrap_structuring`` context when one is set."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

import orjson
import pytest

from svc_async import converter
from svc_async import models as m
from svc_async._pipeline.incremental import structure_chunks
from svc_async.errors import ResponseDecodeError

from .test_incremental import big_body, chunked


@pytest.fixture(autouse=True)
def _no_wrapper_left_behind() -> Iterator[None]:
    previous = converter.wrap_structuring(None)
    yield
    converter.wrap_structuring(previous)


@pytest.fixture
def gc_untouchable(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any switching of the collector fails the test."""

    def refuse() -> None:
        raise AssertionError("the SDK switched the process's garbage collector")

    for name in ("disable", "enable", "freeze", "unfreeze"):
        monkeypatch.setattr(gc, name, refuse)


async def test_by_default_structuring_leaves_the_collector_alone(gc_untouchable: None) -> None:
    body = big_body(300)
    assert len(converter.structure(body, list[m.Entry])) == 300
    streamed = orjson.dumps(body)
    got = await structure_chunks(chunked(streamed, 4096), m.Entry, slice_bytes=len(streamed) // 8)
    assert len(got) == 300


async def test_a_wrapper_runs_around_each_step_and_never_across_an_await() -> None:
    entered: list[bool] = []

    @contextlib.contextmanager
    def gc_paused() -> Iterator[None]:
        was_on = gc.isenabled()
        gc.disable()
        entered.append(was_on)
        try:
            yield
        finally:
            if was_on:
                gc.enable()

    assert converter.wrap_structuring(gc_paused) is None
    body = big_body(400)
    assert len(converter.structure(body, list[m.Entry])) == 400
    assert entered == [True] and gc.isenabled()

    entered.clear()
    streamed = orjson.dumps(body)
    got = await structure_chunks(
        chunked(streamed, 1 << 24), m.Entry, slice_bytes=len(streamed) // 10
    )
    assert len(got) == 400
    assert entered.count(True) >= 10  # each slice's step (its structure nests inside)
    assert gc.isenabled()  # between steps and after: as it was found
    assert converter.wrap_structuring(None) is gc_paused


def test_a_failing_fast_pass_leaves_the_wrapper_before_the_precise_one() -> None:
    inside = 0

    @contextlib.contextmanager
    def counted() -> Iterator[None]:
        nonlocal inside
        inside += 1
        try:
            yield
        finally:
            inside -= 1

    converter.wrap_structuring(counted)
    bad = big_body(2)
    bad[1]["id"] = "not a number"
    with pytest.raises(ResponseDecodeError, match=r"\$\[1\]\.id"):
        converter.structure(bad, list[m.Entry])
    assert inside == 0


def test_the_wrapper_must_be_callable() -> None:
    with pytest.raises(TypeError, match="callable"):
        converter.wrap_structuring(contextlib.nullcontext())  # type: ignore[arg-type]
