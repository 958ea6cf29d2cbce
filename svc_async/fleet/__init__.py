"""A fleet: many processes, on many machines, on one account, sharing state in Redis.

This package's ``__init__`` only reads the setting; its modules, which import ``redis``,
load only when a client or receiver is given a fleet URL (``fleet=`` or
``SVC_FLEET_URL``). ``store`` is the connection that degrades instead of failing,
``budget`` the shared rate budget.
"""

from __future__ import annotations

import os

__all__ = ["fleet_url"]


def fleet_url(url: str | None) -> str | None:
    """The fleet URL given, else ``SVC_FLEET_URL``, else None (no fleet); checked."""
    if url is None:
        url = os.environ.get("SVC_FLEET_URL") or None
    if url is None:
        return None
    from .connect import check_url  # no redis import: the URL is only parsed

    check_url(url)
    return url
