"""One place that hides secrets: URLs, headers and free text all pass through here.

Everything the SDK logs, puts in a repr or in an exception message goes through these
helpers, so a bearer token, API-key secret, refresh token or the signature of a signed
URL never reaches a log line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

import yarl

REDACTED = "[REDACTED]"

_SENSITIVE_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key"}
)
_SENSITIVE_HEADER_PARTS = ("token", "secret", "key", "auth", "signature", "password", "cookie")
# A URL ends before trailing punctuation ("to http://host:9: refused", "(see https://x)").
_URL_RE = re.compile(r"(?i)\b(https?://[^\s'\"<>]+?)(?=[.,:;)\]]*(?:[\s'\"<>]|$))")
_BEARER_RE = re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=-]+")
_JSON_SECRET_RE = re.compile(
    r"""(?i)(["']?(?:secret|refreshToken|accessToken|token|key|password)["']?\s*[:=]\s*)"""
    r"""(["'])[^"']*(?:\2|$)"""  # or cut off before its closing quote (a snippet)
)


_JSON_PLAIN = re.compile(r'[^"\\/\x00-\x1f\x7f-\U0010ffff]*')
"""Text that JSON writes as it is, whatever the encoder: no quote, backslash, slash,
control character or non-ASCII letter."""


def echoed_forms(secret: str) -> tuple[str, ...]:
    """``secret`` as a server may echo it: as it is, and as JSON writes it, once or twice
    over (the service's validation list is JSON inside a body's ``message``), with or
    without ASCII-only escapes and ``\\/`` for a slash; longest first."""
    forms = {secret}
    if _JSON_PLAIN.fullmatch(secret) is None:
        for _ in range(2):
            for form in list(forms):
                for ascii_only in (False, True):
                    escaped = json.dumps(form, ensure_ascii=ascii_only)[1:-1]
                    forms.update((escaped, escaped.replace("/", "\\/")))
    return tuple(sorted(forms, key=len, reverse=True))


def redact_url(url: str | yarl.URL) -> str:
    """Return ``url`` with user info and every query value replaced.

    API calls carry no query string, so any query present belongs to a signed link
    (``X-Amz-Signature``, ``token``, ``t``, ...) and all its values are hidden; names stay
    so that a reader still sees what kind of link it was.
    """
    try:
        parsed = url if isinstance(url, yarl.URL) else yarl.URL(str(url))
    except (ValueError, TypeError):
        return REDACTED
    if parsed.user is not None or parsed.password is not None:
        parsed = parsed.with_user(None)
    if not parsed.raw_query_string:
        return str(parsed)
    query = "&".join(f"{name}={REDACTED}" for name in parsed.query)
    return str(parsed.with_query(None)) + "?" + query


def is_sensitive_header(name: str) -> bool:
    """Tell whether a header's value must never be shown."""
    lowered = name.lower()
    return lowered in _SENSITIVE_HEADERS or any(p in lowered for p in _SENSITIVE_HEADER_PARTS)


def redact_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """Copy ``headers`` with the values of credential-bearing headers hidden."""
    return {k: (REDACTED if is_sensitive_header(k) else v) for k, v in headers.items()}


SDK_REQUEST_HEADERS = frozenset(
    {
        "accept",
        "accept-encoding",
        "content-length",
        "content-type",
        "range",
        "traceparent",
        "tracestate",
        "user-agent",
        "x-request-id",
    }
)
"""The request headers the SDK itself sends with values that are never credentials."""


def redact_request_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """Copy a request's ``headers`` with every value hidden but those of
    ``SDK_REQUEST_HEADERS``: any other may hold a credential under a name of the
    caller's choice (``HeaderAuth("X-Tenant", ...)``, ``extra_headers``)."""
    return {k: (v if k.lower() in SDK_REQUEST_HEADERS else REDACTED) for k, v in headers.items()}


def hide_secrets(text: str, secrets: Iterable[str]) -> str:
    """``text`` with each of ``secrets``, in every form a server may echo it in
    (``echoed_forms``), replaced by ``[REDACTED]``, and nothing else changed. A secret
    shorter than 4 characters is left: it would hide common text."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            for form in echoed_forms(secret):
                text = text.replace(form, REDACTED)
    return text


def redact_text(text: str, secrets: Iterable[str] = ()) -> str:
    """Hide URLs' query values, bearer tokens, JSON-ish secret fields and known secrets."""
    text = hide_secrets(text, secrets)
    text = _URL_RE.sub(lambda m: redact_url(m.group(1)), text)
    text = _BEARER_RE.sub(lambda m: f"{m.group(1)} {REDACTED}", text)
    return _JSON_SECRET_RE.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}{m.group(2)}", text)


def redact_value(value: Any, secrets: Iterable[str] = ()) -> Any:
    """Redact every string inside decoded JSON (or a plain string) with ``redact_text``.

    Walks with a stack of its own rather than by recursion, so a body nested as deep as
    the JSON parser allows is copied, never a ``RecursionError``.
    """
    secrets = tuple(secrets)
    if isinstance(value, str):
        return redact_text(value, secrets)
    if not isinstance(value, dict | list):
        return value
    root: Any = {} if isinstance(value, dict) else []
    stack: list[tuple[Any, Any]] = [(value, root)]
    while stack:
        source, target = stack.pop()
        items = source.items() if isinstance(source, dict) else enumerate(source)
        for key, item in items:
            if isinstance(item, str):
                copy: Any = redact_text(item, secrets)
            elif isinstance(item, dict | list):
                copy = {} if isinstance(item, dict) else []
                stack.append((item, copy))
            else:
                copy = item
            if isinstance(target, dict):
                target[key] = copy
            else:
                target.append(copy)
    return root
