"""Delivery bodies sealed before they go to Redis, with a key only the replicas can derive.

An entry update carries a signed download link; a status update names a job. What a
replica writes to the fleet's stream is sealed with AES-GCM under a key derived (HKDF)
from the webhook secret the delivery came with, so someone who can read Redis learns
neither. Every replica derives the same key from the same secret; a replica that holds
several secrets (a rotation) opens what any of them sealed. ``kid`` names the key
without giving it away.
"""

from __future__ import annotations

import hashlib
import os

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

__all__ = ["Seal"]

_NONCE = 12


class Seal:
    """Seals and opens delivery bodies with the key of one webhook secret."""

    __slots__ = ("_aead", "kid")

    def __init__(self, secret: bytes) -> None:
        key = HKDF(
            algorithm=hashes.SHA256(), length=32, salt=b"svc-async fleet", info=b"deliveries"
        ).derive(secret)
        self._aead = AESGCM(key)
        self.kid = hashlib.sha256(b"svc-async kid\0" + key).hexdigest()[:16]
        """The key's public name (a digest of the key, not the key)."""

    def __repr__(self) -> str:
        return f"<Seal {self.kid}>"

    def seal(self, plain: bytes) -> bytes:
        """``plain`` sealed: a fresh nonce, then the ciphertext and its tag."""
        nonce = os.urandom(_NONCE)
        return nonce + self._aead.encrypt(nonce, plain, self.kid.encode())

    def open(self, sealed: bytes) -> bytes | None:
        """What ``seal`` sealed; None if it was sealed with another key, or altered."""
        try:
            return self._aead.decrypt(sealed[:_NONCE], sealed[_NONCE:], self.kid.encode())
        except (InvalidTag, ValueError):
            return None
