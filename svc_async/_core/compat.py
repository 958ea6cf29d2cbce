"""The package's only reach-ins into other packages' private parts, each version-gated.

Nothing else in ``svc_async`` reads or writes another package's ``_name``
(``tests/test_architecture.py`` checks, ``getattr``/``setattr`` strings included). Each
reach-in below was written against the versions named; outside them, or when the
private part is missing, the public path is taken (or nothing is done).

1. ``abandon``: an aiohttp session whose event loop is closed (a second
   ``asyncio.run()``), dropped without that loop. aiohttp's public ``close()`` of a
   session or connector is a coroutine for the loop, and a transport closes its socket
   only through its loop (``transport.close()`` schedules it), so there is no public
   way to close the sockets of a dead loop: the idle connections are read from
   ``BaseConnector._conns`` (aiohttp 3.x; no public listing), each socket from
   asyncio's selector transport ``_sock`` (its ``get_extra_info("socket")`` wrapper has
   no ``close``), and the connector is marked ``_closed`` so it does not warn
   "Unclosed" when collected (its public ``close()`` would also mark it, but hands back
   an awaitable that warns unless awaited, on a loop). The session is detached
   publicly (``ClientSession.detach()``). aiohttp 3.9 to 3.x and Python 3.11 to 3.14:
   outside them only the public ``detach`` is done, and the sockets are closed when
   collected.
2. ``caller_frame``: ``sys._getframe`` (documented, CPython's), where a client was
   opened for the "unclosed client" warning; ``inspect.currentframe()`` is the same
   function behind a check, and other Pythons may have neither (then None).
"""

from __future__ import annotations

import contextlib
import socket
import sys
from types import FrameType
from typing import Any

__all__ = ["abandon", "caller_frame"]


def _version(text: str) -> tuple[int, ...]:
    """``"3.14.5"`` as ``(3, 14, 5)`` (digits only; ``"4.0.0a1"`` is ``(4, 0, 0)``)."""
    parts = []
    for piece in text.split(".")[:3]:
        digits = "".join(c for c in piece if c.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


_SOCKETS = (3, 11) <= sys.version_info[:2] <= (3, 14)
"""Python versions whose selector transports were checked to hold their socket in ``_sock``."""


def _aiohttp_checked() -> bool:
    """Whether the installed aiohttp is one ``abandon`` was written against (3.9 to 3.x)."""
    import aiohttp

    return (3, 9) <= _version(aiohttp.__version__) < (4,)


def abandon(session: Any) -> None:
    """Drop an aiohttp ``ClientSession`` whose loop is closed: close its sockets without
    that loop and mark it and its connector closed (see the module's docstring)."""
    connector = session.connector
    with contextlib.suppress(Exception):
        session.detach()  # the session is closed; the connector is ours to end
    if connector is None or not _aiohttp_checked():
        return
    conns = getattr(connector, "_conns", None)
    if isinstance(conns, dict):
        for entries in conns.values():
            for protocol, _ in entries:
                _close_socket(getattr(protocol, "transport", None))
        conns.clear()
    with contextlib.suppress(Exception):
        connector._closed = True  # so it does not warn "Unclosed" when collected


def _close_socket(transport: Any) -> None:
    """Close the socket of an asyncio selector transport whose loop is gone."""
    if not _SOCKETS:
        return
    sock = getattr(transport, "_sock", None)
    if not isinstance(sock, socket.socket):
        return
    with contextlib.suppress(OSError):
        sock.close()
    # Without its loop the transport cannot close itself; mark it closed.
    transport._sock = None


def caller_frame(depth: int = 1) -> FrameType | None:
    """The frame ``depth`` calls above the caller (1: the caller's caller), or None."""
    getframe = getattr(sys, "_getframe", None)
    if getframe is None:
        return None
    try:
        frame: FrameType = getframe(depth + 1)
    except ValueError:  # the stack is not that deep
        return None
    return frame
