"""Terminal rendering for the CLI and the demo, with or without rich.

Views are plain data (``Table``, ``TreeNode``, ``Styled`` cells) built elsewhere; a
``Renderer`` draws them. ``PlainRenderer`` draws them as plain text, so nothing depends
on the optional ``cli`` extra; ``RichRenderer`` (in ``rich_render``) draws boxes,
colours and spinners, and ``terminal`` picks one of the two.
"""

from __future__ import annotations

import contextlib
import sys
import textwrap
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, TextIO


@dataclass(frozen=True, slots=True)
class Styled:
    """Text with a style name (``"green"``, ``"bold red"``, ...); plain output drops it."""

    text: str
    style: str = ""


Segment = str | Styled
"""A piece of text, plain or styled."""

Cell = Segment | tuple[Segment, ...]
"""One table cell: a segment, or several shown side by side."""


@dataclass(frozen=True, slots=True)
class Column:
    """A table column: its header and alignment."""

    header: str
    justify: Literal["left", "right", "center"] = "left"


@dataclass(frozen=True, slots=True)
class Table:
    """A titled table of cells; ``notes`` (row index to text) are drawn under their row.

    Notes keep long text (the checks a song failed, a manual verdict's details) out of
    the columns, so a table fits 80 columns; ``note_column`` is where a note starts.
    """

    title: str | None
    columns: Sequence[Column]
    rows: Sequence[Sequence[Cell]]
    caption: str | None = None
    notes: Mapping[int, Cell] = field(default_factory=dict)
    note_column: int = 1


@dataclass(frozen=True, slots=True)
class TreeNode:
    """A labelled node with children (the organisation tree)."""

    label: Sequence[Segment]
    children: list[TreeNode] = field(default_factory=list)


class ProgressHandle(Protocol):
    """What a running progress display accepts."""

    def advance(self, steps: int = 1) -> None:
        """Count ``steps`` more units done."""

    def set_total(self, total: int | None) -> None:
        """Change the total (None: unknown)."""


class StatusHandle(Protocol):
    """What a running spinner accepts."""

    def update(self, text: str) -> None:
        """Replace the spinner's text."""


class Renderer(Protocol):
    """Draws views on one output stream."""

    @property
    def is_terminal(self) -> bool:
        """Whether a person watches the stream (status lines are worth drawing)."""

    def rule(self, title: str) -> None:
        """A section heading."""

    def line(self, *parts: Segment) -> None:
        """One line made of segments (nothing: an empty line)."""

    def table(self, table: Table) -> None:
        """A table."""

    def tree(self, root: TreeNode) -> None:
        """A tree, root first."""

    def progress(
        self, description: str, total: int | None
    ) -> contextlib.AbstractContextManager[ProgressHandle]:
        """A progress bar for the duration of a ``with`` block."""

    def status(self, text: str) -> contextlib.AbstractContextManager[StatusHandle]:
        """A spinner for the duration of a ``with`` block."""


def _wrap(text: str, width: int) -> list[str]:
    return textwrap.wrap(text, width, break_on_hyphens=False) or [""]


def _row_lines(row: Sequence[str], widths: Sequence[int], justify: Sequence[str]) -> list[str]:
    """One table row as lines: each cell wrapped to its width, right-justified or left."""
    wrapped = [_wrap(text, widths[i]) for i, text in enumerate(row)]
    lines = []
    for n in range(max(len(w) for w in wrapped)):
        out = []
        for i, parts in enumerate(wrapped):
            text = parts[n] if n < len(parts) else ""
            out.append(text.rjust(widths[i]) if justify[i] == "right" else text.ljust(widths[i]))
        lines.append("  ".join(out).rstrip())
    return lines


def _fit(widths: list[int], rows: Sequence[Sequence[str]], limit: int) -> list[int]:
    """Column widths: each its widest cell, the widest narrowed until the row fits."""
    widths = list(widths)
    for row in rows:
        for i, text in enumerate(row):
            widths[i] = max(widths[i], len(text))
    floor = 8
    while sum(widths) + 2 * (len(widths) - 1) > limit:
        widest = max(range(len(widths)), key=lambda i: widths[i])
        if widths[widest] <= floor:
            break
        widths[widest] -= 1
    return widths


def text_of(cell: Cell) -> str:
    """The text of a cell, without its styles."""
    if isinstance(cell, tuple):
        return "".join(text_of(part) for part in cell)
    return cell.text if isinstance(cell, Styled) else cell


class _NullProgress:
    def advance(self, steps: int = 1) -> None:
        del steps

    def set_total(self, total: int | None) -> None:
        del total

    def update(self, text: str) -> None:
        del text


class _PlainProgress:
    """Counts, and prints one summary line when done (no cursor tricks)."""

    def __init__(self, out: TextIO, description: str, total: int | None) -> None:
        self._out, self._description, self.total, self.done = out, description, total, 0

    def advance(self, steps: int = 1) -> None:
        self.done += steps

    def set_total(self, total: int | None) -> None:
        self.total = total

    def finish(self) -> None:
        of = f"/{self.total}" if self.total is not None else ""
        print(f"{self._description}: {self.done}{of} done", file=self._out)


class PlainRenderer:
    """Plain-text rendering: aligned columns, indented trees, no colour."""

    def __init__(self, out: TextIO | None = None, width: int = 80) -> None:
        self._out = out if out is not None else sys.stdout
        self.width = width

    @property
    def is_terminal(self) -> bool:
        """Whether the stream is a terminal."""
        isatty = getattr(self._out, "isatty", None)
        return bool(callable(isatty) and isatty())

    def _print(self, text: str = "") -> None:
        print(text, file=self._out)

    def rule(self, title: str) -> None:
        """A section heading underlined with ``=``."""
        self._print()
        self._print(f"== {title} " + "=" * max(4, 72 - len(title)))

    def line(self, *parts: Segment) -> None:
        """The segments' text joined on one line, wrapped (keeping its indent) to fit."""
        text = "".join(text_of(p) for p in parts).rstrip()
        if len(text) <= self.width:
            self._print(text)
            return
        indent = " " * (len(text) - len(text.lstrip()))
        for line in textwrap.wrap(
            text, self.width, initial_indent="", subsequent_indent=indent + "  "
        ):
            self._print(line)

    def table(self, table: Table) -> None:
        """Columns padded to their widest cell, the widest wrapped to fit ``width``."""
        cells = [[text_of(c) for c in row] for row in table.rows]
        headers = [c.header for c in table.columns]
        widths = _fit([len(h) for h in headers], cells, self.width)
        justify = [c.justify for c in table.columns]
        indent = sum(w + 2 for w in widths[: table.note_column])
        if table.title:
            self._print_wrapped(table.title, self.width)
        self._print_lines(_row_lines(headers, widths, justify))
        self._print("  ".join("-" * w for w in widths))
        for index, row in enumerate(cells):
            self._print_lines(_row_lines(row, widths, justify))
            note = table.notes.get(index)
            if note is not None:
                self._print_wrapped(text_of(note), max(20, self.width - indent), " " * indent)
        if table.caption:
            self._print_wrapped(table.caption, self.width)

    def _print_lines(self, lines: Sequence[str]) -> None:
        for line in lines:
            self._print(line)

    def _print_wrapped(self, text: str, width: int, indent: str = "") -> None:
        """``text`` wrapped to ``width``, each line after ``indent``."""
        self._print_lines([indent + line for line in _wrap(text, width)])

    def tree(self, root: TreeNode) -> None:
        """Children indented under their parent with ``+--``."""

        def walk(node: TreeNode, prefix: str, last: bool, top: bool) -> None:
            label = "".join(text_of(p) for p in node.label)
            self._print(label if top else f"{prefix}{'`-- ' if last else '|-- '}{label}")
            inner = "" if top else prefix + ("    " if last else "|   ")
            for i, child in enumerate(node.children):
                walk(child, inner, i == len(node.children) - 1, False)

        walk(root, "", True, True)

    @contextlib.contextmanager
    def progress(self, description: str, total: int | None) -> Iterator[ProgressHandle]:
        """Counts silently and prints ``description: done/total done`` at the end."""
        handle = _PlainProgress(self._out, description, total)
        yield handle
        handle.finish()

    @contextlib.contextmanager
    def status(self, text: str) -> Iterator[StatusHandle]:
        """Nothing: plain output has no spinner."""
        del text
        yield _NullProgress()


class QuietRenderer(PlainRenderer):
    """Shows nothing at all (progress when stderr is not a terminal)."""

    @property
    def is_terminal(self) -> bool:
        """Never: nothing is shown."""
        return False

    def _print(self, text: str = "") -> None:
        del text

    @contextlib.contextmanager
    def progress(self, description: str, total: int | None) -> Iterator[ProgressHandle]:
        """Nothing."""
        del description, total
        yield _NullProgress()
