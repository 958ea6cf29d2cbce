"""How the suite runs, as the README and ARCHITECTURE.md say: the whole suite in four
processes, tests named on the command line (or picked with ``-k``) in pytest's own."""

from __future__ import annotations

import tomllib
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from . import conftest

ROOT = Path(__file__).parents[1]
TESTS = Path(__file__).parent


def _config(args: list[str], keyword: str = "") -> Any:
    return SimpleNamespace(args=args, option=SimpleNamespace(keyword=keyword))


def test_the_whole_suite_asks_xdist_for_its_workers() -> None:
    ini = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert "-n auto" in ini["addopts"]
    assert int(ini["timeout"]) >= 60


@pytest.mark.parametrize(
    ("args", "keyword", "workers"),
    [
        ([str(TESTS)], "", 4),  # `python -m pytest -q`: the testpaths
        ([str(TESTS) + "/"], "", 4),
        ([str(TESTS / "test_retry.py")], "", 0),
        ([str(TESTS / "test_retry.py") + "::test_x"], "", 0),
        ([str(TESTS)], "retry", 0),
    ],
)
def test_four_processes_for_the_whole_suite_one_for_named_tests(
    args: list[str], keyword: str, workers: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PYTEST_XDIST_AUTO_NUM_WORKERS", raising=False)
    assert conftest.pytest_xdist_auto_num_workers(_config(args, keyword)) == workers


def test_the_environment_decides_when_it_says(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_XDIST_AUTO_NUM_WORKERS", "2")
    assert conftest.pytest_xdist_auto_num_workers(_config([str(TESTS)])) == 2
