"""The rich renderer draws a row's note readably: not a word per line, within 80 columns."""

from __future__ import annotations

import io

import pytest

pytest.importorskip("rich")

from svc_async.cli.render import Column, Styled, Table
from svc_async.cli.rich_render import RichRenderer

MESSAGE = "Unable to decode audio file: invalid data found when processing input"


def _jobs_table() -> Table:
    """The shape of the demo's job search: six columns, an errored job's message as a note."""
    columns = [
        Column("ID", "right"),
        Column("Name"),
        Column("Type"),
        Column("Status"),
        Column("Verdict"),
        Column("Tags"),
    ]
    rows = [
        ["1", "Sample Producer", "Routine", "Processed", "Licensed", "Sept 2024, 2024, Seniors"],
        ["4", "Sample Producer", "Routine", "Errored", "-", "2024, Seniors"],
        [
            "5",
            "Manchester Mavericks - Senior Elite routine",
            "Routine",
            "Submitted",
            "Partially Licensed",
            "demo, Seniors, 2025",
        ],
    ]
    return Table("Jobs", columns, rows, notes={1: Styled(MESSAGE, "red")})


def _render(table: Table, width: int) -> list[str]:
    out = io.StringIO()
    RichRenderer(out, color=False, width=width).table(table)
    return out.getvalue().splitlines()


@pytest.mark.parametrize("width", [80, 100])
def test_an_errored_jobs_message_takes_a_few_lines_and_the_table_fits(width: int) -> None:
    lines = _render(_jobs_table(), width)
    assert max(map(len, lines)) <= width
    body = [line for line in lines if line.startswith("│")]
    assert all(line.endswith("│") for line in body)  # nothing cropped at the right edge
    names = [line.split("│")[2].strip() for line in body]
    note = [text for text in names if text and text in MESSAGE and text != "Name"]
    assert " ".join(note) == MESSAGE
    assert len(note) <= 3, note


def test_a_table_without_notes_is_left_to_rich() -> None:
    table = _jobs_table()
    plain = Table(table.title, table.columns, table.rows)
    lines = _render(plain, 80)
    assert max(map(len, lines)) <= 80
    assert not any("Unable" in line for line in lines)
