"""Every Python block of the README, the docs pages and the docstrings runs, as written.

The rules (also on the docs site's "Testing your code" page):

* a page is one ``python -m asyncio`` session: its blocks run in order in one namespace,
  top-level ``await`` and ``async with`` allowed, so a block may use what an earlier
  block on the same page set up (``svc``, ``fake``, ...) and nothing else. Nothing is
  predefined, the ``SVC_*`` environment variables are unset and the working directory is
  a fresh temporary one; clients and fakes a page leaves open are closed after it;
* a block that calls ``asyncio.run(`` is a script: it runs alone, in a fresh namespace
  named ``__main__``, on a thread of its own (still in this process);
* a block that defines ``test_`` functions is a test module: it runs with pytest, in
  process, in a fresh project in pytest-asyncio's strict mode with the package's plugin;
* a block whose first line is a comment starting with ``# fragment`` needs the reader's
  own service or credentials: it must compile (top-level ``await`` allowed) and its
  imports must resolve.

Blocks run in this process against in-process ``FakeService`` instances the pages create
themselves, so the whole runner takes seconds. A page's session runs on virtual time (the
``looptime`` plugin): its waits, polls, pacing holds and the clocks of the fakes it makes
take no real time, in the order real time would give them; a script's own loop (on its
thread) keeps real time. Tracebacks point at the page's own lines.
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import logging
import re
import sys
import textwrap
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from svc_async import Client
from svc_async.clock import SYSTEM_CLOCK, Clock
from svc_async.testing import FakeService, VirtualClock
from svc_async.testing import clock as fake_clock

pytest_plugins = ["pytester"]

ROOT = Path(__file__).parents[1]
FRAGMENT = "# fragment"
BLOCK_TIMEOUT = 30.0
PAGE_REAL_TIMEOUT = 60.0
_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`]*)$")
_HEADING = re.compile(r"^#{1,6}\s+(?P<title>.+?)\s*#*\s*$")
_SCRIPT = re.compile(r"\basyncio\.run\(")


def pages() -> list[Path]:
    """The README, every Markdown page of the docs site (not the hooks), and the modules
    whose docstrings (rendered on the API reference pages) show Python blocks."""
    docs = sorted(p for p in (ROOT / "docs").rglob("*.md") if "_hooks" not in p.parts)
    modules = sorted(
        p for p in (ROOT / "svc_async").rglob("*.py") if "```python" in p.read_text("utf-8")
    )
    return [ROOT / "README.md", *docs, *modules]


@dataclass(frozen=True)
class Block:
    """One fenced code block of a Markdown file."""

    line: int  # 1-based line of the opening fence
    section: str  # the closest heading above it
    info: str  # the fence's info string, e.g. "python"
    source: str
    page: str = "README.md"  # the file, relative to the repository

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
    def is_script(self) -> bool:
        return _SCRIPT.search(self.source) is not None

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def blocks(text: str, page: str = "README.md") -> list[Block]:
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
        source = "\n".join(body) + "\n"
        found.append(Block(i + 1, section, opening["info"].strip(), source, page))
        i = j + 1
    return found


def python_blocks(path: Path) -> list[Block]:
    page = path.relative_to(ROOT).as_posix()
    found = blocks(path.read_text(encoding="utf-8"), page)
    return [b for b in found if b.language == "python"]


ALL = [b for path in pages() for b in python_blocks(path)]
FRAGMENTS = [b for b in ALL if b.is_fragment]
TEST_MODULES = [b for b in ALL if not b.is_fragment and b.is_test_module]
SESSIONS = sorted({b.page for b in ALL if not b.is_fragment and not b.is_test_module})


def _compile(block: Block) -> Any:
    """The block compiled so that tracebacks name the page and its own line numbers."""
    return compile(
        "\n" * block.line + block.source,
        block.page,
        "exec",
        flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT,
        dont_inherit=True,
    )


async def _run_script(code: Any) -> None:
    """Run a script (it calls ``asyncio.run``) on a daemon thread, bounded in real time.

    The page's loop waits for it in an executor (``thread.join``), which ``looptime``
    follows in real time, so a virtual timer never fires while the script runs.
    """
    errors: list[BaseException] = []

    def target() -> None:
        try:
            exec(code, {"__name__": "__main__"})
        except SystemExit as exc:
            if exc.code not in (0, None):
                errors.append(AssertionError(f"the script exited with {exc.code!r}"))
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=target, daemon=True, name="doc-script")
    thread.start()
    await asyncio.get_running_loop().run_in_executor(None, thread.join, BLOCK_TIMEOUT)
    if thread.is_alive():
        raise TimeoutError(f"the script ran for more than {BLOCK_TIMEOUT} s")
    if errors:
        raise errors[0]


async def run_block(block: Block, namespace: dict[str, Any]) -> None:
    """Execute one block, bounded by BLOCK_TIMEOUT: a script alone, else in ``namespace``."""
    code = _compile(block)
    try:
        if block.is_script:
            await _run_script(code)
        elif code.co_flags & inspect.CO_COROUTINE:
            async with asyncio.timeout(BLOCK_TIMEOUT):
                await eval(code, namespace)
        else:
            exec(code, namespace)
    except BaseException as exc:
        exc.add_note(f"in the block at {block.id} ({block.section})")
        raise


async def close_leftovers(namespace: dict[str, Any]) -> None:
    """Close what a page left open, as the end of a reader's session would."""
    for value in list(namespace.values()):
        if isinstance(value, Client):
            await value.aclose()
    for value in list(namespace.values()):
        if isinstance(value, FakeService):
            await value.aclose()


@pytest.fixture
def reader(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A reader's shell: no SVC_* variables, a fresh working directory."""
    for name in ("SVC_BASE_URL", "SVC_ACCOUNT_URL", "SVC_API_TOKEN", "SVC_API_KEY_ID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("SVC_API_KEY_SECRET", raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _params(items: list[Any], ids: Any = None) -> list[Any]:
    return [pytest.param(item, id=ids(item) if ids else item) for item in items] or [
        pytest.param(None, marks=pytest.mark.skip(reason="no such block"))
    ]


@contextmanager
def logging_restored() -> Iterator[None]:
    """A page may configure logging (``basicConfig``, levels): undo it after the page."""
    root, sdk = logging.getLogger(), logging.getLogger("svc_async")
    handlers, levels = list(root.handlers), (root.level, sdk.level)
    try:
        yield
    finally:
        for handler in root.handlers:
            if handler not in handlers:
                root.removeHandler(handler)
        root.setLevel(levels[0])
        sdk.setLevel(levels[1])


@asynccontextmanager
async def real_time_limit(seconds: float) -> AsyncIterator[None]:
    """Cancel the running task after ``seconds`` of real time, as ``TimeoutError``: on
    virtual time a loop that spins (always ready, so time stands still) would never reach
    BLOCK_TIMEOUT, and would run, and grow, for ever."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None
    fired = threading.Event()

    def fire() -> None:
        fired.set()
        loop.call_soon_threadsafe(task.cancel)

    timer = threading.Timer(seconds, fire)
    timer.daemon = True
    timer.start()
    try:
        yield
    except asyncio.CancelledError:
        if not fired.is_set():
            raise
        raise TimeoutError(f"the page ran for more than {seconds} s of real time") from None
    finally:
        timer.cancel()


class _PageClock:
    """The default clock of the fakes a page makes: on the page's loop, whose time is
    virtual, the fake's wall time moves with it (a ``VirtualClock``); on any other loop
    (a script's, on its thread) it is the real clock."""

    def __init__(self) -> None:
        self._virtual = VirtualClock()

    def _clock(self) -> Clock:
        try:
            virtual = asyncio.get_running_loop().looptime_on  # type: ignore[attr-defined]
        except (RuntimeError, AttributeError):
            virtual = False
        return self._virtual if virtual else SYSTEM_CLOCK

    def now(self) -> float:
        return self._clock().now()

    def wall(self) -> float:
        return self._clock().wall()

    async def sleep(self, seconds: float) -> None:
        await self._clock().sleep(seconds)


@pytest.fixture
def virtual_fakes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fakes made without a clock follow the page's virtual time (see ``_PageClock``)."""
    monkeypatch.setattr(fake_clock, "SYSTEM_CLOCK", _PageClock())


@pytest.mark.looptime
@pytest.mark.parametrize("page", _params(SESSIONS))
async def test_page_runs(page: str, reader: Path, virtual_fakes: None) -> None:
    namespace: dict[str, Any] = {"__name__": "__main__"}
    async with real_time_limit(PAGE_REAL_TIMEOUT):
        with logging_restored():
            try:
                for block in ALL:
                    if block.page == page and not block.is_fragment and not block.is_test_module:
                        await run_block(block, namespace)
            finally:
                await close_leftovers(namespace)


@pytest.mark.parametrize("block", _params(TEST_MODULES, lambda b: b.id))
def test_test_module_passes_in_strict_mode(block: Block, pytester: pytest.Pytester) -> None:
    pytester.makeini(
        "[pytest]\nasyncio_mode = strict\nasyncio_default_fixture_loop_scope = function\n"
    )
    pytester.makepyfile(test_doc_example=block.source)
    result = pytester.runpytest(
        "-p", "no:svc_async", "-p", "svc_async.testing.pytest_plugin", "-p", "no:cacheprovider"
    )
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) >= 1, result.stdout.str()
    assert set(outcomes) <= {"passed", "warnings", "warning"}, result.stdout.str()


@pytest.mark.parametrize("block", _params(FRAGMENTS, lambda b: b.id))
def test_fragment_compiles_and_imports(block: Block) -> None:
    _compile(block)
    imports = [
        node
        for node in ast.parse(block.source).body
        if isinstance(node, ast.Import | ast.ImportFrom)
    ]
    exec(compile(ast.Module(body=imports, type_ignores=[]), "imports", "exec"), {})


# ------------------------------------------------------------------ the pages themselves


def test_every_page_with_code_has_python_blocks_and_most_run() -> None:
    assert len(ALL) >= 40
    assert len(ALL) - len(FRAGMENTS) > 4 * len(FRAGMENTS)
    assert "README.md" in SESSIONS
    assert "svc_async/testing/__init__.py" in SESSIONS  # docstrings' blocks run too


def test_the_readme_is_short_and_shows_its_quick_start() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 300
    assert "python -m svc_async demo" in text
    assert "git clone" in text


def test_the_readme_has_no_relative_links() -> None:
    """The README is the package's long description: relative links break off the repo."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)\s]+)", text) + re.findall(r'(?:src|href)="([^"]+)"', text)
    assert [t for t in targets if not t.startswith("https://")] == []


def test_no_page_or_docstring_cites_files_outside_the_repository() -> None:
    shown = {*pages(), *(ROOT / "svc_async").rglob("*.py")}
    for path in shown:
        text = path.read_text(encoding="utf-8")
        for name in ("TYPES.md", "interface.md", "real-examples", "/work/shared"):
            assert name not in text, f"{path.relative_to(ROOT)} mentions {name}"


# ------------------------------------------------------------------ the harness itself


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
    found = blocks(text, "docs/x.md")
    assert [(b.line, b.section, b.language) for b in found] == [
        (3, "Every call", "python"),
        (6, "Every call", "sh"),
        (10, "Sub", "python"),
    ]
    assert found[0].source == "x = 1\n"
    assert not found[0].is_fragment
    assert found[2].is_fragment
    assert found[2].id == "docs/x.md:10"


async def test_blocks_of_a_page_share_one_session(reader: Path) -> None:
    namespace: dict[str, Any] = {}
    setup = (
        "from svc_async import Client\n"
        "from svc_async.testing import FakeService\n"
        "fake = FakeService()\n"
        "svc = Client('http://fake.invalid', token=FakeService.DEFAULT_TOKEN,\n"
        "             transport=fake.transport())\n"
    )
    await run_block(Block(1, "x", "python", setup), namespace)
    await run_block(Block(9, "x", "python", "seasons = await svc.seasons.list()\n"), namespace)
    assert len(namespace["seasons"]) == 3
    assert namespace["fake"].count("GET", "/api/public/v1/season") == 1
    await close_leftovers(namespace)
    assert namespace["svc"].closed


async def test_a_failing_block_fails_naming_its_page_and_line(reader: Path) -> None:
    bad = Block(7, "x", "python", "x = 1\nawait undefined_thing()\n", page="docs/p.md")
    with pytest.raises(NameError) as caught:
        await run_block(bad, {})
    assert "in the block at docs/p.md:7 (x)" in caught.value.__notes__
    assert str(caught.traceback[-1].path) == "docs/p.md"
    assert caught.traceback[-1].lineno + 1 == 9  # the page's own line of the call


async def test_nothing_is_predefined_and_no_service_is_configured(reader: Path) -> None:
    with pytest.raises(NameError):
        await run_block(Block(1, "x", "python", "await svc.orgs.list()\n"), {})
    with pytest.raises(ValueError, match="base_url"):
        await run_block(Block(1, "x", "python", "from svc_async import Client\nClient()\n"), {})


async def test_a_script_runs_alone_on_its_own_thread(reader: Path) -> None:
    source = (
        "import asyncio, threading\n"
        "from pathlib import Path\n"
        "async def main():\n"
        "    Path('out.txt').write_text(threading.current_thread().name + ' ' + __name__)\n"
        "asyncio.run(main())\n"
    )
    namespace: dict[str, Any] = {}
    await run_block(Block(1, "x", "python", source), namespace)
    assert (reader / "out.txt").read_text() == "doc-script __main__"
    assert "main" not in namespace


@pytest.mark.looptime
async def test_a_block_spinning_on_virtual_time_fails_in_real_time(reader: Path) -> None:
    spin = "import asyncio\nwhile True:\n    await asyncio.sleep(0)\n"
    with pytest.raises(TimeoutError, match=r"more than 0\.1 s of real time"):
        async with real_time_limit(0.1):
            await run_block(Block(1, "x", "python", spin), {})


async def test_a_script_that_fails_or_hangs_fails(
    reader: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(AssertionError, match="exited with 3"):
        await run_block(Block(1, "x", "python", "import asyncio\nasyncio.run(exit(3))\n"), {})
    monkeypatch.setattr(sys.modules[__name__], "BLOCK_TIMEOUT", 0.05)
    hang = "import asyncio\nasyncio.run(asyncio.sleep(0.25))\n"
    with pytest.raises(TimeoutError):
        await run_block(Block(1, "x", "python", hang), {})
    for thread in threading.enumerate():
        if thread.name == "doc-script":
            thread.join()  # let the script's own loop close before the test ends
