"""Streaming downloads of signed links (recordings, licence files, logos).

Signed links carry their own credentials in the query string, so the API's
Authorization header is only sent to the API's own origins and is dropped on any
redirect to another origin; a redirect from https to http is refused. A path
destination is written to a temporary file beside it and renamed into place only when
the whole body has arrived, so an interrupted download leaves nothing behind.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import tempfile
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import IO, Any

import attrs
import yarl

from .errors import (
    PermissionDeniedError,
    RedirectError,
    SignedURLExpired,
    TransportError,
    error_class_for,
)
from .redact import redact_url
from .transport import Request, StreamingTransport, Timeout, Transport
from .types import Progress as Progress  # the old home of the name still works

CHUNK_SIZE = 256 * 1024
MAX_REDIRECTS = 5
_REDIRECTS = frozenset({301, 302, 303, 307, 308})


@attrs.frozen(kw_only=True)
class DownloadResult:
    """What a download wrote: the final URL (redacted), bytes and content type."""

    url: str
    bytes_written: int
    content_type: str | None
    path: Path | None = None


@attrs.frozen(kw_only=True)
class DownloadEnv:
    """What a download needs from its client: transport, credentials and API origins."""

    transport: Transport
    auth_headers: Callable[[], Awaitable[Mapping[str, str]]]
    user_agent: str
    api_urls: tuple[str, ...]


def _origin(url: yarl.URL) -> tuple[str, str | None, int | None]:
    return (url.scheme, url.host, url.port)


async def download(
    env: DownloadEnv,
    url: str | yarl.URL,
    destination: str | os.PathLike[str] | IO[bytes],
    *,
    progress: Progress | None = None,
    timeout: Timeout | None = None,
    chunk_size: int = CHUNK_SIZE,
) -> DownloadResult:
    """Stream ``url`` to ``destination`` (a path or a binary file object) in chunks."""
    target = _parse_url(url)
    if chunk_size <= 0:
        raise ValueError("chunk_size must be positive")
    if not isinstance(destination, str | os.PathLike) and not hasattr(destination, "write"):
        raise TypeError("destination must be a path or a binary file object")
    transport = env.transport
    if not isinstance(transport, StreamingTransport):
        raise TypeError(f"{type(transport).__name__} cannot stream; downloads need stream()")
    api_origins = {_origin(yarl.URL(u)) for u in env.api_urls}
    auth_headers: Mapping[str, str] = {}
    if _origin(target) in api_origins:
        auth_headers = await env.auth_headers()
    base = {"User-Agent": env.user_agent, "Accept": "*/*"}
    limits = timeout or Timeout(total=None, connect=10.0, read=60.0)
    for _ in range(MAX_REDIRECTS + 1):
        headers = {**base, **auth_headers}
        request = Request("GET", target, headers, None, limits)
        async with transport.stream(request) as response:
            status = response.status
            if status in _REDIRECTS:
                location = response.headers.get("Location")
                if not location:
                    raise RedirectError(status, method="GET", url=redact_url(target))
                following = _redirect_target(status, response.headers, target, location)
                if target.scheme == "https" and following.scheme != "https":
                    raise TransportError(
                        f"refusing a redirect from https to {following.scheme}:"
                        f" {redact_url(following)}"
                    )
                if _origin(following) != _origin(target):
                    auth_headers = {}
                target = _parse_url(following)
                continue
            if status >= 300:
                raise _download_error(status, response.headers, target, api_origins)
            total = _content_length(response.headers)
            content_type = response.headers.get("Content-Type")
            chunks = response.iter_chunks(chunk_size)
            if isinstance(destination, str | os.PathLike):
                path = Path(destination)
                written = await _to_path(chunks, path, total, progress)
                return DownloadResult(
                    url=redact_url(target),
                    bytes_written=written,
                    content_type=content_type,
                    path=path,
                )
            written = await _to_file(chunks, destination, total, progress)
            return DownloadResult(
                url=redact_url(target), bytes_written=written, content_type=content_type
            )
    raise TransportError(f"more than {MAX_REDIRECTS} redirects for {redact_url(url)}")


def _parse_url(url: str | yarl.URL) -> yarl.URL:
    if not isinstance(url, str | yarl.URL):
        raise TypeError(f"url must be a str, got {type(url).__name__}")
    try:
        parsed = yarl.URL(str(url), encoded=isinstance(url, yarl.URL))
    except (ValueError, TypeError):
        raise ValueError("url is not a valid URL") from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ValueError("url must be an absolute http(s) URL")
    return parsed


def _redirect_target(status: int, headers: Any, url: yarl.URL, location: str) -> yarl.URL:
    """Where a redirect leads: an http(s) URL, or a ``RedirectError`` (never a ValueError)."""
    try:
        following: yarl.URL | None = url.join(yarl.URL(location))
    except (ValueError, TypeError):
        following = None
    if following is not None and following.scheme in ("http", "https") and following.host:
        return following
    where = "an invalid location"
    if following is not None and following.scheme:
        where = f"a {following.scheme}: URL"
    error = RedirectError(status, headers=headers, method="GET", url=redact_url(url))
    error.args = (
        f"HTTP {status} for GET {redact_url(url)} redirects to {where};"
        " downloads follow http(s) redirects only",
    )
    raise error


def _content_length(headers: Mapping[str, str]) -> int | None:
    """The body's size, when Content-Length gives the size of the bytes we are handed.

    A content-encoded body (gzip, br, ...) is handed over decoded, as requests and
    httpx do; its Content-Length is the encoded size, so the decoded size is unknown.
    """
    if headers.get("Content-Encoding", "identity").strip().lower() != "identity":
        return None
    try:
        value = int(headers.get("Content-Length", ""))
    except ValueError:
        return None
    return value if value >= 0 else None


def _download_error(status: int, headers: Any, url: yarl.URL, api_origins: set[Any]) -> Exception:
    where = redact_url(url)
    if status == 403 and _origin(url) not in api_origins:
        error: PermissionDeniedError = SignedURLExpired(status, headers=headers, url=where)
        error.args = (
            f"HTTP 403 from {url.host}: the signed link has probably expired;"
            " read the resource again (e.g. jobs.get or entries.for_event) for a fresh link",
        )
        return error
    return error_class_for(status)(status, headers=headers, method="GET", url=where)


async def _report(progress: Progress | None, done: int, total: int | None) -> None:
    if progress is not None:
        result = progress(done, total)
        if inspect.isawaitable(result):
            await result


async def _to_file(
    chunks: Any, file: IO[bytes], total: int | None, progress: Progress | None
) -> int:
    written = 0
    await _report(progress, 0, total)
    async for chunk in chunks:
        file.write(chunk)
        written += len(chunk)
        await _report(progress, written, total)
    if total is not None and written != total:
        raise TransportError(f"download ended after {written} of {total} bytes")
    return written


async def _to_path(chunks: Any, path: Path, total: int | None, progress: Progress | None) -> int:
    directory = path.parent if str(path.parent) else Path(".")
    fd, temp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=directory)
    try:
        with os.fdopen(fd, "wb") as file:
            written = await _to_file(chunks, file, total, progress)
        # mkstemp makes the file 0600; a finished download gets the usual umask mode.
        os.chmod(temp_name, 0o666 & ~_umask())
        os.replace(temp_name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp_name)
        raise
    return written


def _umask() -> int:
    """The process umask (read by setting it and putting it back at once)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
