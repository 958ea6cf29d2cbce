"""Who may call: bearer tokens issued at login/refresh, and the per-token rate limit."""

from __future__ import annotations

import hashlib
import hmac
import math
from collections.abc import Mapping

from .state import Account, State

__all__ = ["RateWindows", "TokenBook", "bearer"]


def bearer(headers: Mapping[str, str]) -> str | None:
    """The bearer token of an ``Authorization`` header (None when absent or another scheme)."""
    value = headers.get("Authorization") or headers.get("authorization") or ""
    scheme, _, token = value.partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


class TokenBook:
    """Issues access/refresh token pairs and resolves a token to its account."""

    def __init__(self, state: State, seed: int) -> None:
        self._state = state
        self._secret = hashlib.sha256(f"fake-secret-{seed}".encode()).digest()
        self._access: dict[str, tuple[Account, float | None]] = {}
        self._refresh: dict[str, Account] = {}
        self._counter = 0

    def _new(self, kind: str) -> str:
        self._counter += 1
        digest = hmac.new(self._secret, f"{kind}:{self._counter}".encode(), hashlib.sha256)
        return f"{kind}_{self._counter}_{digest.hexdigest()[:32]}"

    def issue(self, account: Account, now: float, ttl: float | None) -> dict[str, str]:
        """A new ``{accessToken, refreshToken}`` pair for ``account``."""
        access, refresh = self._new("at"), self._new("rt")
        self._access[access] = (account, None if ttl is None else now + ttl)
        self._refresh[refresh] = account
        return {"accessToken": access, "refreshToken": refresh}

    def redeem(self, refresh: str) -> Account | None:
        """The account of a refresh token, which is used up (None: unknown)."""
        return self._refresh.pop(refresh, None)

    def account_for(self, token: str | None, now: float) -> Account | None:
        """The account a bearer token acts for (None: unknown or expired)."""
        if token is None:
            return None
        for account in self._state.accounts:
            if token in account.tokens:
                return account
        issued = self._access.get(token)
        if issued is None:
            return None
        account, expires = issued
        return None if expires is not None and now >= expires else account

    def expire_all(self, now: float) -> None:
        """Expire every issued access token (refresh tokens and static tokens stay)."""
        self._access = {t: (a, now) for t, (a, _) in self._access.items()}


class RateWindows:
    """A fixed window of ``budget`` requests per ``period`` seconds, per key."""

    def __init__(self) -> None:
        self._windows: dict[str, tuple[float, int]] = {}

    def take(
        self, key: str, now: float, limit: tuple[int, float] | None
    ) -> tuple[dict[str, str], bool]:
        """Spend one request of ``key``'s window: (``x-ratelimit-*`` headers, exceeded)."""
        if limit is None:
            return {}, False
        budget, period = limit
        start, used = self._windows.get(key, (now, 0))
        if now >= start + period:
            start, used = now, 0
        exceeded = used >= budget
        if not exceeded:
            used += 1
        self._windows[key] = (start, used)
        reset = max(0, math.ceil(start + period - now))
        headers = {
            "x-ratelimit-limit": str(budget),
            "x-ratelimit-remaining": str(max(0, budget - used)),
            "x-ratelimit-reset": str(reset),
        }
        if exceeded:
            headers["Retry-After"] = str(reset)
        return headers, exceeded
