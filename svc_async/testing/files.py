"""Signed file links and the fake storage host, a separate origin as in production.

Every file (recording, licence, VOD output) is served by the *files origin* under
``/files/{kind}/{key}`` through S3-style presigned links (``X-Amz-Date``,
``X-Amz-Expires``, ``X-Amz-Signature``). Once ``X-Amz-Date + X-Amz-Expires`` has passed
on the fake clock the storage answers 403 with an S3 XML body, as S3 does; a request
that also carries an ``Authorization`` header is refused with 400 (S3 allows one auth
mechanism), so a client that leaks its bearer token across origins fails loudly.

Licence links in answers point at the *API origin* (``/files/licenses/{key}?t=...``, a
token that does not expire); the API answers them with a 302 to a freshly signed link on
the files origin, so redirects are followed as in production. Bodies are deterministic
bytes derived from the key (``file_size`` long; output files look like an mp3) unless a
test stored its own.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
from collections.abc import Mapping
from urllib.parse import quote

import attrs

from .licensing import file_token

__all__ = ["FILES_ORIGIN", "FileStore", "StorageAnswer"]

FILES_ORIGIN = "http://files.fake.invalid"
"""The files origin's address when the fake runs in-process."""

_AMZ_FORMAT = "%Y%m%dT%H%M%SZ"
_TYPES = {"recordings": "audio/mpeg", "outputs": "audio/mpeg", "licenses": "application/pdf"}


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


def _ranged(data: bytes, rng: str | None, out: dict[str, str]) -> StorageAnswer:
    if not rng or not rng.startswith("bytes="):
        return StorageAnswer(200, out, data)
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


@attrs.define
class FileStore:
    """Signs and verifies links and serves the files behind them.

    ``origin`` is where the files origin listens (``serve`` sets a loopback port).
    """

    secret: bytes
    file_size: int = 64 * 1024
    url_ttl: int = 216000
    contents: dict[str, bytes] = attrs.field(factory=dict)
    origin: str = FILES_ORIGIN

    def _signature(self, path: str, amz_date: str, expires: str) -> str:
        msg = f"{path}\n{amz_date}\n{expires}".encode()
        return hmac.new(self.secret, msg, hashlib.sha256).hexdigest()

    def signed_url(
        self,
        kind: str,
        key: str,
        now: float,
        *,
        filename: str | None = None,
        ttl: int | None = None,
    ) -> str:
        """A presigned link to ``/files/{kind}/{key}`` on the files origin."""
        amz_date = dt.datetime.fromtimestamp(now, tz=dt.UTC).strftime(_AMZ_FORMAT)
        expires = str(self.url_ttl if ttl is None else ttl)
        path = f"/files/{kind}/{key}"
        sig = self._signature(path, amz_date, expires)
        url = (
            f"{self.origin}{path}?X-Amz-Algorithm=AWS4-HMAC-SHA256"
            f"&X-Amz-Date={amz_date}&X-Amz-Expires={expires}&X-Amz-Signature={sig}"
            "&X-Amz-SignedHeaders=host"
        )
        if filename is not None:
            disposition = quote(f'attachment; filename ="{filename}"', safe="")
            url += f"&response-content-disposition={disposition}"
        content_type = quote(_TYPES.get(kind, "application/octet-stream"), safe="")
        return url + f"&response-content-type={content_type}&x-id=GetObject"

    def recording_url(self, key: str, filename: str, now: float) -> str:
        """A presigned link to recording ``key``, valid ``url_ttl`` seconds."""
        return self.signed_url("recordings", key, now, filename=filename)

    def output_url(self, key: str, now: float) -> str:
        """A presigned link to a VOD output file (valid 7 days at most, as the service says)."""
        return self.signed_url("outputs", key, now, ttl=min(self.url_ttl, 7 * 86400))

    def licence_path(self, key: str) -> str:
        """A relative licence link on the API origin, carrying its ``t`` token."""
        return f"/files/licenses/{key}?t={file_token(self.secret, key)}"

    def content(self, key: str) -> bytes:
        """The bytes of file ``key``: stored ones, else deterministic filler."""
        if key in self.contents:
            return self.contents[key]
        seed = hashlib.sha256(key.encode()).digest()
        reps = self.file_size // len(seed) + 1
        filler = (seed * reps)[: self.file_size]
        if key.startswith("outputs/"):
            # An ID3 header and MPEG frame sync, so it sniffs as an mp3.
            return (b"ID3\x04\x00\x00\x00\x00\x00\x00\xff\xfb\x90\x64" + filler)[: self.file_size]
        return filler

    def md5(self, key: str) -> str:
        """The hex MD5 of file ``key``'s bytes (a recording's ``md5Hash``)."""
        return hashlib.md5(self.content(key)).hexdigest()

    def redirect_licence(self, path: str, query: Mapping[str, str], now: float) -> StorageAnswer:
        """The API origin's answer to a licence link: 302 to a signed files-origin link."""
        key = path.removeprefix("/files/licenses/")
        if not path.startswith("/files/licenses/") or not hmac.compare_digest(
            query.get("t", ""), file_token(self.secret, key)
        ):
            return _s3_error(403, "AccessDenied", "Access Denied", key)
        location = self.signed_url("licenses", key, now, ttl=300)
        return StorageAnswer(302, {"Location": location, "Content-Type": "text/plain"}, b"")

    def serve(
        self, path: str, query: Mapping[str, str], headers: Mapping[str, str], now: float
    ) -> StorageAnswer:
        """Answer ``GET path`` on the files origin (supports ``Range: bytes=N-[M]``)."""
        kind, _, key = path.removeprefix("/files/").partition("/")
        if not path.startswith("/files/") or kind not in _TYPES:
            return _s3_error(404, "NoSuchKey", "The specified key does not exist.", key)
        if headers.get("Authorization") or headers.get("authorization"):
            return _s3_error(
                400,
                "InvalidArgument",
                "Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter,"
                " Signature query string parameter or the Authorization header should be"
                " specified",
                key,
            )
        amz_date = query.get("X-Amz-Date", "")
        expires = query.get("X-Amz-Expires", "")
        sig = query.get("X-Amz-Signature", "")
        if not hmac.compare_digest(sig, self._signature(path, amz_date, expires)):
            return _s3_error(
                403,
                "SignatureDoesNotMatch",
                "The request signature we calculated does not match the signature you provided.",
                key,
            )
        signed = dt.datetime.strptime(amz_date, _AMZ_FORMAT).replace(tzinfo=dt.UTC)
        if now > signed.timestamp() + int(expires):
            return _s3_error(403, "AccessDenied", "Request has expired", key)
        data = self.content(f"{kind}/{key}" if kind == "outputs" else key)
        out = {
            "Content-Type": _TYPES[kind],
            "Accept-Ranges": "bytes",
            "ETag": '"' + hashlib.md5(data).hexdigest() + '"',
        }
        return _ranged(data, headers.get("Range") or headers.get("range"), out)
