"""Authentication: an ``Auth`` adds credentials to every request and may renew them.

An auth does no I/O of its own (httpx's auth flow, made async): ``headers()`` gives the
credentials to send now, and ``flow()`` is an async generator that yields each request
it needs sent to the account host (``AccountRequest``) and receives its decoded answer,
so a login or a renewal is driven by the client's pipeline, under the deadline of the
call that needed it, and never calls back into it.

``BearerAuth`` and ``HeaderAuth`` are static. ``ApiKeyAuth`` exchanges a key id and
secret for an access token at the account host, caches it, and renews it once for all
concurrent callers when the service answers 401.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncGenerator, Mapping
from typing import Any, Protocol, runtime_checkable

import attrs

from ._core import validate as _validate
from .errors import APIError, AuthenticationError, ResponseDecodeError, SvcError

LOGIN_PATH = "/api/auth/api-key/login"
REFRESH_PATH = "/api/auth/access-token/refresh"


@attrs.frozen(slots=True)
class AccountRequest:
    """A request an auth's flow needs sent: POST ``body`` as JSON to ``path`` on the
    account host, without credentials; the flow receives the decoded JSON answer."""

    path: str
    body: Mapping[str, Any]


AuthFlow = AsyncGenerator[AccountRequest, Any]
"""What ``Auth.flow`` returns: the account-host requests it needs, one at a time."""


@runtime_checkable
class Auth(Protocol):
    """Supplies credentials for each request and renews them after a 401.

    An auth should also have ``secrets() -> tuple[str, ...]``: every credential it holds,
    so anything built from a server's answer is redacted against them.
    """

    def headers(self) -> Mapping[str, str] | None:
        """Headers to add to the next request; None when ``flow`` must run first."""
        ...

    def flow(self, rejected: Mapping[str, str] | None = None) -> AuthFlow:
        """Make credentials ready, yielding each account-host request that takes.

        With ``rejected`` (the headers a 401 refused), renew them, unless another caller
        already did. A failed request is thrown into the flow, to handle or let through.
        The request is replayed when ``headers()`` then differs from ``rejected``.
        """
        ...


async def _no_requests() -> AuthFlow:
    """The flow of a static auth: nothing to do, nothing to renew."""
    return
    yield  # an async generator that yields nothing


class _StaticAuth:
    """What BearerAuth and HeaderAuth share: one fixed header, never renewed."""

    _headers: dict[str, str]
    _secret: str

    def secrets(self) -> tuple[str, ...]:
        """The credential, for redaction of anything a server echoes back."""
        return (self._secret,)

    def headers(self) -> Mapping[str, str]:
        """The credential's header."""
        return self._headers

    def flow(self, rejected: Mapping[str, str] | None = None) -> AuthFlow:
        """Nothing to log in to; a static credential cannot be renewed."""
        return _no_requests()


class BearerAuth(_StaticAuth):
    """A static bearer token: ``Authorization: Bearer <token>``."""

    def __init__(self, token: str) -> None:
        if not isinstance(token, str) or not token.strip():
            raise ValueError("token must be a non-empty string")
        _validate.header_value(token, "token")
        self._secret = token
        self._headers = {"Authorization": f"Bearer {token}"}

    def __repr__(self) -> str:
        return "BearerAuth(token='[REDACTED]')"


class HeaderAuth(_StaticAuth):
    """A static header of your choice, e.g. ``HeaderAuth("X-Api-Key", key)``."""

    def __init__(self, name: str, value: str) -> None:
        if not isinstance(name, str) or not name or not isinstance(value, str):
            raise TypeError("HeaderAuth takes a header name and a string value")
        if not value.strip():
            raise ValueError("HeaderAuth value must be a non-empty string")
        _validate.header_name(name, "HeaderAuth name")
        _validate.header_value(value, "HeaderAuth value")
        self._name = name
        self._secret = value
        self._headers = {name: value}

    def __repr__(self) -> str:
        return f"HeaderAuth(name={self._name!r}, value='[REDACTED]')"


class ApiKeyAuth:
    """Log in with an API key, cache the access token, renew it on 401 (single flight).

    Renewal first tries the refresh token; if the service refuses it, it logs in again.
    Concurrent requests that fail with the same stale token share one renewal.
    """

    def __init__(self, key_id: str, secret: str) -> None:
        if not isinstance(key_id, str) or not key_id:
            raise ValueError("key_id must be a non-empty string")
        if not isinstance(secret, str) or not secret:
            raise ValueError("secret must be a non-empty string")
        _validate.header_value(key_id, "key_id")
        _validate.header_value(secret, "secret")
        self.key_id = key_id
        self._secret = secret
        self._access: str | None = None
        self._refresh: str | None = None
        self._locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
            weakref.WeakKeyDictionary()
        )  # one per event loop: a lock is bound to the loop it is first awaited in
        self._header: tuple[str | None, dict[str, str]] | None = None
        self.logins = 0
        self.refreshes = 0

    def __repr__(self) -> str:
        state = "logged in" if self._access else "not logged in"
        return f"ApiKeyAuth(key_id={self.key_id!r}, secret='[REDACTED]', {state})"

    def secrets(self) -> tuple[str, ...]:
        """Every secret this auth holds, for redaction of free text."""
        return tuple(s for s in (self._secret, self._access, self._refresh) if s)

    def headers(self) -> Mapping[str, str] | None:
        """The bearer header; None before the first login."""
        if self._access is None:
            return None
        if self._header is None or self._header[0] != self._access:
            self._header = (self._access, {"Authorization": f"Bearer {self._access}"})
        return self._header[1]

    async def flow(self, rejected: Mapping[str, str] | None = None) -> AuthFlow:
        """Log in when there is no token (never logged in, or a renewal that failed or
        was cancelled); after a 401, refresh (or log in again) unless another caller
        already did since ``rejected``. One flow at a time: concurrent callers share one
        login or renewal."""
        loop = asyncio.get_running_loop()
        lock = self._locks.get(loop)
        if lock is None:
            lock = self._locks[loop] = asyncio.Lock()
        async with lock:
            if self._access is not None:
                if rejected is None or rejected.get("Authorization") != f"Bearer {self._access}":
                    return  # renewed meanwhile (or never sent): replay with what there is now
                if self._refresh is not None:
                    try:
                        self._store(
                            (yield AccountRequest(REFRESH_PATH, {"refreshToken": self._refresh}))
                        )
                        self.refreshes += 1
                        return
                    except (AuthenticationError, APIError, ResponseDecodeError):
                        pass  # the refresh token is refused: log in again
                self._access = self._refresh = None
            self._store((yield self._login_request()))
            self.logins += 1

    def _login_request(self) -> AccountRequest:
        return AccountRequest(LOGIN_PATH, {"key": self.key_id, "secret": self._secret})

    def _store(self, body: Any) -> None:
        access = body.get("accessToken") if isinstance(body, dict) else None
        if not isinstance(access, str) or not access:
            raise ResponseDecodeError("login answer has no accessToken", path="$.accessToken")
        try:
            _validate.header_value(access, "accessToken")
        except ValueError:
            raise ResponseDecodeError(
                "login answer's accessToken holds a control character and cannot be sent"
                " in a header",
                path="$.accessToken",
            ) from None
        refresh = body.get("refreshToken")
        self._access = access
        if isinstance(refresh, str) and refresh:
            self._refresh = refresh  # an answer without one keeps the token we have


def secrets_of(auth: Auth | None) -> tuple[str, ...]:
    """Secrets an auth object holds (for redaction), or none."""
    getter = getattr(auth, "secrets", None)
    if callable(getter):
        try:
            return tuple(getter())
        except SvcError:
            return ()
    return ()


def static_headers(auth: Auth) -> Mapping[str, str] | None:
    """The fixed headers of a static auth (BearerAuth, HeaderAuth); None when they may change.

    Lets the pipeline skip awaiting ``auth.headers`` on every call.
    """
    if type(auth) in (BearerAuth, HeaderAuth):
        return auth._headers  # type: ignore[attr-defined, no-any-return]
    return None
