"""The rich renderer: imported only when rich (the ``cli`` extra) is installed."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import TextIO

from rich import box
from rich.console import Console, RenderableType
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.rule import Rule
from rich.status import Status
from rich.table import Table as RichTable
from rich.text import Text
from rich.tree import Tree

from .render import (
    Cell,
    ProgressHandle,
    Segment,
    StatusHandle,
    Styled,
    Table,
    TreeNode,
    text_of,
)


def _text(parts: Sequence[Cell]) -> Text:
    out = Text()
    for part in parts:
        if isinstance(part, tuple):
            out.append_text(_text(part))
        elif isinstance(part, Styled):
            out.append(part.text, style=part.style or "")
        else:
            out.append(part)
    return out


class _Task:
    def __init__(self, progress: Progress, task: TaskID) -> None:
        self._progress, self._task = progress, task

    def advance(self, steps: int = 1) -> None:
        self._progress.advance(self._task, steps)

    def set_total(self, total: int | None) -> None:
        self._progress.update(self._task, total=total)


class _Status:
    def __init__(self, status: Status | None) -> None:
        self._status = status

    def update(self, text: str) -> None:
        if self._status is not None:
            self._status.update(text)


_NOTE_WIDTH = 36
"""Width a note's column asks for: a long note wraps over two or three lines."""


def _widths_for_notes(table: Table, width: int) -> list[int] | None:
    """Column widths for a table with notes, so a note is not wrapped a word per line.

    A note is drawn in its column under its row (rich has no cell spanning columns), so
    that column gets up to ``_NOTE_WIDTH``, taken from the widest other columns down to
    their longest word. None when the table has no notes (rich then decides alone).
    """
    if not table.notes:
        return None
    texts = [
        [c.header, *(text_of(row[i]) for row in table.rows)] for i, c in enumerate(table.columns)
    ]
    natural = [max(map(len, column)) for column in texts]
    least = [max(len(w) for text in column for w in text.split() or [""]) for column in texts]
    note = table.note_column
    longest_note = max(len(text_of(n)) for n in table.notes.values())
    widths = list(natural)
    widths[note] = max(
        natural[note] if natural[note] < _NOTE_WIDTH else least[note],
        min(longest_note, _NOTE_WIDTH),
    )
    room = width - (3 * len(widths) + 1)  # a border and two spaces of padding a column, and one
    return _shrink(widths, least, note, room)


def _shrink(widths: list[int], least: list[int], note: int, room: int) -> list[int] | None:
    """``widths`` narrowed to fit ``room``: the widest other column first, down to its
    ``least``, then the ``note`` column; None when even that does not fit."""
    while sum(widths) > room:
        shrinkable = [i for i in range(len(widths)) if widths[i] > least[i] and i != note]
        if not shrinkable:
            if widths[note] <= least[note]:
                return None  # no room to give: let rich decide
            widths[note] -= 1
            continue
        widest = max(shrinkable, key=lambda i: widths[i])
        widths[widest] -= 1
    return widths


class RichRenderer:
    """Boxes, colours, a spinner and progress bars through a rich ``Console``."""

    def __init__(
        self,
        out: TextIO,
        *,
        color: bool | None = None,
        width: int | None = None,
        transient: bool = False,
    ) -> None:
        self.transient = transient
        self.console = Console(
            file=out,
            no_color=None if color is None else not color,
            color_system=None if color is False else "auto",
            highlight=False,
            width=width,
            soft_wrap=False,
        )

    @property
    def is_terminal(self) -> bool:
        """Whether the console writes to a terminal."""
        return bool(self.console.is_terminal)

    def _print(self, renderable: RenderableType = "") -> None:
        """Print; off a terminal, without the padding rich adds to the end of lines."""
        if self.console.is_terminal:
            self.console.print(renderable)
            return
        with self.console.capture() as captured:
            self.console.print(renderable)
        text = "\n".join(line.rstrip() for line in captured.get().split("\n"))
        self.console.file.write(text)
        self.console.file.flush()

    def rule(self, title: str) -> None:
        """A bold horizontal rule with the title."""
        self._print()
        self._print(Rule(Text(title, style="bold cyan"), style="cyan"))

    def line(self, *parts: Segment) -> None:
        """One line of styled segments (wrapped by rich to the console's width)."""
        self._print(_text(parts))

    def table(self, table: Table) -> None:
        """A rounded-box table."""
        out = RichTable(
            title=table.title,
            caption=table.caption,
            box=box.ROUNDED,
            header_style="bold",
            title_style="bold",
            title_justify="left",
        )
        widths = _widths_for_notes(table, self.console.width)
        for i, column in enumerate(table.columns):
            out.add_column(
                column.header, justify=column.justify, width=None if widths is None else widths[i]
            )
        blank = [Text() for _ in table.columns]
        for index, row in enumerate(table.rows):
            out.add_row(*(_text([c]) for c in row))
            note = table.notes.get(index)
            if note is not None:
                cells = list(blank)
                cells[table.note_column] = _text([note])
                out.add_row(*cells)
        self._print(out)

    def tree(self, root: TreeNode) -> None:
        """A rich tree with guide lines."""

        def add(parent: Tree, node: TreeNode) -> None:
            branch = parent.add(_text(node.label))
            for child in node.children:
                add(branch, child)

        top = Tree(_text(root.label), guide_style="dim")
        for child in root.children:
            add(top, child)
        self._print(top)

    @contextlib.contextmanager
    def progress(self, description: str, total: int | None) -> Iterator[ProgressHandle]:
        """A progress bar with count and elapsed time (erased at the end if transient)."""
        with Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=self.console,
            transient=self.transient,
        ) as progress:
            yield _Task(progress, progress.add_task(description, total=total))

    @contextlib.contextmanager
    def status(self, text: str) -> Iterator[StatusHandle]:
        """A spinner with a text that can change."""
        if not self.console.is_terminal:
            yield _Status(None)
            return
        with self.console.status(text) as status:
            yield _Status(status)
