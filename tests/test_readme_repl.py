"""The README's examples, pasted in order into a real ``python -m asyncio`` prompt.

The in-process runner of ``test_doc_blocks`` executes each block whole, so it cannot see
what only the interactive prompt refuses (a compound statement not closed by a blank
line) nor what is left pending when the reader's session ends. Here the README's python
blocks go, in order, to the standard input of a real ``python -m asyncio`` subprocess,
each followed by the blank line a reader types after pasting, against the embedded
FakeService the README sets up.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from .test_doc_blocks import ROOT, python_blocks

PROBLEMS = ("SyntaxError", "Traceback", "Task was destroyed", "Unclosed", "ERROR asyncio")


def readme_session() -> str:
    """The README's python blocks as a reader pastes them: in order, each then Enter."""
    blocks = [b for b in python_blocks(ROOT / "README.md") if not b.is_fragment]
    assert blocks, "the README shows no python block"
    return "".join(block.source + "\n" for block in blocks)


def test_the_session_is_every_block_in_order() -> None:
    text = readme_session()
    assert text.index("fake = FakeService(") < text.index("await svc.orgs.list()")
    assert text.rstrip().endswith('assert svc_fake.count("POST", "/api/public/v1/event") == 1')
    closing = text.index("await svc.aclose()")
    assert "svc." not in text[closing + len("await svc.aclose()") :]  # nothing after it


@pytest.mark.slow
@pytest.mark.skipif(
    sys.version_info[:3] == (3, 13, 0),
    reason="Python 3.13.0's asyncio REPL reads piped input a line at a time: any statement"
    " over several lines is a SyntaxError there, whatever the README says (a CPython bug)",
)
def test_the_readme_runs_pasted_into_python_m_asyncio(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SVC_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-m", "asyncio"],
        input=readme_session(),
        capture_output=True,
        text=True,
        cwd=tmp_path,  # the download example writes mix.mp3 here
        env=env,
        timeout=120,
        check=False,
    )
    report = f"stdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-3000:]}"
    assert done.returncode == 0, report
    for problem in PROBLEMS:
        assert problem not in done.stderr and problem not in done.stdout, report
    assert "exiting asyncio REPL" in done.stderr, report
    # The examples did their work: a verdict, a download, an invite link.
    assert "Processed" in done.stdout and "65536 bytes" in done.stdout, report
    assert "entryName=Ava%20Smith" in done.stdout, report
    assert (tmp_path / "mix.mp3").stat().st_size == 65536
