"""Argument checks run before anything is sent: one clear ValueError/TypeError each."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping
from typing import Any

import yarl

MAX_PAGE_SIZE = 100
"""The service's largest accepted ``limit``."""

TAG_MIN, TAG_MAX, MAX_SEARCH_TAGS = 2, 255, 100
"""Published bounds: tag length 2..255 characters, at most 100 tags in a search."""

_COUNTRY = re.compile(r"[A-Z]{2}")


def positive_id(value: Any, name: str) -> int:
    """An id: a positive int (bools and strings refused)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value <= 0:
        raise ValueError(f"{name} must be positive, got {value}")
    return value


def optional_id(value: Any, name: str) -> int | None:
    """An id or None."""
    return None if value is None else positive_id(value, name)


def count(value: Any, name: str, *, minimum: int = 0, maximum: int | None = None) -> int:
    """A non-negative int (limit, offset, page size, concurrency) within bounds."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < minimum or (maximum is not None and value > maximum):
        upper = f" and at most {maximum}" if maximum is not None else ""
        raise ValueError(f"{name} must be at least {minimum}{upper}, got {value}")
    return value


def aware_datetime(value: Any, name: str) -> dt.datetime:
    """A timezone-aware datetime."""
    if not isinstance(value, dt.datetime):
        raise TypeError(f"{name} must be a datetime, got {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"{name} must be timezone-aware (e.g. datetime.now(UTC))")
    return value


def string(value: Any, name: str, *, allow_empty: bool = False) -> str:
    """A string (non-empty unless allowed)."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    if not allow_empty and not value.strip():
        raise ValueError(f"{name} must not be empty")
    return value


def string_list(value: Any, name: str) -> list[str]:
    """A list (or other iterable, not a bare string) of strings."""
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise TypeError(f"{name} must be a list of str, got {type(value).__name__}")
    items = list(value)
    for item in items:
        if not isinstance(item, str):
            raise TypeError(f"{name} must hold only str, found {type(item).__name__}")
    return items


def tags(value: Any, name: str = "tags", *, maximum: int | None = None) -> list[str]:
    """Tags within the published bounds (2 to 255 characters each)."""
    items = string_list(value, name)
    if maximum is not None and len(items) > maximum:
        raise ValueError(f"{name} may hold at most {maximum} tags, got {len(items)}")
    for tag in items:
        if not TAG_MIN <= len(tag) <= TAG_MAX:
            raise ValueError(f"each of {name} must be {TAG_MIN} to {TAG_MAX} characters: {tag!r}")
    return items


def country_codes(value: Any, name: str) -> list[str]:
    """Two-letter uppercase country codes."""
    items = string_list(value, name)
    for code in items:
        if not _COUNTRY.fullmatch(code):
            raise ValueError(f"{name} must hold two uppercase letters per country, got {code!r}")
    return items


def http_url(value: Any, name: str) -> str:
    """An absolute http(s) URL."""
    string(value, name)
    try:
        url = yarl.URL(value)
    except (ValueError, TypeError):
        raise ValueError(f"{name} is not a valid URL") from None
    if url.scheme not in ("http", "https") or not url.host:
        raise ValueError(f"{name} must be an absolute http(s) URL")
    return str(value)


def email(value: Any, name: str = "email") -> str:
    """An email address (something@something)."""
    string(value, name)
    local, at, domain = str(value).rpartition("@")
    if not at or not local or not domain or any(c.isspace() for c in value):
        raise ValueError(f"{name} must be an email address")
    return str(value)


def filters(value: Any, name: str = "fields") -> list[dict[str, Any]]:
    """Signup-field filters: a list of JSON objects, passed to the service as given."""
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        raise TypeError(f"{name} must be a list of dicts")
    items = list(value)
    for item in items:
        if not isinstance(item, Mapping):
            raise TypeError(f"{name} must hold dicts, found {type(item).__name__}")
    return [dict(item) for item in items]
