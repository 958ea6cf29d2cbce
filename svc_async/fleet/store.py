"""The fleet's connection to Redis: short timeouts, one warning per outage, key namespaces.

Every fleet feature runs its Redis commands through ``Store.run``, which never raises:
a store that is down, slow (past ``timeout``) or restarted answers None, the caller falls
back to local behaviour, and the first failure of an outage logs one WARNING. While the
store is down it is tried again at most once per ``retry_every`` seconds; the first
success logs an INFO line and the fleet rejoins.

Keys are ``svc:<namespace>:<name>``, the namespace a SHA-256 digest of the account (the
base URL and the credential's identity): neither a token nor a secret is written.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError

from ..clock import SYSTEM_CLOCK, Clock
from ..redact import redact_url

logger = logging.getLogger(__name__)

T = TypeVar("T")

DEFAULT_TIMEOUT = 0.5
"""Seconds one store command may take before the fleet acts without it."""

_RETRY_EVERY = 1.0


async def cancel_and_wait(task: asyncio.Task[Any], every: float, tries: int = 10) -> None:
    """Cancel ``task`` and wait until it ends, cancelling it again every ``every`` seconds.

    redis-py can swallow a cancellation that races with a read's own timeout (likely on
    a loaded machine): the read then waits on, and a close that awaited the task once
    hung for ever. A task that outlives ``tries`` cancellations is left behind.
    """
    for _ in range(tries):
        if task.done():
            break
        task.cancel()
        await asyncio.wait({task}, timeout=every)
    if task.done() and not task.cancelled():
        task.exception()  # retrieved: what a closing task raised is of no use now


def account_namespace(base_url: str, identity: str) -> str:
    """The key namespace of an account: a digest of base URL and credential identity."""
    digest = hashlib.sha256(f"{base_url}\0{identity}".encode()).hexdigest()
    return digest[:24]


def credential_identity(auth: Any) -> str:
    """What identifies an account's credential, digested (never the credential itself).

    An API key's public id when there is one; otherwise a SHA-256 digest of the
    credential's secrets (a token is high-entropy: the digest cannot be turned back).
    """
    key_id = getattr(auth, "key_id", None)
    if isinstance(key_id, str) and key_id:
        return "key:" + hashlib.sha256(key_id.encode()).hexdigest()
    secrets = getattr(auth, "secrets", None)
    parts = tuple(secrets()) if callable(secrets) else ()
    return "secret:" + hashlib.sha256("\0".join(parts).encode()).hexdigest()


class Store:
    """A Redis client that degrades instead of failing (see the module docstring)."""

    def __init__(
        self,
        url: str,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        retry_every: float = _RETRY_EVERY,
        clock: Clock | None = None,
    ) -> None:
        if not isinstance(url, str) or not url.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError("fleet must be a redis://, rediss:// or unix:// URL")
        self.url = url
        self.clock: Clock = clock or SYSTEM_CLOCK
        self.timeout = timeout
        self.retry_every = retry_every
        self.redis: aioredis.Redis = aioredis.Redis.from_url(
            url,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            retry=Retry(NoBackoff(), 0),
            health_check_interval=0,
        )
        self.up = True
        """False from a failed command until one succeeds again."""
        self._retry_at = 0.0
        self.outages = 0

    def __repr__(self) -> str:
        state = "up" if self.up else "down"
        return f"<Store {redact_url(self.url)} {state}>"

    @property
    def available(self) -> bool:
        """Whether a command is worth trying now (up, or down long enough to try again)."""
        return self.up or self.clock.now() >= self._retry_at

    async def run(
        self,
        command: Callable[[aioredis.Redis], Awaitable[T]],
        *,
        timeout: float | None = None,
        block: float = 0.0,
    ) -> T | None:
        """The command's answer, or None when the store is down, slow or failing.

        ``timeout`` may shorten the store's own; ``block`` adds the seconds a blocking
        command (a stream read) may wait on purpose.
        """
        if not self.available:
            return None
        if not self.up:
            self._retry_at = self.clock.now() + self.retry_every  # one try per interval
        bound = self.timeout if timeout is None else max(0.001, min(timeout, self.timeout))
        bound += block
        try:
            async with asyncio.timeout(bound):
                result = await command(self.redis)
        except (RedisError, OSError, TimeoutError) as exc:
            self._failed(exc)
            return None
        if not self.up:
            self.up = True
            logger.info("fleet store %s is back: sharing state again", redact_url(self.url))
        return result

    def _failed(self, exc: BaseException) -> None:
        self._retry_at = self.clock.now() + self.retry_every
        if self.up:
            self.up = False
            self.outages += 1
            logger.warning(
                "fleet store %s unavailable (%s); carrying on locally until it is back",
                redact_url(self.url),
                type(exc).__name__,
            )

    async def aclose(self) -> None:
        """Close the connections (never raises)."""
        with contextlib.suppress(RedisError, OSError):
            await self.redis.aclose()
