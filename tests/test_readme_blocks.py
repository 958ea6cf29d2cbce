"""Every Python block of the README runs against a FakeService, or says it is a fragment.

The rules (also in the README's testing section):

* a block runs as written, as in ``python -m asyncio``: top-level ``await`` and
  ``async with`` allowed, ``SVC_BASE_URL``/``SVC_API_TOKEN`` exported for a
  ``FakeService`` on loopback (seeded demo data, jobs finished as soon as made), the working
  directory a fresh temporary one; ``svc`` (an open ``Client()``) and ``fake`` (that
  ``FakeService``) are there for blocks that use them without opening their own;
* a block that defines ``test_`` functions is a test module: it runs with pytest in a
  fresh project in pytest-asyncio's strict mode, with the package's pytest plugin;
* a block whose first line is a comment starting with ``# fragment`` is only shown: it
  must compile (top-level ``await`` allowed) and its imports must resolve.

Blocks are found by parsing the README at collection time, so whatever blocks exist are
run; each test is named after the block's section and line.
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import re
import sys
import textwrap
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from svc_async import Client, PermissionDeniedError
from svc_async.testing import FakeService

pytest_plugins = ["pytester"]

README = Path(__file__).parents[1] / "README.md"
FRAGMENT = "# fragment"
BLOCK_TIMEOUT = 30.0
_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`]*)$")
_HEADING = re.compile(r"^#{1,6}\s+(?P<title>.+?)\s*#*\s*$")


@dataclass(frozen=True)
class Block:
    """One fenced code block of a Markdown file."""

    line: int  # 1-based line of the opening fence
    section: str  # the closest heading above it
    info: str  # the fence's info string, e.g. "python"
    source: str

    @property
    def language(self) -> str:
        return self.info.split()[0].lower() if self.info.strip() else ""

    @property
    def is_fragment(self) -> bool:
        first = self.source.lstrip().splitlines()[0] if self.source.strip() else ""
        return first.lower().startswith(FRAGMENT)

    @property
    def is_test_module(self) -> bool:
        tree = ast.parse(self.source)
        return any(
            isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and node.name.startswith("test_")
            for node in tree.body
        )

    @property
    def id(self) -> str:
        slug = re.sub(r"[^a-z0-9]+", "-", self.section.lower()).strip("-") or "top"
        return f"{slug}-L{self.line}"


def blocks(text: str) -> list[Block]:
    """The fenced code blocks of ``text``, in order (headings inside blocks are ignored)."""
    found: list[Block] = []
    section = ""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None:
            heading = _HEADING.match(lines[i])
            if heading:
                section = heading["title"]
            i += 1
            continue
        fence, indent = opening["fence"], len(opening["indent"])
        body: list[str] = []
        j = i + 1
        while j < len(lines) and not (
            lines[j].strip().startswith(fence[0] * len(fence))
            and lines[j].strip().strip(fence[0]) == ""
        ):
            body.append(lines[j][indent:] if lines[j][:indent].isspace() else lines[j])
            j += 1
        found.append(Block(i + 1, section, opening["info"].strip(), "\n".join(body) + "\n"))
        i = j + 1
    return found


def python_blocks() -> list[Block]:
    return [b for b in blocks(README.read_text(encoding="utf-8")) if b.language == "python"]


def _compile(block: Block) -> Any:
    return compile(
        block.source,
        f"README.md:{block.line}",
        "exec",
        flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT,
        dont_inherit=True,
    )


RUNNABLE = [b for b in python_blocks() if not b.is_fragment and not b.is_test_module]
TEST_MODULES = [b for b in python_blocks() if not b.is_fragment and b.is_test_module]
FRAGMENTS = [b for b in python_blocks() if b.is_fragment]


def _params(items: list[Block]) -> list[Any]:
    return [pytest.param(b, id=b.id) for b in items] or [
        pytest.param(None, marks=pytest.mark.skip(reason="no such block"))
    ]


@pytest.fixture
async def fake(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> AsyncIterator[FakeService]:
    """A served FakeService, the SDK's variables pointing at it, cwd a fresh directory."""
    for name in ("SVC_ACCOUNT_URL", "SVC_API_KEY_ID", "SVC_API_KEY_SECRET"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    async with FakeService(seed=0, processing_delay=0.0) as service, service.serve() as url:
        monkeypatch.setenv("SVC_BASE_URL", url)
        monkeypatch.setenv("SVC_API_TOKEN", FakeService.DEFAULT_TOKEN)
        yield service


async def run_block(block: Block, namespace: dict[str, Any]) -> str:
    """Execute one block, bounded by BLOCK_TIMEOUT; returns a plain script's output.

    A block with top-level ``await`` runs in this event loop, as ``python -m asyncio``
    would run it; a plain script (it may call ``asyncio.run``) runs as ``python -c`` in
    a child process, which is killed if it overstays.
    """
    code = _compile(block)
    if code.co_flags & inspect.CO_COROUTINE:
        async with asyncio.timeout(BLOCK_TIMEOUT):
            await eval(code, namespace)
        return ""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        block.source,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        async with asyncio.timeout(BLOCK_TIMEOUT):
            output, _ = await proc.communicate()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    text = output.decode(errors="replace")
    assert proc.returncode == 0, f"README.md:{block.line} exited {proc.returncode}:\n{text}"
    return text


@pytest.mark.parametrize("block", _params(RUNNABLE))
async def test_readme_block_runs(block: Block, fake: FakeService) -> None:
    async with Client() as svc:
        namespace: dict[str, Any] = {"__name__": "__readme__", "svc": svc, "fake": fake}
        await run_block(block, namespace)


@pytest.mark.parametrize("block", _params(TEST_MODULES))
def test_readme_test_module_passes_in_strict_mode(block: Block, pytester: pytest.Pytester) -> None:
    pytester.makeini(
        "[pytest]\nasyncio_mode = strict\nasyncio_default_fixture_loop_scope = function\n"
    )
    pytester.makepyfile(test_readme_example=block.source)
    result = pytester.runpytest(
        "-p", "no:svc_async", "-p", "svc_async.testing.pytest_plugin", "-p", "no:cacheprovider"
    )
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) >= 1, result.stdout.str()
    assert set(outcomes) <= {"passed", "warnings", "warning"}, result.stdout.str()


@pytest.mark.parametrize("block", _params(FRAGMENTS))
def test_readme_fragment_compiles_and_imports(block: Block) -> None:
    _compile(block)
    imports = [
        node
        for node in ast.parse(block.source).body
        if isinstance(node, ast.Import | ast.ImportFrom)
    ]
    exec(compile(ast.Module(body=imports, type_ignores=[]), "imports", "exec"), {})


# ------------------------------------------------------------------ the harness itself


def test_readme_has_python_blocks_and_most_run() -> None:
    found = python_blocks()
    assert len(found) >= 10
    assert len(RUNNABLE) + len(TEST_MODULES) > len(FRAGMENTS)


def test_parser_finds_blocks_sections_and_markers() -> None:
    text = textwrap.dedent(
        """\
        # Title
        ## Every call
        ```python
        x = 1
        ```
        ```sh
        echo hi
        ```
        ### Sub
        ````python
        # fragment: shown only
        ```
        ````
        """
    )
    found = blocks(text)
    assert [(b.line, b.section, b.language) for b in found] == [
        (3, "Every call", "python"),
        (6, "Every call", "sh"),
        (10, "Sub", "python"),
    ]
    assert found[0].source == "x = 1\n"
    assert not found[0].is_fragment
    assert found[2].is_fragment
    assert found[2].id == "sub-L10"


async def test_a_failing_block_fails(fake: FakeService) -> None:
    bad = Block(1, "x", "python", "await svc.events.list(organisation_id=12)\n")
    async with Client() as svc:
        with pytest.raises(PermissionDeniedError):
            await run_block(bad, {"svc": svc})


async def test_blocks_see_the_fake_through_the_environment(fake: FakeService) -> None:
    source = (
        "from svc_async import Client\n"
        "async with Client() as mine:\n"
        "    seasons = await mine.seasons.list()\n"
    )
    namespace: dict[str, Any] = {}
    await run_block(Block(1, "x", "python", source), namespace)
    assert len(namespace["seasons"]) == 3
    assert fake.count("GET", "/api/public/v1/season") == 1


async def test_a_plain_script_runs_in_a_child_process(fake: FakeService) -> None:
    source = (
        "import asyncio\n"
        "from svc_async import Client\n"
        "async def main():\n"
        "    async with Client() as svc:\n"
        "        print(len(await svc.orgs.list()))\n"
        "asyncio.run(main())\n"
    )
    assert await run_block(Block(1, "x", "python", source), {}) == "10\n"
    assert fake.count("GET", "/api/orgs/me") == 1


async def test_a_plain_script_that_fails_or_hangs_fails(
    fake: FakeService, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(AssertionError, match="exited 1"):
        await run_block(Block(1, "x", "python", "raise SystemExit(1)\n"), {})
    monkeypatch.setattr(sys.modules[__name__], "BLOCK_TIMEOUT", 0.5)
    with pytest.raises(TimeoutError):
        await run_block(Block(1, "x", "python", "import time\ntime.sleep(60)\n"), {})
