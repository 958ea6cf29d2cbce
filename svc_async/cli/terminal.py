"""Which renderer draws where: rich on a capable stream, plain text otherwise.

Kept apart from ``render`` (the views and the plain renderer) so that ``rich_render``
can import ``render`` without a circle.
"""

from __future__ import annotations

import shutil
from typing import TextIO

from .render import PlainRenderer, QuietRenderer, Renderer


def _columns(out: TextIO) -> int:
    """The terminal's width when ``out`` is one, else 80."""
    isatty = getattr(out, "isatty", None)
    if callable(isatty) and isatty():
        return shutil.get_terminal_size((80, 24)).columns
    return 80


def make_renderer(
    out: TextIO,
    *,
    color: bool | None = None,
    plain: bool = False,
    width: int | None = None,
    transient: bool = False,
) -> Renderer:
    """A rich renderer on ``out`` when rich is installed (and ``plain`` is False), else plain.

    ``color`` None lets rich decide (terminal, ``NO_COLOR``); False turns colour off.
    ``transient`` progress bars are erased when done.
    """
    if not plain:
        try:
            from .rich_render import RichRenderer
        except ImportError:
            pass
        else:
            return RichRenderer(out, color=color, width=width, transient=transient)
    return PlainRenderer(out, width=width or _columns(out))


def progress_renderer(err: TextIO) -> Renderer:
    """Where progress goes: a renderer on ``err`` when it is a terminal, else a silent one."""
    isatty = getattr(err, "isatty", None)
    if callable(isatty) and isatty():
        return make_renderer(err, transient=True)
    return QuietRenderer(err)
