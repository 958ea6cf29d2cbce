"""Signed file links and the fake storage host (``GET /files/...``).

Recording links imitate S3 presigned URLs (``X-Amz-Date``, ``X-Amz-Expires``,
``X-Amz-Signature``); once ``X-Amz-Date + X-Amz-Expires`` has passed on the fake clock the
storage answers 403 with an S3-style XML body, as S3 does. Licence file links carry a
``t`` token instead and do not expire. File bodies are deterministic bytes derived from
the file key (``file_size`` long) unless a test stored its own bytes.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
from collections.abc import Mapping
from urllib.parse import quote

import attrs

from .licensing import file_token

__all__ = ["FileStore", "StorageAnswer"]

_AMZ_FORMAT = "%Y%m%dT%H%M%SZ"


@attrs.frozen
class StorageAnswer:
    """What the storage host answers: status, headers, body."""

    status: int
    headers: dict[str, str]
    body: bytes


def _s3_error(status: int, code: str, message: str, key: str) -> StorageAnswer:
    body = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f"<Error><Code>{code}</Code><Message>{message}</Message>"
        f"<Key>{key}</Key><RequestId>FAKE0000000000000000</RequestId></Error>"
    ).encode()
    return StorageAnswer(status, {"Content-Type": "application/xml"}, body)


@attrs.define
class FileStore:
    """Signs and verifies links and serves the files behind them."""

    secret: bytes
    file_size: int = 64 * 1024
    url_ttl: int = 216000
    contents: dict[str, bytes] = attrs.field(factory=dict)

    def _signature(self, key: str, amz_date: str, expires: str) -> str:
        msg = f"{key}\n{amz_date}\n{expires}".encode()
        return hmac.new(self.secret, msg, hashlib.sha256).hexdigest()

    def recording_url(self, base: str, key: str, filename: str, now: float) -> str:
        """A presigned-looking link to recording ``key``, valid ``url_ttl`` seconds."""
        amz_date = dt.datetime.fromtimestamp(now, tz=dt.UTC).strftime(_AMZ_FORMAT)
        expires = str(self.url_ttl)
        sig = self._signature(key, amz_date, expires)
        disposition = quote(f'attachment; filename ="{filename}"', safe="")
        return (
            f"{base}/files/recordings/{key}?X-Amz-Algorithm=AWS4-HMAC-SHA256"
            f"&X-Amz-Date={amz_date}&X-Amz-Expires={expires}&X-Amz-Signature={sig}"
            f"&X-Amz-SignedHeaders=host&response-content-disposition={disposition}"
            "&response-content-type=audio%2Fmpeg&x-id=GetObject"
        )

    def licence_path(self, key: str) -> str:
        """A relative licence-file link carrying its ``t`` token."""
        return f"/files/licenses/{key}?t={file_token(self.secret, key)}"

    def content(self, key: str) -> bytes:
        """The bytes of file ``key``: stored ones, else deterministic filler."""
        if key in self.contents:
            return self.contents[key]
        seed = hashlib.sha256(key.encode()).digest()
        reps = self.file_size // len(seed) + 1
        return (seed * reps)[: self.file_size]

    def serve(
        self, path: str, query: Mapping[str, str], headers: Mapping[str, str], now: float
    ) -> StorageAnswer:
        """Answer ``GET path`` on the storage host (supports ``Range: bytes=N-[M]``)."""
        rest = path.removeprefix("/files/")
        kind, _, key = rest.partition("/")
        if kind == "recordings":
            amz_date = query.get("X-Amz-Date", "")
            expires = query.get("X-Amz-Expires", "")
            sig = query.get("X-Amz-Signature", "")
            if not hmac.compare_digest(sig, self._signature(key, amz_date, expires)):
                return _s3_error(
                    403,
                    "SignatureDoesNotMatch",
                    "The request signature we calculated does not match the signature"
                    " you provided.",
                    key,
                )
            signed = dt.datetime.strptime(amz_date, _AMZ_FORMAT).replace(tzinfo=dt.UTC)
            if now > signed.timestamp() + int(expires):
                return _s3_error(403, "AccessDenied", "Request has expired", key)
            content_type = "audio/mpeg"
        elif kind == "licenses":
            if not hmac.compare_digest(query.get("t", ""), file_token(self.secret, key)):
                return _s3_error(403, "AccessDenied", "Access Denied", key)
            content_type = "application/pdf"
        else:
            return _s3_error(404, "NoSuchKey", "The specified key does not exist.", key)
        data = self.content(key)
        out = {
            "Content-Type": content_type,
            "Accept-Ranges": "bytes",
            "ETag": '"' + hashlib.md5(data).hexdigest() + '"',
        }
        rng = headers.get("Range") or headers.get("range")
        if rng and rng.startswith("bytes="):
            first, _, last = rng.removeprefix("bytes=").partition("-")
            try:
                start = int(first)
                end = int(last) if last else len(data) - 1
            except ValueError:
                start, end = -1, -1
            if start < 0 or start >= len(data) or end < start:
                out["Content-Range"] = f"bytes */{len(data)}"
                return StorageAnswer(416, out, b"")
            end = min(end, len(data) - 1)
            out["Content-Range"] = f"bytes {start}-{end}/{len(data)}"
            return StorageAnswer(206, out, data[start : end + 1])
        return StorageAnswer(200, out, data)
