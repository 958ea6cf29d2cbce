"""Streaming downloads of signed links (recordings, licence files, logos).

Each hop of a download is one call through the pipeline, so it has what every call has:
retries where safe, 401 renewal, pacing, the call's limits, cancellation by ``aclose``.
The 2xx body is handed to a sink as it streams (never held in memory); a redirect is
handed back here, and followed by the rules of signed links: they carry their own
credentials in the query string, so the API's Authorization header is only sent to the
API's own origins and is dropped on any redirect to another origin; a redirect from
https to http, or to anything but http(s), is refused. A path destination is written to
a temporary file beside it and renamed into place only when the whole body has arrived,
so an interrupted download leaves nothing behind. A retry after part of the body was
written starts the destination over; a file object that cannot seek back is only
retried when nothing reached the server (a refused connection, a 429 or 503).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import IO, Any

import attrs
import yarl

from .._core import validate as v
from .._pipeline.answers import Decoder
from .._pipeline.run import Call, Env, run
from .._transports.base import (
    Response,
    StreamingTransport,
    StreamResponse,
    Timeout,
    declared_length,
)
from ..errors import (
    PermissionDeniedError,
    RedirectError,
    SignedURLExpired,
    TransportError,
)
from ..redact import redact_url
from ..retry import RetryPolicy
from ..types import Progress as Progress  # the old home of the name still works
from ._base import notify

CHUNK_SIZE = 256 * 1024
MAX_REDIRECTS = 5
DEFAULT_LIMITS = Timeout(total=None, connect=10.0, read=60.0)
"""A download's default limits per exchange: no total (big files take long), stalls end it."""
_ACCEPT_ANY = {"Accept": "*/*"}


@attrs.frozen(kw_only=True)
class DownloadResult:
    """What a download wrote: the final URL (redacted), bytes and content type."""

    url: str
    bytes_written: int
    content_type: str | None
    path: Path | None = None


def _origin(url: yarl.URL) -> tuple[str, str | None, int | None]:
    return (url.scheme, url.host, url.port)


async def download(
    env: Env,
    url: str | yarl.URL,
    destination: str | os.PathLike[str] | IO[bytes],
    *,
    api_urls: tuple[str, ...],
    policy: RetryPolicy,
    progress: Progress | None = None,
    timeout: Timeout | None = None,
    chunk_size: int = CHUNK_SIZE,
) -> DownloadResult:
    """Stream ``url`` to ``destination`` (a path or a binary file object) in chunks.

    ``env`` is the client's pipeline; ``api_urls`` its own hosts (the only ones that get
    its credentials); ``policy`` its retry rules; ``timeout`` the limits of each exchange.
    A deadline for the whole download is the caller's (``pipeline.deadline_scope``).
    """
    target = _parse_url(url)
    if chunk_size <= 0:
        raise ValueError("chunk_size must be positive")
    if not isinstance(destination, str | os.PathLike) and not hasattr(destination, "write"):
        raise TypeError("destination must be a path or a binary file object")
    transport = env.transport
    if not isinstance(transport, StreamingTransport):
        raise TypeError(f"{type(transport).__name__} cannot stream; downloads need stream()")
    if isinstance(destination, str | os.PathLike):
        path = Path(destination)
        with _replacing(path) as file:
            sink = _Sink(file, progress, chunk_size)
            result = await _follow(env, target, sink, api_urls, policy, timeout)
        return attrs.evolve(result, path=path)
    sink = _Sink(destination, progress, chunk_size)
    return await _follow(env, target, sink, api_urls, policy, timeout)


async def _follow(
    env: Env,
    target: yarl.URL,
    sink: _Sink,
    api_urls: tuple[str, ...],
    policy: RetryPolicy,
    timeout: Timeout | None,
) -> DownloadResult:
    """Run one call per hop, following redirects, until a body has been written."""
    api_origins = {_origin(yarl.URL(u)) for u in api_urls}
    authenticate = _origin(target) in api_origins
    for _ in range(MAX_REDIRECTS + 1):
        ours = _origin(target) in api_origins
        hop = Call(
            method="GET",
            url=target,
            content=None,
            idempotent=sink.rewindable,
            timeout=None,  # a big file takes what it takes; a caller's deadline still holds
            attempt_timeout=timeout or DEFAULT_LIMITS,
            policy=policy,
            authenticate=authenticate,
            decode=_Hop(sink, target),
            headers=_ACCEPT_ANY,
            redirects=True,
            service=ours,
            operation="download",
        )
        try:
            got = await run(env, hop)
        except PermissionDeniedError as exc:
            if exc.status == 403 and not ours:
                raise _expired(exc, target) from None
            raise
        if isinstance(got, DownloadResult):
            return got
        assert isinstance(got, Response)
        location = got.headers.get("Location")
        if not location:
            raise RedirectError(
                got.status, headers=got.headers, method="GET", url=redact_url(target)
            )
        following = _redirect_target(got.status, got.headers, target, location)
        if target.scheme == "https" and following.scheme != "https":
            raise TransportError(
                f"refusing a redirect from https to {following.scheme}: {redact_url(following)}"
            )
        if _origin(following) != _origin(target):
            authenticate = False
        target = following
    raise TransportError(f"more than {MAX_REDIRECTS} redirects for {redact_url(target)}")


class _Sink:
    """Where the body goes; each attempt starts it over from where the download began."""

    __slots__ = ("chunk_size", "file", "progress", "rewindable", "start", "started")

    def __init__(self, file: IO[bytes], progress: Progress | None, chunk_size: int) -> None:
        self.file = file
        self.progress = progress
        self.chunk_size = chunk_size
        self.start: int | None = None
        try:
            if file.seekable():
                self.start = file.tell()
        except (AttributeError, OSError, ValueError):
            self.start = None
        self.rewindable = self.start is not None
        self.started = False

    async def write(self, stream: StreamResponse, url: yarl.URL) -> DownloadResult:
        """Write the 2xx body of a hop to ``url``; say what was written."""
        if self.started and self.start is not None:  # a retry: drop the partial body
            self.file.seek(self.start)
            self.file.truncate()
        self.started = True
        total = declared_length(stream.headers)
        chunks = stream.iter_chunks(self.chunk_size, capped=False)  # to disk, not memory
        written = await _copy(chunks, self.file, total, self.progress)
        return DownloadResult(
            url=redact_url(url),
            bytes_written=written,
            content_type=stream.headers.get("Content-Type"),
        )


class _Hop(Decoder[Any]):
    """The decoder of one hop: a 2xx body streamed into the sink, a redirect handed back
    as it came (the next hop follows it)."""

    __slots__ = ("sink", "url")

    streams = True

    def __init__(self, sink: _Sink, url: yarl.URL) -> None:
        super().__init__()
        self.sink = sink
        self.url = url

    def read(self, response: Response) -> Response:
        """A redirect's answer, as it came."""
        return response

    async def read_stream(self, stream: StreamResponse) -> DownloadResult:
        """The body written: what was written."""
        return await self.sink.write(stream, self.url)


def _expired(exc: PermissionDeniedError, url: yarl.URL) -> SignedURLExpired:
    error = SignedURLExpired(exc.status, headers=exc.headers, body=exc.body, url=redact_url(url))
    error.request_id = exc.request_id  # the hop's, for a support ticket
    error.args = (
        f"HTTP 403 from {url.host}: the signed link has probably expired;"
        " read the resource again (e.g. jobs.get or entries.for_event) for a fresh link",
    )
    return error


def _parse_url(url: str | yarl.URL) -> yarl.URL:
    """``url`` checked as every URL argument is; a ``yarl.URL`` is taken as encoded."""
    if isinstance(url, yarl.URL):
        return yarl.URL(v.http_url(str(url), "url"), encoded=True)
    return yarl.URL(v.http_url(url, "url"))


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


async def _copy(
    chunks: AsyncIterator[bytes], file: IO[bytes], total: int | None, progress: Progress | None
) -> int:
    written = 0
    await notify(progress, 0, total)
    async for chunk in chunks:
        file.write(chunk)
        written += len(chunk)
        await notify(progress, written, total)
    if total is not None and written != total:
        raise TransportError(f"download ended after {written} of {total} bytes")
    return written


@contextlib.contextmanager
def _replacing(path: Path) -> Iterator[IO[bytes]]:
    """A temporary file beside ``path``: renamed into place if the block ends well, else removed."""
    directory = path.parent if str(path.parent) else Path(".")
    fd, temp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=directory)
    try:
        with os.fdopen(fd, "w+b") as file:
            yield file
        # mkstemp makes the file 0600; a finished download gets the usual umask mode.
        os.chmod(temp_name, 0o666 & ~_umask())
        os.replace(temp_name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp_name)
        raise


def _umask() -> int:
    """The process umask (read by setting it and putting it back at once)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
