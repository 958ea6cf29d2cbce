"""One word for one idea: the shared aliases are defined once and reachable by old names."""

from __future__ import annotations

import ast
from pathlib import Path

import svc_async
import svc_async.bulk
import svc_async.client
import svc_async.downloads
import svc_async.types

PACKAGE = Path(svc_async.__file__).resolve().parent


def _aliases_defined(path: Path) -> set[str]:
    names = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def test_progress_and_timeout_aliases_are_defined_in_one_module_only() -> None:
    owners: dict[str, list[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        for name in _aliases_defined(path) & {"Progress", "TimeoutArg", "TimeoutOpt"}:
            owners.setdefault(name, []).append(str(path.relative_to(PACKAGE)))
    assert owners == {"Progress": ["types.py"], "TimeoutArg": ["types.py"]}


def test_the_old_homes_of_the_names_give_the_same_alias() -> None:
    assert svc_async.Progress is svc_async.types.Progress
    assert svc_async.downloads.Progress is svc_async.types.Progress
    assert svc_async.bulk.Progress is svc_async.types.Progress
    assert svc_async.TimeoutArg is svc_async.client.TimeoutArg is svc_async.types.TimeoutArg
