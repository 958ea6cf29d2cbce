"""Request-body validation with zod-style issues, as the service reports them.

Each issue is ``{"code", "expected", "received", "path", "message"}`` for type errors;
range errors carry ``minimum``/``maximum`` and string-format errors ``validation``
instead of ``expected``/``received``, as zod does. A 400 body carries the issue list
JSON-encoded in ``message``.
"""

from __future__ import annotations

import re
from typing import Any, TypeVar
from urllib.parse import urlsplit

from .clock import parse_timestamp
from .wire import HTTPError

JSON = dict[str, Any]
Path = list[str | int]
T = TypeVar("T")

__all__ = ["MISSING", "Validator"]

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_NAN = float("nan")
MISSING: Any = object()
"""Marks an absent key (zod reports it as ``undefined``)."""


def type_name(value: Any) -> str:
    """The zod name of a JSON value's type."""
    if value is MISSING:
        return "undefined"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


class Validator:
    """Collects issues while reading fields of a JSON object body."""

    def __init__(self, body: Any) -> None:
        self.issues: list[JSON] = []
        self.body: JSON = {}
        if isinstance(body, dict):
            self.body = body
        else:
            self.type_issue([], "object", body)

    def accepted(self, request: T) -> T:
        """``request`` when no issue was recorded; else a 400 carrying the issues."""
        if self.issues:
            raise HTTPError(400, self.issues)
        return request

    def type_issue(self, path: Path, expected: str, value: Any) -> None:
        """Record an ``invalid_type`` issue."""
        received = type_name(value)
        message = "Required" if value is MISSING else f"Expected {expected}, received {received}"
        self.issues.append(
            {
                "code": "invalid_type",
                "expected": expected,
                "received": received,
                "path": path,
                "message": message,
            }
        )

    def string_issue(self, path: Path, validation: str, message: str) -> None:
        """Record an ``invalid_string`` issue (bad email, url, regex, datetime)."""
        self.issues.append(
            {"code": "invalid_string", "validation": validation, "path": path, "message": message}
        )

    def size_issue(
        self, path: Path, code: str, bound: int, kind: str, *, exact: bool = False
    ) -> None:
        """Record a ``too_small``/``too_big`` issue on a string's or array's length."""
        small = code == "too_small"
        unit = "character(s)" if kind == "string" else "element(s)"
        word = "exactly" if exact else ("at least" if small else "at most")
        self.issues.append(
            {
                "code": code,
                "minimum" if small else "maximum": bound,
                "type": kind,
                "inclusive": True,
                "exact": exact,
                "path": path,
                "message": f"{kind.capitalize()} must contain {word} {bound} {unit}",
            }
        )

    def enum_issue(self, path: Path, options: Any, value: Any) -> None:
        """Record an ``invalid_enum_value`` issue."""
        if value is MISSING:
            self.type_issue(path, " | ".join(repr(o) for o in options), value)
            return
        expected = " | ".join(f"'{o}'" for o in options)
        self.issues.append(
            {
                "received": value,
                "code": "invalid_enum_value",
                "options": list(options),
                "path": path,
                "message": f"Invalid enum value. Expected {expected}, received '{value}'",
            }
        )

    def custom(self, path: Path, message: str) -> None:
        """Record a ``custom`` issue."""
        self.issues.append({"code": "custom", "path": path, "message": message})

    def _received(self, path: Path, expected: str, received: str) -> None:
        self.type_issue(path, expected, None)
        self.issues[-1]["received"] = received
        self.issues[-1]["message"] = f"Expected {expected}, received {received}"

    def _bound(self, name: str, number: int, minimum: int | None, maximum: int | None) -> bool:
        for code, bound, word in (
            ("too_small", minimum, "greater"),
            ("too_big", maximum, "less"),
        ):
            if bound is None or (number >= bound if code == "too_small" else number <= bound):
                continue
            self.issues.append(
                {
                    "code": code,
                    "minimum" if code == "too_small" else "maximum": bound,
                    "type": "number",
                    "inclusive": True,
                    "exact": False,
                    "path": [name],
                    "message": f"Number must be {word} than or equal to {bound}",
                }
            )
            return False
        return True

    def integer(
        self,
        name: str,
        *,
        required: bool = False,
        minimum: int | None = None,
        maximum: int | None = None,
        coerce: bool = False,
    ) -> int | None:
        """Read an integer field, checking its range (``coerce``: numeric strings too,
        as zod's ``coerce.number`` reads them: a non-numeric string is ``nan``)."""
        value = self.body.get(name, MISSING)
        if value is MISSING or (value is None and not required):
            if required:
                self.type_issue([name], "number", value)
            return None
        if coerce and isinstance(value, str):
            try:
                value = float(value) if value.strip() else _NAN
            except ValueError:
                value = _NAN
            if value != value:
                self._received([name], "number", "nan")
                return None
        if not isinstance(value, int | float) or isinstance(value, bool):
            self.type_issue([name], "number", value)
            return None
        if isinstance(value, float) and not value.is_integer():
            self._received([name], "integer", "float")
            return None
        number = int(value)
        return number if self._bound(name, number, minimum, maximum) else None

    def string(self, name: str, *, required: bool = False, nullable: bool = False) -> str | None:
        """Read a string field."""
        value = self.body.get(name, MISSING)
        if value is MISSING:
            if required:
                self.type_issue([name], "string", value)
            return None
        if value is None and nullable:
            return None
        if not isinstance(value, str):
            self.type_issue([name], "string", value)
            return None
        return value

    def string_list(self, name: str, *, required: bool = False) -> list[str] | None:
        """Read an array-of-strings field."""
        value = self.body.get(name, MISSING)
        if value is MISSING:
            if required:
                self.type_issue([name], "array", value)
            return None
        return self.strings_at([name], value)

    def strings_at(self, path: Path, value: Any) -> list[str] | None:
        """Check that ``value`` (at ``path``) is an array of strings."""
        if not isinstance(value, list):
            self.type_issue(path, "array", value)
            return None
        ok = True
        for i, item in enumerate(value):
            if not isinstance(item, str):
                self.type_issue([*path, i], "string", item)
                ok = False
        return list(value) if ok else None

    def url_at(self, path: Path, value: Any) -> str | None:
        """Check that ``value`` is an http(s) URL string."""
        if not isinstance(value, str):
            self.type_issue(path, "string", MISSING if value is MISSING else value)
            return None
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            self.string_issue(path, "url", "Invalid url")
            return None
        return value

    def url(self, name: str) -> str | None:
        """Read a required http(s) URL field."""
        return self.url_at([name], self.body.get(name, MISSING))

    def date(self, name: str) -> str | None:
        """Read a required ``YYYY-MM-DD`` date field."""
        value = self.string(name, required=True)
        if value is None:
            return None
        if not _DATE.match(value) or parse_timestamp(value) is None:
            self.string_issue([name], "regex", "Invalid date, expected YYYY-MM-DD")
            return None
        return value

    def field_in(self, obj: JSON, path: Path, key: str, expected: str) -> Any:
        """Read ``obj[key]`` (required) of type ``expected`` ("string" or "array")."""
        value = obj.get(key, MISSING)
        if expected == "string" and not isinstance(value, str):
            self.type_issue([*path, key], "string", value)
            return None
        if expected == "array":
            if value is MISSING:
                self.type_issue([*path, key], "array", value)
                return None
            return self.strings_at([*path, key], value)
        return value
