"""Every help screen of the command line fits an 80-column terminal."""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Iterator

import pytest

from svc_async.cli import demo
from svc_async.cli.args import build_parser

WIDTH = 80


def _parsers(
    parser: argparse.ArgumentParser, name: str = "svc-async"
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """``parser`` and every subcommand's parser below it, each with its command line."""
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                yield from _parsers(sub, f"{name} {sub_name}")


def _too_wide(text: str) -> list[str]:
    return [f"{len(line)}: {line}" for line in text.splitlines() if len(line) > WIDTH]


@pytest.mark.parametrize("columns", ["80"])
def test_every_help_screen_fits_80_columns(monkeypatch: pytest.MonkeyPatch, columns: str) -> None:
    """At 80 columns argparse wraps option help; the hand-wrapped texts must fit too."""
    monkeypatch.setenv("COLUMNS", columns)
    screens = dict(_parsers(build_parser()))
    assert {"svc-async jobs create", "svc-async fake", "svc-async demo"} <= set(screens)
    assert {"svc-async webhooks send status", "svc-async webhooks send entry"} <= set(screens)
    wide = {name: _too_wide(p.format_help()) for name, p in screens.items()}
    assert {name: lines for name, lines in wide.items() if lines} == {}


def test_the_demo_modules_own_help_fits(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert demo.main(["--help"]) == 0
    assert _too_wide(capsys.readouterr().out) == []


@pytest.mark.slow
def test_svc_async_help_fits_80_columns_as_a_shell_shows_it() -> None:
    env = {"COLUMNS": "80", "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-m", "svc_async", "--help"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        env=env,
    ).stdout
    assert out.startswith("usage: svc-async")
    assert _too_wide(out) == []
