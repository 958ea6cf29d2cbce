"""MkDocs hook: the performance page's figures and bar charts, from the benchmarks' JSON.

``<!-- bench-figures -->`` on a page becomes, per benchmark, an SVG bar chart of its
ratio figures (the baseline 1.0 and any target drawn in) and a table of every figure.
The numbers come from ``benchmarks/results/`` when ``nox -s bench`` has written them
(``summary.json``, else each script's own file), otherwise from the snapshot committed
at ``docs/figures/benchmarks.json`` (a copy of a ``summary.json``). The SVG is written
inline by hand: no plotting library at build time.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
SNAPSHOT = ROOT / "docs" / "figures" / "benchmarks.json"
MARK = "<!-- bench-figures -->"

_TARGET = re.compile(r"^\s*(?P<op><=|>=|<|>)\s*(?P<value>[0-9.]+)")
_PEER = re.compile(r"\b(msgspec|pydantic|httpx)\b")
_WIDTH, _LABEL, _ROW, _TOP = 760, 360, 22, 26


def load() -> tuple[dict[str, Any], str]:
    """The summary document to show and a sentence saying where it came from."""
    summary = RESULTS / "summary.json"
    if summary.exists():
        return json.loads(summary.read_text()), f"`{summary.relative_to(ROOT)}` (this build)"
    figures: list[dict[str, Any]] = []
    for path in sorted(RESULTS.glob("*.json")):
        result = json.loads(path.read_text())
        figures += [{**row, "bench": path.stem} for row in result.get("summary") or []]
    if figures:
        return {"figures": figures}, "`benchmarks/results/*.json` (this build)"
    if not SNAPSHOT.exists():
        raise PluginError(f"no benchmark results and no snapshot at {SNAPSHOT}")
    return json.loads(SNAPSHOT.read_text()), f"the snapshot `{SNAPSHOT.relative_to(ROOT)}`"


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _target(text: Any) -> tuple[str, float] | None:
    match = _TARGET.match(str(text or ""))
    return (match["op"], float(match["value"])) if match else None


def _colour(figure: str) -> str:
    """Grey for a peer's figure or a baseline's part alone, blue for the SDK's own."""
    text = figure.lower()
    peer = _PEER.search(text) is not None and "sdk" not in text
    return "#9e9e9e" if peer or " alone" in text else "#3f51b5"


def chart(bench: str, rows: list[dict[str, Any]]) -> str:
    """A horizontal bar chart (inline SVG) of the rows whose unit is a ratio (``x``)."""
    bars = [r for r in rows if r.get("unit") == "x" and _number(r.get("value")) is not None]
    if not bars:
        return ""
    targets = [t[1] for r in bars if (t := _target(r.get("target")))]
    top = max([1.0, *targets, *(float(r["value"]) for r in bars)]) * 1.08
    span = _WIDTH - _LABEL - 60
    height = _TOP + _ROW * len(bars) + 10

    def x(value: float) -> float:
        return _LABEL + span * value / top

    parts = [
        f'<svg class="bench-chart" role="img" viewBox="0 0 {_WIDTH} {height}" '
        f'width="100%" xmlns="http://www.w3.org/2000/svg" font-family="sans-serif" '
        f'font-size="12">',
        f"<title>{html.escape(bench)}: ratios against the same run's baseline</title>",
        f'<line x1="{x(1):.1f}" y1="{_TOP - 8}" x2="{x(1):.1f}" y2="{height - 6}" '
        f'stroke="#888" stroke-dasharray="3 3"/>',
        f'<text x="{x(1):.1f}" y="{_TOP - 12}" text-anchor="middle" fill="#666">'
        f"baseline 1.0</text>",
    ]
    for i, row in enumerate(bars):
        value = float(row["value"])
        y = _TOP + i * _ROW
        colour = "#e65100" if row.get("met") is False else _colour(str(row["figure"]))
        parts.append(
            f'<text x="{_LABEL - 8}" y="{y + 14}" text-anchor="end">'
            f"{html.escape(str(row['figure']))}</text>"
            f'<rect x="{_LABEL}" y="{y + 3}" width="{max(1.0, x(value) - _LABEL):.1f}" '
            f'height="{_ROW - 7}" fill="{colour}"/>'
            f'<text x="{x(value) + 4:.1f}" y="{y + 14}" paint-order="stroke" '
            f'stroke="#fff" stroke-width="3">{value:g}</text>'
        )
        target = _target(row.get("target"))
        if target:
            tx = x(target[1])
            parts.append(
                f'<line x1="{tx:.1f}" y1="{y + 1}" x2="{tx:.1f}" y2="{y + _ROW - 2}" '
                f'stroke="#2e7d32" stroke-width="2"><title>target {html.escape(target[0])} '
                f"{target[1]:g}</title></line>"
            )
    parts.append("</svg>")
    return "".join(parts)


def table(rows: list[dict[str, Any]]) -> str:
    """Every figure of one benchmark as a Markdown table."""
    out = ["| figure | value | unit | target | met |", "|---|---|---|---|---|"]
    for row in rows:
        met = {True: "yes", False: "**no**", None: ""}.get(row.get("met"), str(row.get("met")))
        value = row.get("value")
        shown = f"{value:g}" if _number(value) is not None else str(value)
        cells = [row.get("figure"), shown, row.get("unit") or "", row.get("target") or "", met]
        out.append("| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |")
    return "\n".join(out)


def render(document: dict[str, Any], source: str) -> str:
    """The Markdown that replaces the marker."""
    by_bench: dict[str, list[dict[str, Any]]] = {}
    for row in document.get("figures", []):
        by_bench.setdefault(str(row.get("bench", "?")), []).append(row)
    machine = document.get("machine") or {}
    facts = [f"Figures from {source}"]
    if "quick" in document:
        facts.append("a quick run (fewer sizes and repeats)" if document["quick"] else "a full run")
    if isinstance(machine, dict) and machine:
        packages = machine.get("packages") or {}
        facts.append(
            ", ".join(
                [f"Python {machine.get('python', '?')}", f"{machine.get('cpus', '?')} CPUs"]
                + [f"{name} {version}" for name, version in sorted(packages.items())]
            )
        )
    if document.get("taken"):
        facts.append(f"taken {document['taken']}")
    lines = ["; ".join(facts) + ".", ""]
    lines.append(
        "Bars are ratios against a baseline measured in the same run (dashed line: 1.0): "
        "the SDK's in blue, its peers' in grey; a green tick marks a target, an orange "
        "bar a missed one."
    )
    for bench, rows in sorted(by_bench.items()):
        lines += ["", f"### {bench}", "", chart(bench, rows), ""]
        lines += ['<details markdown="1"><summary>Every figure</summary>', "", table(rows)]
        lines += ["", "</details>"]
    return "\n".join(lines) + "\n"


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    """Replace the marker with the figures."""
    if MARK not in markdown:
        return markdown
    document, source = load()
    return markdown.replace(MARK, render(document, source))
