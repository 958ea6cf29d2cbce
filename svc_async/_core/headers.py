"""What an HTTP header may hold: the one rule, shared by the argument checks and the transport.

It sits below both: the transport refuses a header aiohttp would refuse (``header_problem``)
without importing the argument checks (``_validate``), which know the service's requests.
Headers already known to pass (``SendableHeaders``) are not scanned again.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from multidict import CIMultiDictProxy

__all__ = ["FORBIDDEN", "TOKEN", "SendableHeaders", "header_problem"]

FORBIDDEN = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
"""What no HTTP header may hold (RFC 9110 5.5): control characters but tab, CR, LF and NUL
among them. aiohttp refuses such a header at send time; the SDK refuses it when given."""

TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
"""An HTTP token (RFC 9110 5.6.2): what a header name (and a method) is made of."""


def header_problem(headers: Mapping[str, str]) -> str | None:
    """The name of the first header aiohttp would refuse to send, or None.

    What it refuses: a name or value that is not a string or holds a control character,
    and a name that is no HTTP token (``X:y`` or ``X y`` would be written, and read by a
    server as another header). It runs on every request a transport is handed but
    ``SendableHeaders``, so the common case, all fine, is one pass over the joined names
    and values: ``isprintable`` (no control character at all) costs half the pattern's
    search, which decides only what it doubts (a tab, a character not printable). Only a
    refusal looks further.
    """
    try:
        joined = "".join([*headers.keys(), *headers.values()])
    except TypeError:
        pass  # a name or value that is not a string: found below
    else:
        fine = joined.isprintable() or FORBIDDEN.search(joined) is None
        if fine and all(TOKEN.fullmatch(name) for name in headers):
            return None
    for key, value in headers.items():
        if not isinstance(key, str) or not isinstance(value, str):
            return str(key)
        if TOKEN.fullmatch(key) is None or FORBIDDEN.search(value):
            return key
    return None


class SendableHeaders(CIMultiDictProxy[str]):
    """Request headers whose maker vouches that ``header_problem`` finds nothing in them.

    The pipeline makes them: the client's merged headers, checked once per distinct
    credentials, plus the call's own id (hex digits), so a transport sends them without
    scanning every request again. Anything else a transport is handed is checked as
    before. Vouching wrongly loses only the early refusal: aiohttp then refuses the
    header itself, once it holds a connection.
    """

    __slots__ = ()
