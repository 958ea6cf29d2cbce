"""JSON read with every integer exact, the same way on every Python.

orjson reads integers beyond 64 bits as floats, so a body holding a run of 19 or more
digits is read again by the standard library. That parser recurses once per level, and
how deep it can go depends on the Python version and the caller's stack; a body nested
beyond ``MAX_EXACT_DEPTH`` is judged too deep up front, on every Python alike.
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_EXACT_DEPTH = 500
"""The deepest nesting read exactly (the standard library's parser recurses per level)."""

_DIGITS = bytes(48 if 48 <= i <= 57 else 32 for i in range(256))
"""Maps every digit to ``0`` and everything else to a space (a C-speed scan for runs)."""
_NINETEEN = b"0" * 19
_STRINGS = re.compile(rb'"(?:[^"\\]|\\.)*"')
_NOT_BRACKETS = bytes(i for i in range(256) if i not in b"[]{}")
_OPEN = frozenset(b"[{")


def has_long_number(content: bytes) -> bool:
    """Whether ``content`` holds a run of 19+ digits (a number that may not fit 64 bits)."""
    # On every answer the pipeline decodes: translate and find run at C speed, about ten
    # times faster than a regular expression.
    return content.translate(_DIGITS).find(_NINETEEN) >= 0


def too_deep(content: bytes) -> bool:
    """Whether JSON ``content`` nests deeper than ``MAX_EXACT_DEPTH`` (strings not counted)."""
    depth = 0
    for byte in _STRINGS.sub(b"", content).translate(None, _NOT_BRACKETS):
        if byte in _OPEN:
            depth += 1
            if depth > MAX_EXACT_DEPTH:
                return True
        else:
            depth -= 1
    return False


def loads_exact(content: bytes) -> Any:
    """Decode JSON ``content`` (valid, and not ``too_deep``) with every integer exact.

    Raises ``ValueError`` for what the standard library refuses (e.g. an integer of more
    than 4,300 digits).
    """
    return json.loads(content)
