"""The API reference pages (docs/reference/*.md) cover every public name of ``svc_async``."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import svc_async

REFERENCE = Path(__file__).parents[1] / "docs" / "reference"


def _directives() -> dict[str, str]:
    """Each ``::: target`` of the reference pages, with its directive's options block."""
    found: dict[str, str] = {}
    for page in REFERENCE.glob("*.md"):
        for match in re.finditer(r"^::: (\S+)\n((?:    .*\n)*)", page.read_text(), re.M):
            found[match.group(1)] = match.group(2)
    return found


def _defined_in(module_name: str, name: str) -> bool:
    """Whether module ``module_name`` defines ``name`` at top level, or re-exports it in
    its ``__all__`` (mkdocstrings renders those members on the module's page too)."""
    module = importlib.import_module(module_name)
    if name in getattr(module, "__all__", ()):
        return True
    source = Path(module.__file__ or "").read_text()
    return (
        re.search(rf"^(?:class |def |async def )?{re.escape(name)}\b[:(= ]", source, re.M)
        is not None
    )


def test_every_public_name_has_a_reference_entry() -> None:
    targets = _directives()
    modules = [t for t in targets if _is_module(t)]
    missing = []
    for name in svc_async.__all__:
        if f"svc_async.{name}" in targets:
            continue
        obj = getattr(svc_async, name)
        home = getattr(obj, "__module__", None) if isinstance(obj, type) or callable(obj) else None
        if home is not None and (home in modules or f"{home}.{name}" in targets):
            continue
        if any(_defined_in(m, name) for m in modules):
            continue
        missing.append(name)
    assert missing == []


def _is_module(target: str) -> bool:
    try:
        importlib.import_module(target)
    except ImportError:
        return False
    return True


def test_the_client_page_shows_no_parameter_echo_as_an_attribute_value() -> None:
    """``self.webhooks = webhooks`` in ``__init__`` renders as ``webhooks = webhooks``."""
    assert "show_attribute_values: false" in _directives()["svc_async.Client"]
    assert svc_async.Client.__annotations__["webhooks"] == "WakeSource | None"
