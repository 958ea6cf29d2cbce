"""The house rules of ARCHITECTURE.md, checked: data flows one way and rooms keep to themselves.

The layering is pyproject.toml's import-linter contracts, run here as CI runs them. Imports
are also read from the source (at any depth, so lazy imports count): the house has no
import circle at all, type-only imports (``if TYPE_CHECKING:``) included, and no room
imports another room's private names. Also checked: reach-ins into other
packages' private parts (only ``_compat.py``), every timer and time read through the
clock seam, and no switching of the process's garbage collector.
"""

from __future__ import annotations

import ast
import functools
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import svc_async

PACKAGE = Path(svc_async.__file__).resolve().parent
ROOT = PACKAGE.parent


@functools.cache
def _tree(path: Path) -> ast.Module:
    """The parsed source of ``path``, read once per session (the checks only walk it)."""
    return ast.parse(path.read_text())


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


@functools.cache
def _imports(path: Path, package: str, *, runtime_only: bool) -> frozenset[str]:
    """The svc_async modules ``path`` imports (names without the ``svc_async.`` prefix),
    read once per session."""
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

    visit(_tree(path))
    return frozenset({name.removeprefix("svc_async").removeprefix(".") for name in found} - {""})


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


def _lint_imports() -> list[str]:
    """The ``lint-imports`` command of the environment running the tests."""
    found = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    return [found or "lint-imports"]


@pytest.mark.slow
def test_the_import_contracts_hold() -> None:
    """The layering of pyproject.toml's ``[tool.importlinter]`` contracts, as CI runs it."""
    run = subprocess.run(
        [*_lint_imports(), "--no-cache"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-3000:]
    assert "0 broken" in run.stdout


@pytest.mark.slow
def test_the_import_contracts_catch_an_upward_import(tmp_path: Path) -> None:
    """The same kind of contract fails on a package whose lower layer imports a higher one."""
    package = tmp_path / "house"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "high.py").write_text("from . import low\n")
    (package / "low.py").write_text("def f():\n    from . import high\n")
    (tmp_path / ".importlinter").write_text(
        "[importlinter]\nroot_package = house\n\n"
        "[importlinter:contract:layers]\nname = layers\ntype = layers\n"
        "layers =\n    house.high\n    house.low\n"
    )
    run = subprocess.run(
        [*_lint_imports(), "--no-cache"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 1, run.stdout
    assert "house.low -> house.high" in run.stdout


def test_at_most_fifteen_modules_sit_directly_in_the_package() -> None:
    """The layers live in subpackages; the top holds the public modules and the client."""
    top = sorted(path.name for path in PACKAGE.glob("*.py"))
    assert len(top) <= 15, top


def test_every_top_module_is_in_a_layer() -> None:
    """The contracts name every room at the top (import-linter's ``exhaustive`` says it too,
    but only when the contracts run)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (layers,) = [c["layers"] for c in config["contracts"] if c["type"] == "layers"]
    named = {part.strip() for layer in layers for part in layer.split("|")}
    rooms = {path.stem for path in PACKAGE.glob("*.py")} | {
        path.parent.name for path in PACKAGE.glob("*/__init__.py")
    }
    assert rooms - {"__init__"} <= named, rooms - named


def _room(module: str) -> str:
    """The room of a module: its first component under ``svc_async``."""
    return module.split(".")[0]


def test_the_sdk_never_imports_the_command_line_or_the_fake() -> None:
    for name in _sdk_files():
        deps = _deps(name, runtime_only=False)
        assert not {d for d in deps if d.split(".")[0] in ("cli", "testing")}, name


def _all_files() -> dict[str, Path]:
    """Every module of the package: the SDK, the command line and the fake."""
    return {_module(path)[0]: path for path in PACKAGE.rglob("*.py")}


def _graph() -> dict[str, set[str]]:
    """Who imports whom, every import counted (lazy and type-only ones too)."""
    files = _all_files()
    return {
        name: _imports(path, _module(path)[1], runtime_only=False) - {name}
        for name, path in files.items()
    }


def _closure(graph: dict[str, set[str]], start: str) -> set[str]:
    """Everything ``start`` reaches through imports (itself excluded)."""
    seen: set[str] = set()
    todo = list(graph.get(start, ()))
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(graph.get(name, ()))
    return seen - {start}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of ``graph``: its strongly connected parts of two or more."""
    found = []
    for name in sorted(graph):
        reach = _closure(graph, name)
        part = sorted({name} | {other for other in reach if name in _closure(graph, other)})
        if len(part) > 1 and part not in found:
            found.append(part)
    return found


def test_no_import_circle_at_all() -> None:
    """Not in the SDK, nor in the fake or the command line; lazy and type-only imports
    count: a circle makes two rooms one, whatever runs first."""
    assert _cycles(_graph()) == []


def test_the_circle_finder_sees_a_circle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_the_errors_import_nothing_of_the_sdk_even_for_types() -> None:
    """But the redaction rules, which import nothing of the SDK themselves: a pickled
    error hides what a log line hides, by the same rule."""
    assert _deps("errors", runtime_only=False) == {"redact"}
    assert _deps("redact", runtime_only=False) == set()


# Reaching into another object's private attribute, allowed only where listed (and why).
# Reach-ins into *another package's* objects (aiohttp's, asyncio's, sys's) are allowed in
# one module only, ``_compat.py``, which gates each by version and lists it with its reason.
COMPAT = "_core.compat"
PRIVATE_ALLOWED = {
    ("auth", "auth._headers"),  # BearerAuth/HeaderAuth are defined in auth.py itself
    ("invites", "parts._replace"),  # namedtuple's public API
    # with_options: a Client setting up another Client
    ("client", "view._timeout"),
    ("client", "view._attempt_timeout"),
    ("client", "view._call_headers"),
    ("client", "view._retry"),
    ("client", "view._resources"),
}


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _own(node: ast.expr) -> bool:
    """``self`` or ``cls``: an object's own private parts are its own business."""
    return isinstance(node, ast.Name) and node.id in ("self", "cls")


def _reach_ins(tree: ast.AST) -> set[str]:
    """Private names used on other objects: ``x._name``, ``getattr(x, "_name")`` and
    ``setattr``/``hasattr``/``delattr`` alike (shown as ``x._name``), ``import _name``
    from another package."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            # from inside the package, imports are checked room by room (_private_imports)
            if node.level == 0 and not (node.module or "").startswith("svc_async"):
                found.update(f"import {a.name}" for a in node.names if _private(a.name))
        elif isinstance(node, ast.Attribute) and _private(node.attr) and not _own(node.value):
            found.add(ast.unparse(node))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "setattr", "hasattr", "delattr")
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and _private(node.args[1].value)
            and not _own(node.args[0])
        ):
            found.add(f"{ast.unparse(node.args[0])}.{node.args[1].value}")
    return found


def test_no_module_uses_another_modules_private_names() -> None:
    found = set()
    for name, path in _sdk_files().items():
        if name != COMPAT:
            found |= {(name, use) for use in _reach_ins(_tree(path))}
    assert found <= PRIVATE_ALLOWED


def _private_imports(name: str, path: Path) -> set[str]:
    """``_names`` that ``name`` imports from a module of another room of the package."""
    package = _module(path)[1]
    found = set()
    for node in ast.walk(_tree(path)):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            stem = ".".join(base + ([node.module] if node.module else []))
        else:
            stem = node.module or ""
        if not stem.startswith("svc_async"):
            continue
        source = stem.removeprefix("svc_async").removeprefix(".")
        if source and _room(source) != _room(name):
            found.update(f"{source}.{a.name}" for a in node.names if _private(a.name))
    return found


def test_no_room_imports_another_rooms_private_names() -> None:
    """What one subpackage shares with another gets a public name (inside a private
    package, that name is still the package's own)."""
    found = {
        f"{name}: {use}"
        for name, path in _all_files().items()
        for use in _private_imports(name, path)
    }
    assert found == set()


def test_the_private_import_rule_sees_one(tmp_path: Path) -> None:
    path = PACKAGE / "resources" / "jobs.py"
    tree = ast.parse("from .._transports.base import _capped\nfrom ._base import _own\n")
    _tree.cache_clear()
    try:
        original = _tree
        globals()["_tree"] = lambda p: tree if p == path else original(p)
        assert _private_imports("resources.jobs", path) == {"_transports.base._capped"}
    finally:
        globals()["_tree"] = original


@pytest.mark.parametrize(
    "source",
    [
        "def f(loop): return loop._thread_id",
        "def f(loop): return getattr(loop, '_thread_id', None)",
        "def f(t): setattr(t, '_sock', None)",
        "def f(t): return hasattr(t, '_conns')",
        "from aiohttp.connector import _DeprecationWaiter",
    ],
)
def test_the_private_rule_sees_each_way_in(source: str) -> None:
    assert _reach_ins(ast.parse(source))


def test_the_private_rule_lets_own_and_dunder_names_through() -> None:
    source = "class A:\n def f(self, x): return self._a, getattr(self, '_b'), x.__dict__"
    assert _reach_ins(ast.parse(source)) == set()


def test_compat_lists_each_of_its_reach_ins_with_why() -> None:
    """Every private name ``_compat`` touches is named in its docstring (the list)."""
    tree = _tree(_sdk_files()[COMPAT])
    listed = ast.get_docstring(tree) or ""
    used = {use.rsplit(".", 1)[-1] for use in _reach_ins(tree)}
    assert used, "nothing reached into: is the module still needed?"
    assert {name for name in used if f"``{name}``" not in listed and name not in listed} == set()


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
    assert sites == {"_transports.base"}


@pytest.mark.slow
def test_every_public_name_resolves_and_the_lazy_ones_load_on_first_use() -> None:
    """``__all__`` names what ``svc_async`` gives; the feature modules load only when used."""
    code = (
        "import sys, svc_async\n"
        "lazy = ['svc_async.webhooks.receiver', 'svc_async.resources.downloads', 'svc_async.resources.polling',"
        " 'svc_async.resources.bulk', 'svc_async.resources.sync', 'svc_async._pipeline.tracing']\n"
        "print([m for m in lazy if m in sys.modules])\n"
        "missing = [n for n in svc_async.__all__ if getattr(svc_async, n, None) is None]\n"
        "print(missing)\n"
        "from svc_async import DownloadResult, EntryUpdate, OutputFileUpdate, webhooks\n"
        "from svc_async.resources import downloads\n"
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


# One clock: every time read, wait and timer of the package goes through the seam
# (``clock.py``: ``Clock``, and ``within``/``until``/``wait_tasks`` for bounded waits).
# testing.fleet and testing.redis_server drive real processes on the real clock (by nature);
# cutoff schedules its one timer on the loop's timeline, as asyncio.timeout does.
CLOCK_MODULES = {
    "clock",
    "_transports.cutoff",
    "testing.clock",
    "testing.fleet",
    "testing.redis_server",
}
_TIME_READS = {"time", "monotonic", "monotonic_ns", "perf_counter", "time_ns", "sleep"}
_TIMERS = {"timeout", "timeout_at", "wait_for"}
"""asyncio's timed waits (``asyncio.wait`` counts only with a ``timeout``)."""

# The other timers, each a bound on I/O with a peer on real time (like aiohttp's and
# redis-py's own socket timeouts, which read the loop too), not a wait the SDK makes for
# its user: those go through the clock.
TIMERS_ALLOWED = {
    # A webhook delivery's body must come within the receiver's read and body timeouts:
    # a guard against a slow sender, as aiohttp's server timeouts.
    ("webhooks.body", "asyncio.timeout(body_timeout)"),
    ("webhooks.body", "asyncio.timeout(read_timeout)"),
    # Redis: a command's bound (the store's timeout), redis-py's swallowed cancellations
    # cancelled again, and the commands and writes in flight given their bound at close.
    ("fleet.store", "asyncio.timeout(bound)"),
    ("fleet.store", "asyncio.wait({task}, timeout=every)"),
    ("fleet.store", "asyncio.wait(set(self._late), timeout=self.timeout * 2)"),
    ("fleet.budget", "asyncio.wait(set(self._writes), timeout=self.store.timeout * 2)"),
    ("webhooks.redis", "asyncio.wait(set(self._tasks), timeout=self.store.timeout * 2)"),
    # The fake's in-process transport enforces Request.timeout.total, as aiohttp does.
    ("testing.app", "asyncio.timeout(total)"),
    # The fake's webhook dispatcher waits on the loop's own timer (virtual under looptime):
    # waited on its fake clock instead, a 1 ms pause re-armed by a task each time spun the
    # loop without moving its time (the waiting guide's page hung, one run in three).
    ("testing.webhooks", "asyncio.timeout(timeout)"),
    # The command line bounds a whole command by --timeout: a program on real time.
    ("cli", "asyncio.timeout(args.timeout)"),
    ("cli.fleet", "asyncio.timeout(args.timeout)"),
    ("cli.webhooks", "asyncio.timeout(args.timeout)"),
}


def _clock_uses(tree: ast.AST) -> list[str]:
    """Clock reads, sleeps and timers that bypass the seam: ``time.time()``,
    ``loop.time()``, ``asyncio.sleep(d)`` with ``d`` other than 0, ``from time import
    ...``, ``loop.call_later``/``call_at``, ``asyncio.timeout``/``timeout_at``/``wait_for``
    and ``asyncio.wait(..., timeout=...)`` (or ``from asyncio import`` one of them)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "time":
            found += [f"from time import {a.name}" for a in node.names if a.name in _TIME_READS]
        if isinstance(node, ast.ImportFrom) and node.module == "asyncio":
            found += [f"from asyncio import {a.name}" for a in node.names if a.name in _TIMERS]
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        func, owner = node.func, ast.unparse(node.func.value)
        if owner == "time" and func.attr in _TIME_READS:
            found.append(ast.unparse(node))
        elif func.attr == "time" and not node.args and "loop" in owner:
            found.append(ast.unparse(node))  # loop.time(), get_running_loop().time()
        elif func.attr in ("call_later", "call_at"):
            found.append(ast.unparse(node))  # a timer on a loop, whoever's
        elif owner == "asyncio" and func.attr in _TIMERS:
            found.append(ast.unparse(node))
        elif owner == "asyncio" and func.attr == "wait":
            if any(k.arg == "timeout" for k in node.keywords):
                found.append(ast.unparse(node))
        elif owner == "asyncio" and func.attr == "sleep":
            zero = (
                len(node.args) == 1
                and isinstance(node.args[0], ast.Constant)
                and node.args[0].value == 0
            )
            if not zero:  # sleep(0) only yields to the loop: no time passes
                found.append(ast.unparse(node))
    return found


def test_time_is_read_slept_and_timed_only_through_the_clock() -> None:
    found = []
    for path in PACKAGE.rglob("*.py"):
        name, _ = _module(path)
        if name not in CLOCK_MODULES:
            uses = _clock_uses(_tree(path))
            found += [f"{name}: {use}" for use in uses if (name, use) not in TIMERS_ALLOWED]
    assert found == []


def test_each_allowed_timer_still_exists() -> None:
    """The list names what is there: a timer routed through the clock leaves it."""
    files = _all_files()
    for name, use in TIMERS_ALLOWED:
        assert use in _clock_uses(_tree(files[name])), (name, use)


@pytest.mark.parametrize(
    "source",
    [
        "import time\nt = time.monotonic()",
        "import time\nt = time.time()",
        "import asyncio\nasync def f(d): await asyncio.sleep(d)",
        "import asyncio\nt = asyncio.get_running_loop().time()",
        "def f(loop): return loop.time()",
        "from time import perf_counter",
        "def f(loop, cb): loop.call_later(1.0, cb)",
        "def f(loop, cb): loop.call_at(loop_deadline, cb)",
        "import asyncio\nasync def f(): \n async with asyncio.timeout(1): pass",
        "import asyncio\nasync def f(d): \n async with asyncio.timeout_at(d): pass",
        "import asyncio\nasync def f(a): await asyncio.wait_for(a, 1)",
        "import asyncio\nasync def f(ts): await asyncio.wait(ts, timeout=1)",
        "from asyncio import timeout",
    ],
)
def test_the_clock_rule_sees_each_way_around_the_seam(source: str) -> None:
    assert _clock_uses(ast.parse(source))


def test_the_clock_rule_lets_a_bare_yield_and_an_untimed_wait_through() -> None:
    assert _clock_uses(ast.parse("import asyncio\nasync def f(): await asyncio.sleep(0)")) == []
    assert _clock_uses(ast.parse("import asyncio\nasync def f(t): await asyncio.wait(t)")) == []


# No process-wide side effects: the library never switches the process's garbage
# collector (a user may, around structuring: ``converter.wrap_structuring``). The command
# line, a program of its own, and the fake may.
def _gc_uses(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [f"import {a.name}" for a in node.names if a.name == "gc"]
        elif isinstance(node, ast.ImportFrom) and node.module == "gc":
            found += [f"from gc import {a.name}" for a in node.names]
        elif isinstance(node, ast.Call) and ast.unparse(node.func).startswith("gc."):
            found.append(ast.unparse(node))
    return found


def test_the_library_leaves_the_garbage_collector_alone() -> None:
    found = []
    for name, path in _sdk_files().items():
        found += [f"{name}: {use}" for use in _gc_uses(_tree(path))]
    assert found == []


@pytest.mark.parametrize(
    "source", ["import gc\ngc.disable()", "from gc import disable", "import gc as g"]
)
def test_the_gc_rule_sees_each_way_in(source: str) -> None:
    assert _gc_uses(ast.parse(source))


def _complexity(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Cyclomatic complexity as radon counts it: 1, plus each branch and boolean operator
    (nested functions and classes are counted on their own)."""
    count = 1

    def visit(node: ast.AST) -> None:
        nonlocal count
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                continue
            branches = ast.If | ast.For | ast.AsyncFor | ast.While | ast.IfExp | ast.ExceptHandler
            if isinstance(child, branches | ast.match_case):
                count += 1
            elif isinstance(child, ast.comprehension):
                count += 1 + len(child.ifs)
            elif isinstance(child, ast.BoolOp):
                count += len(child.values) - 1
            elif isinstance(child, ast.Try) and child.orelse:
                count += 1
            visit(child)

    visit(function)
    return count


def test_no_sdk_function_is_above_complexity_15() -> None:
    """No function of the SDK (``cli/`` and ``testing/`` aside) above CC 15: a call's path
    stays readable. (ruff's C901 holds the same line when the linters run.)"""
    over = {}
    for name, path in _sdk_files().items():
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                score = _complexity(node)
                if score > 15:
                    over[f"{name}.{node.name}"] = score
    assert over == {}


def _parameters(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """How many values a function takes (``self``/``cls`` aside; ``*a`` and ``**k`` count one)."""
    args = function.args
    names = [a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]]
    if names[:1] in (["self"], ["cls"]):
        names = names[1:]
    return len(names) + (args.vararg is not None) + (args.kwarg is not None)


def test_no_private_helper_takes_more_than_six_values() -> None:
    """State that travels together lives on one object (an attempt, a delivery), not in a
    list of parameters handed down."""
    over = {}
    for name, path in _sdk_files().items():
        for node in ast.walk(_tree(path)):
            function = isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            if function and _private(node.name) and _parameters(node) > 6:
                over[f"{name}.{node.name}"] = _parameters(node)
    assert over == {}


def test_the_parameter_count_counts_what_it_should() -> None:
    tree = ast.parse("class A:\n def _f(self, a, b, /, c, *d, e, **f): pass")
    (function,) = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]
    assert _parameters(function) == 6


def test_architecture_md_draws_the_layers_of_the_import_contract() -> None:
    """The drawing under "The layers" is the ``layers`` contract of pyproject.toml, top to
    bottom: the page cannot show a house that ``lint-imports`` does not check."""
    import tomllib

    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (layers,) = [c["layers"] for c in contracts["contracts"] if c["type"] == "layers"]
    text = (ROOT / "ARCHITECTURE.md").read_text()
    drawing = text.split("## The layers", 1)[1].split("```", 2)[1]
    drawn = [
        " | ".join(part.strip() for part in re.split(r"\s{2,}", line.strip())[0].split("|"))
        for line in drawing.strip().splitlines()
    ]
    assert drawn == layers
