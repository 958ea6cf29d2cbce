"""A gzip bomb for the body-cap tests: a few KB on the wire, megabytes unpacked."""

from __future__ import annotations

import functools
import zlib

MB = 1024 * 1024


@functools.cache  # built once per run: compressing it is most of a test's time
def gzip_bomb(size: int) -> bytes:
    """``size`` zero bytes (whole MiB), gzip-encoded."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = b"\x00" * MB
    parts = [compressor.compress(block) for _ in range(size // MB)]
    parts.append(compressor.flush())
    return b"".join(parts)
