"""Build hook: the package's long description is README.md, made to read well anywhere.

README.md links to files of the repository (``ARCHITECTURE.md``, ``docs/...``) by
relative paths, which break wherever the long description is shown outside the
repository (a package index, ``pip show``). The project has no public repository or
documentation host yet, so a relative link becomes its text followed by the path in
the source tree (shipped in the sdist); set ``BASE_URL`` once there is a public home
and the links point there instead.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

BASE_URL: str | None = None
"""Where the repository's files can be read online (e.g. a forge's blob URL), or None."""

_INLINE = re.compile(r"(!?)\[([^\]\n]*)\]\(([^)\s]+)\)")
_DEFINITION = re.compile(r"^\[([^\]\n]+)\]:[ \t]*(\S+)[ \t]*$", re.MULTILINE)
_ABSOLUTE = re.compile(r"^(?:[a-z][a-z0-9+.-]*:|#|/)", re.IGNORECASE)


def _relative(target: str) -> bool:
    return not _ABSOLUTE.match(target)


def public_readme(text: str, base_url: str | None = BASE_URL) -> str:
    """``text`` with every relative link made absolute (``base_url``) or plain text."""

    def inline(match: re.Match[str]) -> str:
        bang, label, target = match.groups()
        if not _relative(target):
            return match.group(0)
        if base_url is not None:
            return f"{bang}[{label}]({base_url.rstrip('/')}/{target})"
        if bang:  # an image that cannot be shown: its alt text
            return label
        shown = label.strip("`*_ ")
        if shown == target:
            return f"{label} (in the source tree)"
        return f"{label} (`{target}` in the source tree)"

    def definition(match: re.Match[str]) -> str:
        label, target = match.groups()
        if not _relative(target):
            return match.group(0)
        if base_url is not None:
            return f"[{label}]: {base_url.rstrip('/')}/{target}"
        return f"[{label}]: #"

    return _DEFINITION.sub(definition, _INLINE.sub(inline, text))


try:
    from hatchling.metadata.plugin.interface import MetadataHookInterface
except ImportError:  # imported for public_readme alone (tests) without hatchling
    pass
else:

    class ReadmeHook(MetadataHookInterface):
        """Sets ``readme`` (dynamic in pyproject.toml) from README.md via ``public_readme``."""

        def update(self, metadata: dict[str, Any]) -> None:
            text = (Path(self.root) / "README.md").read_text(encoding="utf-8")
            metadata["readme"] = {"content-type": "text/markdown", "text": public_readme(text)}
