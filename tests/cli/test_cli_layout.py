"""The house: the command line is a subpackage the SDK never imports, with no circles."""

from __future__ import annotations

import ast
from pathlib import Path

import svc_async

PACKAGE = Path(svc_async.__file__).resolve().parent


def _imports(path: Path, package: str) -> set[str]:
    """Every svc_async module ``path`` imports, at any depth in the file (lazy ones too)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                stem = ".".join(base + ([node.module] if node.module else []))
            else:
                stem = node.module or ""
            if stem.startswith("svc_async"):
                found.add(stem)
                found.update(f"{stem}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("svc_async"))
    return found


def _module(path: Path) -> tuple[str, str]:
    """(module name, the package its relative imports start from)."""
    parts = ["svc_async", *path.relative_to(PACKAGE).with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.pop()
        return ".".join(parts), ".".join(parts)
    return ".".join(parts), ".".join(parts[:-1])


def _graph() -> dict[str, set[str]]:
    graph = {}
    for path in PACKAGE.rglob("*.py"):
        name, package = _module(path)
        graph[name] = _imports(path, package)
    return {name: {i for i in deps if i in graph and i != name} for name, deps in graph.items()}


def test_the_top_level_holds_the_sdk_alone() -> None:
    top = sorted(p.name for p in PACKAGE.iterdir() if not p.name.startswith("__pycache__"))
    assert not [name for name in top if name.startswith("_cli") or name == "demo.py"]
    assert (PACKAGE / "cli" / "__init__.py").is_file()
    assert (PACKAGE / "__main__.py").is_file()


def test_the_sdk_never_imports_the_command_line() -> None:
    graph = _graph()

    def in_cli(name: str) -> bool:
        return name == "svc_async.cli" or name.startswith("svc_async.cli.")

    sdk = [m for m in graph if not in_cli(m) and m != "svc_async.__main__"]
    offenders = {m: sorted(d for d in graph[m] if in_cli(d)) for m in sdk}
    assert {m: d for m, d in offenders.items() if d} == {}


def test_no_circles_inside_the_command_line() -> None:
    graph = _graph()
    cli = {m: {d for d in deps if d.startswith("svc_async.cli.")} for m, deps in graph.items()
           if m.startswith("svc_async.cli.")}  # fmt: skip

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for nxt in cli.get(start, ()):
            if nxt == goal or (nxt not in seen and reaches(nxt, goal, seen | {nxt})):
                return True
        return False

    assert "svc_async.cli.render" in cli and "svc_async.cli.rich_render" in cli
    assert [m for m in cli if reaches(m, m, {m})] == []
