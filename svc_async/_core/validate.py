"""Argument checks run before anything is sent: one clear ValueError/TypeError each."""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import yarl

from .headers import FORBIDDEN, TOKEN

MAX_PAGE_SIZE = 100
"""The service's largest accepted ``limit``."""

TAG_MIN, TAG_MAX, MAX_SEARCH_TAGS = 2, 255, 100
"""Published bounds: a created job's tags are 2..255 characters each; a search takes at
most 100 tags of any length."""

SOURCES_WITHOUT_FILES: frozenset[str] = frozenset({"Service", "Pending License"})
"""Sources for which no licence file URLs are supplied (the service finds Service
licences from the email; a pending licence has no file yet)."""

_NOT_IN_HOST = re.compile(r"[\s\x00-\x1f\x7f]")
"""What no URL parser takes in a host (the WHATWG parser refuses it)."""

_EMAIL_MAX, _LOCAL_MAX, _LABEL_MAX = 254, 64, 63
_ATOM = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~\-\u00a1-\uffff]+"
_LOCAL = re.compile(rf"{_ATOM}(?:\.{_ATOM})*")
_LABEL = re.compile(
    r"[A-Za-z0-9\u00a1-\uffff](?:[A-Za-z0-9\u00a1-\uffff-]*[A-Za-z0-9\u00a1-\uffff])?"
)
_TLD = re.compile(r"[A-Za-z\u00a1-\uffff]{2,}|xn--[A-Za-z0-9-]{2,}")


def positive_id(value: Any, name: str) -> int:
    """An id: a positive int (bools and strings refused)."""
    if type(value) is int and value > 0:  # the common case, on every call: checked first
        return value
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


def header_value(value: Any, name: str) -> str:
    """A string fit to send as a header value (or a credential sent in one).

    Refuses control characters (CR, LF, NUL and the others but tab), which would split or
    corrupt the request. The message never quotes the value: it may be a secret.
    """
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    if FORBIDDEN.search(value) is not None:
        raise ValueError(
            f"{name} holds a control character (CR, LF, NUL or another) that cannot be sent"
            " in an HTTP header; check for a stray newline"
        )
    return value


def header_name(value: Any, name: str) -> str:
    """An HTTP header name: a non-empty token (letters, digits and ``!#$%&'*+-.^_`|~``)."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    if not TOKEN.fullmatch(value):
        raise ValueError(
            f"{name} must be an HTTP header name (letters, digits and !#$%&'*+-.^_`|~),"
            f" got {value!r:.60}"
        )
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


def tags(
    value: Any,
    name: str = "tags",
    *,
    maximum: int | None = None,
    lengths: tuple[int, int] | None = (TAG_MIN, TAG_MAX),
) -> list[str]:
    """Tags as strings, at most ``maximum`` of them, each within ``lengths`` (None: any).

    A created job's tags are 2..255 characters each; search tags have no length rule.
    """
    items = string_list(value, name)
    if maximum is not None and len(items) > maximum:
        raise ValueError(f"{name} may hold at most {maximum} tags, got {len(items)}")
    if lengths is not None:
        low, high = lengths
        for i, tag in enumerate(items):
            if not low <= len(tag) <= high:
                raise ValueError(
                    f"{name}[{i}] must be {low} to {high} characters, got {len(tag)}: {tag!r:.60}"
                )
    return items


def country_codes(value: Any, name: str) -> list[str]:
    """Territories: strings of exactly two characters, returned in upper case.

    The service checks only the length; codes are ISO 3166 alpha-2, so ``"gb"`` is sent
    as ``"GB"``.
    """
    items = string_list(value, name)
    for i, code in enumerate(items):
        if len(code) != 2:
            raise ValueError(
                f"{name}[{i}] must be a two-letter country code such as 'GB', got {code!r:.20}"
            )
    return [code.upper() for code in items]


def http_url(value: Any, name: str) -> str:
    """An absolute http(s) URL, its host free of spaces and control characters."""
    string(value, name)
    try:
        url = yarl.URL(value)
        host = url.host  # an IDNA host that does not decode is a UnicodeError (a ValueError)
    except (ValueError, TypeError):
        raise ValueError(f"{name} is not a valid URL") from None
    if url.scheme not in ("http", "https") or not host:
        raise ValueError(f"{name} must be an absolute http(s) URL")
    if _NOT_IN_HOST.search(host):
        raise ValueError(f"{name} is not a valid URL (a space or control character in its host)")
    return str(value)


def is_email(value: str) -> bool:
    """Whether ``value`` is an address as a typical server-side validator accepts it.

    ``local@domain.tld``: a dot-atom local part (letters, digits and ``!#$%&'*+/=?^_`{|}~-``,
    dots only between them) of at most 64 characters; a domain of dot-separated labels
    (letters, digits, inner hyphens, at most 63 characters each) ending in an alphabetic
    top-level domain of two or more letters; no spaces; 254 characters at most.
    """
    if len(value) > _EMAIL_MAX or value.count("@") != 1 or any(c.isspace() for c in value):
        return False
    local, _, domain = value.partition("@")
    if len(local) > _LOCAL_MAX or not _LOCAL.fullmatch(local):
        return False
    labels = domain.split(".")
    if len(labels) < 2 or not _TLD.fullmatch(labels[-1]):
        return False
    return all(len(label) <= _LABEL_MAX and _LABEL.fullmatch(label) for label in labels)


def email(value: Any, name: str = "email") -> str:
    """A valid email address (see ``is_email``)."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    if not is_email(value):
        raise ValueError(f"{name} must be a valid email address like name@example.com")
    return value


def optional_email(value: Any, name: str = "email") -> str | None:
    """A valid email address or None (sent as ``null``)."""
    return None if value is None else email(value, name)


def account_name(value: Any) -> str | None:
    """A fleet's ``account=``: None, or a name that is not blank."""
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise ValueError("account must be a non-empty string naming the account")
    return value


def positive_seconds(value: Any, name: str) -> float:
    """A duration: a positive number of seconds (bools refused)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ValueError(f"{name} must be a positive number of seconds")
    return float(value)


def seconds(value: Any, name: str) -> float:
    """A duration that may be nothing: a finite number of seconds, 0 or more."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number of seconds, not {type(value).__name__}")
    if not 0 <= value < math.inf:
        raise ValueError(f"{name} must be a finite number of seconds, 0 or more")
    return float(value)


def optional_string(value: Any, name: str) -> str | None:
    """Any string (empty allowed) or None."""
    if value is None:
        return None
    return string(value, name, allow_empty=True)


def one_of(value: Any, allowed: Sequence[str], name: str) -> str:
    """One of ``allowed`` (strings, or a StrEnum's members: ``tuple(JobType)``), given as
    the string or a StrEnum member of the same value."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    if str(value) not in allowed:
        listed = ", ".join(repr(str(a)) for a in allowed)
        raise ValueError(f"{name} must be one of {listed}; got {str(value)!r:.60}")
    return str(value)


def license_details(value: Any, name: str, sources: Sequence[str]) -> None:
    """One ``licenseDetails`` item: one of ``sources``, a name, and file URLs where allowed."""
    for attribute in ("license_source", "license_source_name", "license_file_urls"):
        if not hasattr(value, attribute):
            raise TypeError(f"{name} must be a LicenseDetails, got {type(value).__name__}")
    source = one_of(value.license_source, sources, f"{name}.license_source")
    string(value.license_source_name, f"{name}.license_source_name", allow_empty=True)
    urls = string_list(value.license_file_urls, f"{name}.license_file_urls")
    if urls and source in SOURCES_WITHOUT_FILES:
        raise ValueError(
            f"{name}.license_file_urls must be empty for license_source {source!r}"
            " (the service finds Service licences from the email; Pending has no file yet)"
        )
    for i, url in enumerate(urls):
        http_url(url, f"{name}.license_file_urls[{i}]")


def output_file(
    value: Any, name: str, operations: Sequence[str], file_types: Sequence[str]
) -> None:
    """An ``outputFile`` request: one of ``operations``, one of ``file_types`` or unset,
    a callback URL or unset."""
    for attribute in ("operation", "file_type", "callback_url"):
        if not hasattr(value, attribute):
            raise TypeError(f"{name} must be an OutputFileRequest, got {type(value).__name__}")
    one_of(value.operation, operations, f"{name}.operation")
    if value.file_type is not None:
        one_of(value.file_type, file_types, f"{name}.file_type")
    if value.callback_url is not None:
        http_url(value.callback_url, f"{name}.callback_url")


def filters(value: Any, name: str = "fields") -> list[dict[str, str]]:
    """Signup-field filters: ``[{"key": str, "value": str}, ...]``, sent as given.

    The service matches each key/value pair case-insensitively; anything else in an item
    would be dropped by it silently, so it is refused here.
    """
    shape = f'{name} must be a list of {{"key": str, "value": str}} dicts'
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        raise TypeError(f"{shape}, got {type(value).__name__}")
    out: list[dict[str, str]] = []
    for i, item in enumerate(value):
        where = f"{name}[{i}]"
        if not isinstance(item, Mapping):
            raise TypeError(
                f"{where} must be a dict with 'key' and 'value', got {type(item).__name__}"
            )
        keys = set(item)
        if keys != {"key", "value"}:
            parts = {"missing": {"key", "value"} - keys, "unknown": keys - {"key", "value"}}
            detail = "; ".join(
                f"{what} {', '.join(sorted(map(str, names)))}"
                for what, names in parts.items()
                if names
            )
            raise ValueError(f"{where} must have exactly 'key' and 'value' ({detail})")
        for part in ("key", "value"):
            if not isinstance(item[part], str):
                raise TypeError(f"{where}.{part} must be a str, got {type(item[part]).__name__}")
        out.append({"key": item["key"], "value": item["value"]})
    return out
