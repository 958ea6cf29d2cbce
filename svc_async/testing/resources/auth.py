"""Signing in: an API key exchanged for tokens, and a refresh token for new ones.

Both routes are open (no bearer token needed). Rules: ``key`` and ``secret`` strings;
``refreshToken`` a string, each refresh token working once.
"""

from __future__ import annotations

import hmac

from ..validation import Validator
from ..wire import HTTPError
from .base import Answer, Call, Core, Route, read_body

__all__ = ["ROUTES"]


def _login(core: Core, call: Call) -> Answer:
    """``POST /api/auth/api-key/login`` ``{key, secret}``."""
    v = Validator(read_body(call))
    key, secret = v.accepted((v.string("key", required=True), v.string("secret", required=True)))
    for account in core.state.accounts:
        stored = account.api_keys.get(key or "")
        if stored is not None and hmac.compare_digest(stored, secret or ""):
            return 200, core.tokens.issue(account, call.now, core.settings.token_ttl)
    raise HTTPError(401, "Invalid API key")


def _refresh(core: Core, call: Call) -> Answer:
    """``POST /api/auth/access-token/refresh`` ``{refreshToken}`` (each works once)."""
    v = Validator(read_body(call))
    token = v.accepted(v.string("refreshToken", required=True))
    account = core.tokens.redeem(token or "")
    if account is None:
        raise HTTPError(401, "Invalid refresh token")
    return 200, core.tokens.issue(account, call.now, core.settings.token_ttl)


ROUTES: tuple[Route, ...] = (
    Route("POST", "/api/auth/api-key/login", _login, auth=False),
    Route("POST", "/api/auth/access-token/refresh", _refresh, auth=False),
)
