"""The import rules of ARCHITECTURE.md, checked: data flows one way and rooms keep to themselves.

Imports are read from the source (at any depth, so lazy imports count); those under
``if TYPE_CHECKING:`` are type-only and never run, so they are allowed to point upwards.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

import svc_async

PACKAGE = Path(svc_async.__file__).resolve().parent
ROOT = PACKAGE.parent


def _module(path: Path) -> tuple[str, str]:
    """(module name without the ``svc_async.`` prefix, its package for relative imports)."""
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
        return ".".join(parts), ".".join(["svc_async", *parts])
    return ".".join(parts), ".".join(["svc_async", *parts[:-1]])


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(path: Path, package: str, *, runtime_only: bool) -> set[str]:
    """The svc_async modules ``path`` imports (names without the ``svc_async.`` prefix)."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and runtime_only and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                stem = ".".join(base + ([node.module] if node.module else []))
            else:
                stem = node.module or ""
            if stem == "svc_async" or stem.startswith("svc_async."):
                # `from . import _validate` imports a module; `from .x import y` module x
                for alias in node.names:
                    full = f"{stem}.{alias.name}"
                    found.add(full if _exists(full) else stem)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("svc_async"))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text()))
    return {name.removeprefix("svc_async").removeprefix(".") for name in found} - {""}


def _exists(dotted: str) -> bool:
    rel = Path(*dotted.split(".")[1:])
    return (PACKAGE / rel).with_suffix(".py").is_file() or (PACKAGE / rel).is_dir()


def _sdk_files() -> dict[str, Path]:
    files = {}
    for path in PACKAGE.rglob("*.py"):
        name, _ = _module(path)
        if name.split(".")[0] not in ("cli", "testing", "__main__"):
            files[name] = path
    return files


def _deps(name: str, *, runtime_only: bool = True) -> set[str]:
    path = _sdk_files()[name]
    return _imports(path, _module(path)[1], runtime_only=runtime_only) - {name}


# Each lower room and exactly what it may import from the SDK at run time.
ALLOWED = {
    "_version": set(),
    "_validate": set(),
    "redact": set(),
    "clock": set(),
    "cutoff": {"clock"},
    "retry": {"clock"},
    "pagination": set(),
    "errors": set(),  # models and transport only under TYPE_CHECKING
    "_codegen": {"errors"},
    "models": {"_codegen"},  # the NO_EXTRA sentinel; nothing else
    "converter": {"models", "_codegen", "errors"},
    "_incremental": {"converter", "errors", "redact", "pipeline", "transport", "_exact_json"},
    "transport": {"clock", "cutoff", "errors", "redact", "_validate"},
    "types": {"transport"},
    "auth": {"errors", "_validate"},
    "ratelimit": {"clock", "errors", "models", "retry"},
    "_decide": {"errors", "retry"},
    "_answers": {"_exact_json", "errors", "models", "ratelimit", "redact", "retry", "transport"},
    "pipeline": {
        "_answers",
        "_decide",
        "_exact_json",
        "auth",
        "clock",
        "cutoff",
        "errors",
        "models",
        "ratelimit",
        "redact",
        "retry",
        "transport",
    },
    "invites": {"_validate"},
    "downloads": {"errors", "pipeline", "redact", "retry", "transport", "types"},
    "tracing": {"_version", "errors", "pipeline", "redact"},
    "fleet": {"fleet.connect"},  # reads and checks the setting: redis loads below
    "fleet.connect": set(),
    "fleet.keys": set(),
    "fleet.seal": set(),
    "fleet.store": {"clock", "fleet.connect", "fleet.keys"},
    "fleet.budget": {"errors", "models", "ratelimit", "retry", "fleet.keys", "fleet.store"},
    "fleet.wake": {"_webhook_payloads", "errors", "fleet.store"},
    "fleet.webhooks": {
        "_webhook_delivery",
        "_webhook_payloads",
        "clock",
        "converter",
        "errors",
        "retry",
        "fleet.keys",
        "fleet.seal",
        "fleet.store",
        "fleet.wake",
    },
    "fleet.status": {
        "auth",
        "errors",
        "redact",
        "fleet.connect",
        "fleet.keys",
        "fleet.store",
        "fleet.webhooks",
    },
}


@pytest.mark.parametrize("name", sorted(ALLOWED))
def test_each_lower_room_imports_only_what_it_may(name: str) -> None:
    assert _deps(name) <= ALLOWED[name]


def test_the_table_covers_rooms_that_exist() -> None:
    assert set(ALLOWED) <= set(_sdk_files())


def test_the_sdk_never_imports_the_command_line_or_the_fake() -> None:
    for name in _sdk_files():
        deps = _deps(name, runtime_only=False)
        assert not {d for d in deps if d.split(".")[0] in ("cli", "testing")}, name


def test_nothing_below_the_client_imports_it() -> None:
    below = ["pipeline", "transport", "converter", "models", "errors", "retry", "ratelimit"]
    for name in below:
        assert "client" not in _deps(name, runtime_only=False), name
        assert not {d for d in _deps(name) if d.startswith("resources")}, name


def test_the_resources_send_through_the_pipeline_not_the_transport() -> None:
    for name in _sdk_files():
        if name.startswith("resources"):
            assert "transport" not in _deps(name), name
            assert "client" not in _deps(name), name


# Reaching into another object's private attribute, allowed only where listed (and why).
PRIVATE_ALLOWED = {
    ("auth", "auth._headers"),  # BearerAuth/HeaderAuth are defined in auth.py itself
    ("client", "view._timeout"),  # with_options: a Client setting up another Client
    ("client", "view._attempt_timeout"),
    ("client", "view._retry"),
    ("client", "view._resources"),
    ("client", "sys._getframe"),  # where the client was opened, for the unclosed warning
    ("invites", "parts._replace"),  # namedtuple's public API
    ("transport", "transport._sock"),  # aiohttp internals for a prompt close
    ("transport", "session._connector"),
    ("transport", "connector._closed"),
}


def test_no_module_uses_another_modules_private_names() -> None:
    found = set()
    for name, path in _sdk_files().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    private = alias.name.startswith("_") and not alias.name.startswith("__")
                    # a private *module* (_validate, _codegen) is the package's own
                    if private and not _exists(f"svc_async.{node.module or ''}.{alias.name}"):
                        found.add((name, f"import {alias.name}"))
            if (
                isinstance(node, ast.Attribute)
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
            ):
                found.add((name, ast.unparse(node)))
    assert found <= PRIVATE_ALLOWED


def test_architecture_md_names_every_room_and_the_readme_points_to_it() -> None:
    text = (ROOT / "ARCHITECTURE.md").read_text()
    for name in _sdk_files():
        if name in ("", "resources") or name.endswith("__init__"):
            continue
        shown = name.replace(".", "/") + ".py"
        if _sdk_files()[name].name == "__init__.py":
            shown = name.replace(".", "/") + "/__init__.py"
        assert f"`{shown}`" in text, shown
    for sub in ("cli/", "testing/"):
        assert f"`{sub}`" in text
    assert "ARCHITECTURE.md" in (ROOT / "README.md").read_text()


def test_one_body_cap_site() -> None:
    """Only the transport refuses a body as too large: one cap, where bodies are read."""
    sites = {
        name
        for name, path in _sdk_files().items()
        if re.search(r"(?<!class )ResponseTooLargeError\(", path.read_text())
    }
    assert sites == {"transport"}


@pytest.mark.slow
def test_every_public_name_resolves_and_the_lazy_ones_load_on_first_use() -> None:
    """``__all__`` names what ``svc_async`` gives; the feature modules load only when used."""
    code = (
        "import sys, svc_async\n"
        "lazy = ['svc_async.webhooks', 'svc_async.downloads', 'svc_async.polling',"
        " 'svc_async.bulk', 'svc_async.sync', 'svc_async.tracing']\n"
        "print([m for m in lazy if m in sys.modules])\n"
        "missing = [n for n in svc_async.__all__ if getattr(svc_async, n, None) is None]\n"
        "print(missing)\n"
        "from svc_async import DownloadResult, EntryUpdate, OutputFileUpdate, downloads, webhooks\n"
        "print(DownloadResult is downloads.DownloadResult, EntryUpdate is webhooks.EntryUpdate,"
        " OutputFileUpdate is webhooks.OutputFileUpdate)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout.splitlines()
    assert out == [
        "[]",
        "[]",
        "True True True",
    ]
    for name in ("DownloadResult", "EntryUpdate", "OutputFileUpdate", "TimeoutArg"):
        assert name in svc_async.__all__


# One clock: every time read and every wait of the package goes through the seam.
# testing.fleet and testing.redis_server drive real processes on the real clock (by nature);
# cutoff schedules its one timer on the loop's timeline, as asyncio.timeout does.
CLOCK_MODULES = {"clock", "cutoff", "testing.clock", "testing.fleet", "testing.redis_server"}
_TIME_READS = {"time", "monotonic", "monotonic_ns", "perf_counter", "time_ns", "sleep"}


def _clock_uses(tree: ast.AST) -> list[str]:
    """Clock reads and sleeps that bypass the seam: ``time.time()``, ``loop.time()``,
    ``asyncio.sleep(d)`` with ``d`` other than 0, and ``from time import ...``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "time":
            found += [f"from time import {a.name}" for a in node.names if a.name in _TIME_READS]
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        func, owner = node.func, ast.unparse(node.func.value)
        if owner == "time" and func.attr in _TIME_READS:
            found.append(ast.unparse(node))
        elif func.attr == "time" and not node.args and "loop" in owner:
            found.append(ast.unparse(node))  # loop.time(), get_running_loop().time()
        elif owner == "asyncio" and func.attr == "sleep":
            zero = (
                len(node.args) == 1
                and isinstance(node.args[0], ast.Constant)
                and node.args[0].value == 0
            )
            if not zero:  # sleep(0) only yields to the loop: no time passes
                found.append(ast.unparse(node))
    return found


def test_time_is_read_and_slept_only_through_the_clock() -> None:
    found = []
    for path in PACKAGE.rglob("*.py"):
        name, _ = _module(path)
        if name not in CLOCK_MODULES:
            found += [f"{name}: {use}" for use in _clock_uses(ast.parse(path.read_text()))]
    assert found == []


@pytest.mark.parametrize(
    "source",
    [
        "import time\nt = time.monotonic()",
        "import time\nt = time.time()",
        "import asyncio\nasync def f(d): await asyncio.sleep(d)",
        "import asyncio\nt = asyncio.get_running_loop().time()",
        "def f(loop): return loop.time()",
        "from time import perf_counter",
    ],
)
def test_the_clock_rule_sees_each_way_around_the_seam(source: str) -> None:
    assert _clock_uses(ast.parse(source))


def test_the_clock_rule_lets_a_bare_yield_through() -> None:
    assert _clock_uses(ast.parse("import asyncio\nasync def f(): await asyncio.sleep(0)")) == []
