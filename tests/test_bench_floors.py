"""The floors ``bench_paired`` judges by are the ones its docstring and the issue state."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.mark.parametrize(
    ("body", "candidate", "floor"),
    [("small", "sdk", 0.85), ("small", "sdk+pacing", 0.80), ("461 entries", "sdk", 0.9)],
)
def test_each_pair_is_judged_by_its_own_floor(body: str, candidate: str, floor: float) -> None:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import bench_paired as bp
    finally:
        sys.path.remove(str(BENCHMARKS))
    # Every round at 0.87 of the ceiling: above the small floors, below the big one.
    samples = [(0.87, 1.0, 0.87, 1.0)] * 8
    _, figure = bp.summarise(body, candidate, 32, 100, samples)
    assert figure["target"] == f">= {floor}"
    assert figure["met"] is (floor <= 0.87)
