"""The documentation site's build hooks: the Architecture page, benchmark charts."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

pytest.importorskip("mkdocs", reason="the docs extra is not installed")

ROOT = Path(__file__).parents[1]


def _hook(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "docs" / "_hooks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bench_figures = _hook("bench_figures")
architecture = _hook("architecture")


def test_pages_are_written_not_pulled_from_the_readme() -> None:
    """The README-sections hook is retired: a leftover directive would render as nothing."""
    for page in (ROOT / "docs").rglob("*.md"):
        assert "<!-- readme" not in page.read_text(encoding="utf-8"), page


def test_architecture_page_links_to_repository_files_become_text() -> None:
    text = (
        "[the pipeline](svc_async/pipeline.py), [`README.md`](README.md), "
        "[aiohttp](https://docs.aiohttp.org), [below](#layers), ![x](img.png)"
    )
    assert architecture.unlink_repository_paths(text) == (
        "the pipeline (`svc_async/pipeline.py`), `README.md`, "
        "[aiohttp](https://docs.aiohttp.org), [below](#layers), ![x](img.png)"
    )


class _Config:
    def __init__(self, nav: list[Any]) -> None:
        self.nav = nav


def test_architecture_page_is_in_the_nav_only_when_the_file_exists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nav: list[Any] = [{"Home": "index.md"}, {"Guides": ["guides/index.md"]}, {"API": []}]
    monkeypatch.setattr(architecture, "SOURCE", tmp_path / "ARCHITECTURE.md")
    config: Any = _Config(list(nav))
    assert architecture.on_config(config).nav == nav
    (tmp_path / "ARCHITECTURE.md").write_text("# Architecture\n", encoding="utf-8")
    config = _Config(list(nav))
    assert architecture.on_config(config).nav == [
        *nav[:2],
        {"Architecture": "architecture.md"},
        nav[2],
    ]
    assert architecture.on_config(config).nav.count({"Architecture": "architecture.md"}) == 1


ROWS = [
    {
        "bench": "b",
        "figure": "sdk / raw",
        "value": 0.7,
        "unit": "x",
        "target": ">= 0.9",
        "met": False,
    },
    {
        "bench": "b",
        "figure": "pydantic / raw",
        "value": 0.2,
        "unit": "x",
        "target": None,
        "met": None,
    },
    {"bench": "b", "figure": "raw time", "value": 3.5, "unit": "ms", "target": None, "met": None},
]


def test_chart_draws_ratio_bars_baseline_and_targets() -> None:
    svg = bench_figures.chart("b", ROWS)
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    assert svg.count("<rect") == 2  # the ms figure is a table row only
    assert 'fill="#e65100"' in svg  # missed target
    assert 'fill="#9e9e9e"' in svg  # a peer
    assert "target &gt;= 0.9" in svg
    assert "baseline 1.0" in svg


def test_the_sdks_own_figures_are_blue_peers_grey() -> None:
    assert bench_figures._colour("sdk / pydantic @1000") == "#3f51b5"
    assert bench_figures._colour("added import time: svc_async / aiohttp") == "#3f51b5"
    assert bench_figures._colour("pydantic / orjson @100") == "#9e9e9e"
    assert bench_figures._colour("small c=1: httpx throughput / aiohttp") == "#9e9e9e"
    assert bench_figures._colour("big c=1: structure alone time / aiohttp") == "#9e9e9e"


def test_render_lists_every_figure_and_says_where_from() -> None:
    out = bench_figures.render({"quick": True, "figures": ROWS}, "a test")
    assert out.startswith("Figures from a test; a quick run")
    assert "| raw time | 3.5 | ms |  |  |" in out
    assert "| sdk / raw | 0.7 | x | >= 0.9 | **no** |" in out


def test_fresh_results_win_over_the_snapshot(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(bench_figures, "RESULTS", tmp_path)
    document, source = bench_figures.load()
    assert "snapshot" in source and document["figures"]
    (tmp_path / "decode.json").write_text(json.dumps({"summary": ROWS[:1]}))
    document, source = bench_figures.load()
    assert document == {"figures": [{**ROWS[0], "bench": "decode"}]}


def test_the_committed_snapshot_has_figures_for_every_benchmark() -> None:
    snapshot = json.loads((ROOT / "docs" / "figures" / "benchmarks.json").read_text())
    benches = {row["bench"] for row in snapshot["figures"]}
    scripts = {p.stem.removeprefix("bench_") for p in (ROOT / "benchmarks").glob("bench_*.py")}
    assert benches <= scripts
    assert len(benches) >= 5
    assert all(re.match(r"^[a-z]+$", b) for b in benches)
