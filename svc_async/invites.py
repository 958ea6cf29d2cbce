"""Pre-filled signup links built from an event's or season's ``invite_url``.

The service's signup form reads query parameters: one per signup field, named by the
field's ``key`` (``&uniqueID=12345678``), plus ``entryName`` and ``entryEmail`` for the
default name and email questions. Values must be URI-encoded. ``referrerURL``, ``token``,
``entryEmail`` and ``entryName`` cannot be field keys; the invite URL's own query (its
``token``) is kept exactly as the service wrote it.
"""

from __future__ import annotations

import logging
import urllib.parse
from collections.abc import Mapping
from typing import Any

from ._core import validate as v

logger = logging.getLogger(__name__)

__all__ = ["RESERVED_KEYS", "invite_link"]

RESERVED_KEYS: frozenset[str] = frozenset({"referrerURL", "token", "entryEmail", "entryName"})
"""Query parameters the signup form reserves: never usable as field keys."""

NAME_PARAM, EMAIL_PARAM = "entryName", "entryEmail"


def _invite_url(target: Any) -> str:
    """The invite URL of an Event/Season (anything with ``invite_url``) or a URL string."""
    if isinstance(target, str):
        url = target
        where = "invite URL"
    elif hasattr(target, "invite_url"):
        url = target.invite_url
        where = f"{type(target).__name__} {getattr(target, 'id', '?')}"
        if url is None:
            raise ValueError(f"{where} has no invite_url (the service sent null)")
    else:
        raise TypeError(
            "target must be an Event, a Season or an invite URL string,"
            f" got {type(target).__name__}"
        )
    # Reported without the URL itself: its token lets anyone sign up.
    try:
        v.http_url(url, "invite_url")
    except (TypeError, ValueError):
        raise ValueError(f"{where}: invite_url is not an absolute http(s) URL") from None
    return str(url)


def _known_keys(target: Any) -> set[str]:
    """The signup-field keys an Event/Season declares (empty when it lists none)."""
    fields = getattr(target, "signup_fields", None) or ()
    return {f.key for f in fields if isinstance(getattr(f, "key", None), str)}


def _value(value: Any, name: str) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise TypeError(f"{name} must be a str (or an int), got {type(value).__name__}")
    return str(value)


def _encode(text: str) -> str:
    """Percent-encode like JavaScript's ``encodeURIComponent`` (what the form decodes)."""
    return urllib.parse.quote(text, safe="-_.!~*'()")


def invite_link(
    target: Any,
    fields: Mapping[str, str | int] | None = None,
    *,
    name: str | None = None,
    email: str | None = None,
    check_keys: bool = True,
) -> str:
    """A signup link for ``target`` that pre-fills the form.

    ``target`` is an ``Event`` or ``Season`` (its ``invite_url``) or the invite URL itself.
    ``fields`` maps signup-field keys to answers; ``name`` and ``email`` pre-fill the
    default name and email questions. Values are URI-encoded; the invite URL's own query
    (its ``token``) and fragment are kept. Reserved keys (``RESERVED_KEYS``) are refused;
    with ``check_keys`` and a target that lists keyed signup fields, so is a key it does
    not list (a typo would silently pre-fill nothing). A parameter the invite URL already
    carries under one of these names is replaced.
    """
    url = _invite_url(target)
    if fields is None:
        fields = {}
    if not isinstance(fields, Mapping):
        raise TypeError(
            f"fields must be a mapping of field key to value, got {type(fields).__name__}"
        )
    known = _known_keys(target) if check_keys else set()
    params: list[tuple[str, str]] = []
    for key, value in fields.items():
        if not isinstance(key, str) or not key:
            raise TypeError(f"fields keys must be non-empty strings, got {key!r:.40}")
        if key in RESERVED_KEYS:
            raise ValueError(
                f"fields[{key!r}]: {key!r} is reserved by the signup form"
                f" ({', '.join(sorted(RESERVED_KEYS))}); use name=/email= for the defaults"
            )
        if known and key not in known:
            raise ValueError(
                f"fields[{key!r}]: no signup field has that key (known: {', '.join(sorted(known))})"
            )
        params.append((key, _value(value, f"fields[{key!r}]")))
    if name is not None:
        params.append((NAME_PARAM, v.string(name, "name")))
    if email is not None:
        params.append((EMAIL_PARAM, v.email(email, "email")))
    return _with_params(url, params)


def _with_params(url: str, params: list[tuple[str, str]]) -> str:
    """``url`` with ``params`` appended; the existing query is kept byte for byte except
    for parameters of the same names, which are dropped."""
    if not params:
        return url
    parts = urllib.parse.urlsplit(url)
    replaced = {key for key, _ in params}
    kept = [
        piece
        for piece in parts.query.split("&")
        if piece and urllib.parse.unquote_plus(piece.partition("=")[0]) not in replaced
    ]
    added = [f"{_encode(key)}={_encode(value)}" for key, value in params]
    return urllib.parse.urlunsplit(parts._replace(query="&".join(kept + added)))
