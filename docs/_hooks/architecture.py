"""MkDocs hook: the repository's ``ARCHITECTURE.md`` as the site's "Architecture" page.

The page exists only when the file does: its nav entry is added at build time, so a
checkout without the file still builds with ``--strict``. Links in it that point into the
repository rather than at a page of the site (``svc_async/pipeline.py``, ``README.md``)
are kept as their text with the path in code, since the site has no such page.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

SOURCE = Path(__file__).resolve().parents[2] / "ARCHITECTURE.md"
PAGE = "architecture.md"
TITLE = "Architecture"
_LINK = re.compile(r"(?<!!)\[(?P<text>[^\]]+)\]\((?P<target>[^)\s]+)\)")


def on_config(config: MkDocsConfig, **kwargs: Any) -> MkDocsConfig:
    """Add the page to the nav, after the guides, when ``ARCHITECTURE.md`` exists."""
    nav = config.nav
    if SOURCE.is_file() and nav is not None and not any(_names(item, PAGE) for item in nav):
        at = next((i + 1 for i, item in enumerate(nav) if _is(item, "Guides")), len(nav))
        nav.insert(at, {TITLE: PAGE})
    return config


def on_files(files: Files, config: MkDocsConfig, **kwargs: Any) -> Files:
    """Serve ``ARCHITECTURE.md`` as ``architecture.md``, its repository links unlinked."""
    if SOURCE.is_file() and files.get_file_from_path(PAGE) is None:
        text = unlink_repository_paths(SOURCE.read_text(encoding="utf-8"))
        files.append(File.generated(config, PAGE, content=text))
    return files


def unlink_repository_paths(text: str) -> str:
    """Turn links to relative paths (not web addresses or anchors) into plain text."""

    def plain(match: re.Match[str]) -> str:
        target = match["target"]
        if re.match(r"^[a-z][a-z0-9+.-]*:|^#", target, re.IGNORECASE):
            return match[0]
        text = match["text"]
        return text if target.strip("./") in text else f"{text} (`{target}`)"

    return _LINK.sub(plain, text)


def _is(item: Any, title: str) -> bool:
    return isinstance(item, dict) and title in item


def _names(item: Any, page: str) -> bool:
    if isinstance(item, str):
        return item == page
    if isinstance(item, dict):
        return any(_names(value, page) for value in item.values())
    if isinstance(item, list):
        return any(_names(value, page) for value in item)
    return False
