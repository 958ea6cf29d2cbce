"""MkDocs hook: a page pulls a README section in with ``<!-- readme: ## Heading -->``.

The README stays the one source of the prose and examples (its Python blocks are run
by ``tests/test_readme_blocks.py``); the site arranges its sections into pages. The
directive is replaced by the section's body (up to the next heading of the same or a
higher level; for the README's title, its introduction up to the first heading), its
subheadings moved to sit under the page heading the directive stands under.
``<!-- readme-intro: ## Heading -->`` takes only the section's introduction, up to its
first subheading (whose own pages pull them in). A heading that is not in the README (or
is there twice) fails the build.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError

README = Path(__file__).resolve().parents[2] / "README.md"
_DIRECTIVE = re.compile(
    r"^<!-- readme(?P<intro>-intro)?: (?P<hashes>#{1,6}) (?P<title>.+?) -->[ \t]*$",
    re.MULTILINE,
)
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_HEADING = re.compile(r"^(?P<hashes>#{1,6})\s+(?P<title>.+?)\s*$")


def _headings(lines: list[str]) -> list[tuple[int, int, str]]:
    """(line index, level, title) of every heading outside fenced code."""
    found: list[tuple[int, int, str]] = []
    fence: str | None = None
    for i, line in enumerate(lines):
        opening = _FENCE.match(line)
        if fence is not None:
            if opening and opening.group(1)[0] == fence[0] and len(opening.group(1)) >= len(fence):
                fence = None
            continue
        if opening:
            fence = opening.group(1)
            continue
        heading = _HEADING.match(line)
        if heading:
            found.append((i, len(heading["hashes"]), heading["title"]))
    return found


def section(text: str, level: int, title: str, *, under: int = 1, intro: bool = False) -> str:
    """The body of README section ``title`` at ``level``, its subheadings below ``under``.

    With ``intro``, only the text before its first subheading.
    """
    lines = text.splitlines()
    heads = _headings(lines)
    matches = [i for i, (_, lvl, t) in enumerate(heads) if lvl == level and t == title]
    if len(matches) != 1:
        known = ", ".join(f"{'#' * lvl} {t}" for _, lvl, t in heads if lvl <= 3)
        raise PluginError(f"README.md has {len(matches)} '{'#' * level} {title}'; it has: {known}")
    start_index = matches[0]
    start = heads[start_index][0]
    end = len(lines)
    stop = 6 if level == 1 or intro else level  # the title's section: its introduction
    for line_no, lvl, _ in heads[start_index + 1 :]:
        if lvl <= stop:
            end = line_no
            break
    inner = {line_no: lvl for line_no, lvl, _ in heads}
    out: list[str] = []
    for i in range(start + 1, end):
        if i in inner:
            hashes, rest = lines[i].split(" ", 1)
            out.append("#" * min(6, len(hashes) - level + under) + " " + rest)
        else:
            out.append(lines[i])
    return "\n".join(out).strip("\n") + "\n"


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    """Replace each directive with its README section."""
    if "<!-- readme" not in markdown:
        return markdown
    text = README.read_text(encoding="utf-8")

    def include(match: re.Match[str]) -> str:
        above = _headings(markdown[: match.start()].splitlines())
        under = above[-1][1] if above else 1
        return section(
            text, len(match["hashes"]), match["title"], under=under, intro=bool(match["intro"])
        )

    return _DIRECTIVE.sub(include, markdown)
