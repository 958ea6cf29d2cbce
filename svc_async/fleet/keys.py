"""Where a fleet keeps things in Redis: every key and channel name, in one place.

Keys are ``svc:{<namespace>}:<name>``. The braces are a Redis Cluster hash tag: all of an
account's keys live in one slot, so the scripts that touch several of them run there.
The namespace is a digest (``account_namespace``), never a token or a secret.
"""

from __future__ import annotations

import hashlib
from typing import Any

import attrs

__all__ = ["KINDS", "Keys", "account_namespace", "credential_identity"]

KINDS = ("status", "entry")
"""The delivery kinds that travel through the fleet's streams, one stream each."""

GROUP = "callbacks"
"""The consumer group every replica reads the delivery streams through."""


def account_namespace(kind: str, identity: str) -> str:
    """The key namespace of ``identity`` (an account, a credential, a webhook secret)."""
    digest = hashlib.sha256(f"{kind}\0{identity}".encode()).hexdigest()
    return digest[:24]


def credential_identity(auth: Any) -> str | None:
    """What identifies an account's credential, digested (never the credential itself).

    An API key's public id when there is one; otherwise a SHA-256 digest of the
    credential's ``secrets()`` (a token is high-entropy: the digest cannot be turned
    back). None when the auth offers neither: the account must then be named.
    """
    key_id = getattr(auth, "key_id", None)
    if isinstance(key_id, str) and key_id:
        return "key:" + hashlib.sha256(key_id.encode()).hexdigest()
    secrets = getattr(auth, "secrets", None)
    parts = tuple(secrets()) if callable(secrets) else ()
    if not parts or not all(isinstance(part, str) and part for part in parts):
        return None
    return "secret:" + hashlib.sha256("\0".join(parts).encode()).hexdigest()


@attrs.frozen(slots=True)
class Keys:
    """The names of one namespace's keys and channel."""

    namespace: str

    @property
    def prefix(self) -> str:
        """What every key of the namespace starts with (``svc:{ns}:``)."""
        return f"svc:{{{self.namespace}}}:"

    @property
    def budget(self) -> str:
        """Hash: the shared rate budget (limit, rem, end, gen, done, probe)."""
        return self.prefix + "budget"

    @property
    def leases(self) -> str:
        """Sorted set: calls in flight, each scored by the time its lease lapses (ms)."""
        return self.prefix + "leases"

    def stream(self, kind: str) -> str:
        """Stream: the deliveries of one kind (``KINDS``) waiting for or in a replica."""
        return f"{self.prefix}deliveries:{kind}"

    @property
    def seen(self) -> str:
        """Hash: the version of each delivery slot claimed lately (the dedupe window)."""
        return self.prefix + "seen"

    @property
    def seen_ages(self) -> str:
        """Sorted set: the same slots, scored by when they were claimed (ms)."""
        return self.prefix + "seen:ages"

    def order(self, subject: str) -> str:
        """Hash: ``seq`` (deliveries of a subject added), ``done`` (settled) and ``gen``
        (which life of the hash: it goes once all of the subject's are settled)."""
        return f"{self.prefix}order:{subject}"

    @property
    def epoch(self) -> str:
        """String: a random name this namespace's store got at its first delivery (an
        empty restart gives it a new one: what was in it is lost)."""
        return self.prefix + "epoch"

    @property
    def channel(self) -> str:
        """Pub/sub channel: job wake-ups (``"<job id> <status>"``)."""
        return self.prefix + "jobs:status"


def scope_for(account: str | None, secret: bytes) -> str:
    """The namespace of a receiver's deliveries: the account's, else the secret's."""
    if account is not None:
        return account_namespace("account", account)
    return account_namespace("webhook-secret", secret.hex())
