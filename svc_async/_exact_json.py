"""JSON read with every integer exact, the same way on every Python.

orjson reads integers beyond 64 bits as floats, so a body holding a run of 19 or more
digits is read again by the standard library. That parser recurses once per level, and
how deep it can go depends on the Python version and the caller's stack; a body nested
beyond ``MAX_EXACT_DEPTH`` is therefore refused up front, on every Python alike.
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_EXACT_DEPTH = 500
"""The deepest nesting read exactly (the standard library's parser recurses per level)."""

_LONG_NUMBER = re.compile(rb"\d{19}")
_STRINGS = re.compile(rb'"(?:[^"\\]|\\.)*"')
_NOT_BRACKETS = bytes(i for i in range(256) if i not in b"[]{}")
_OPEN = frozenset(b"[{")


class NestedTooDeeply(ValueError):
    """The body nests deeper than ``MAX_EXACT_DEPTH``: it cannot be read exactly."""


def has_long_number(content: bytes) -> bool:
    """Whether ``content`` holds a run of 19+ digits (a number that may not fit 64 bits)."""
    return _LONG_NUMBER.search(content) is not None


def loads_exact(content: bytes) -> Any:
    """Decode JSON ``content`` (already known to be valid) with every integer exact.

    Raises ``NestedTooDeeply`` beyond ``MAX_EXACT_DEPTH`` levels, or ``ValueError`` for
    what the standard library refuses (e.g. an integer of more than 4,300 digits).
    """
    depth = 0
    for byte in _STRINGS.sub(b"", content).translate(None, _NOT_BRACKETS):
        if byte in _OPEN:
            depth += 1
            if depth > MAX_EXACT_DEPTH:
                raise NestedTooDeeply(f"nested more than {MAX_EXACT_DEPTH} levels deep")
        else:
            depth -= 1
    return json.loads(content)
