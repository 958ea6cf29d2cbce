"""Big JSON arrays decoded and structured in slices, so the event loop keeps running.

A large answer (thousands of entries, tens of MB) decoded with one ``orjson.loads`` and
structured in one pass stops the loop for hundreds of milliseconds. Here the body is
read as it arrives, cut at top-level element boundaries into slices of about
``SLICE_BYTES``, and each slice is decoded (``orjson.loads(b"[" + slice + b"]")``) and
structured on its own, with a return to the loop between slices. Only the models and
one slice's bytes and dicts are alive at once, never the whole body and all the dicts.

Finding boundaries is optimistic and cheap: a regex that skips strings scans only the
last few KiB of a slice, from an object start, and takes the shallowest close bracket
there as the end of an element. The guess is checked by decoding it: a prefix that
starts at an element parses cleanly only if it ends at a real element end. When the
guess is wrong (a ``{"`` inside a string, an element longer than the tail), an exact
quote-aware scan of the slice decides. On 1,000 entries the whole split-and-decode takes
0.7x one ``orjson.loads`` of the body in 256 KiB slices, which stay in cache (0.9-1.0x in
1 MiB ones); ijson's yajl2_c backend takes 4x (``benchmarks/bench_stall.py``).
``ArraySplitter`` is sans-I/O; ``structure_chunks`` drives it from any async iterator of
body chunks; ``StreamDecode`` is the entries calls' ``Decoder``.
"""

from __future__ import annotations

import asyncio
import re
import weakref
from collections.abc import AsyncIterable, AsyncIterator, Iterator, Mapping
from typing import Any, Self, TypeVar

import attrs
import orjson

from .._core.exact_json import has_long_number
from .._transports.base import Response, StreamResponse, declared_length
from ..converter import structure, structuring_step
from ..errors import ResponseDecodeError
from ..redact import redact_text
from .answers import Decoder, decode_json, read_exactly

T = TypeVar("T")

SLICE_BYTES = 256 * 1024
"""Target bytes per slice: decoding and structuring one takes about 3 ms here.

A slice this size and its decoded dicts stay in the CPU cache: with the calls on a loop
taking turns (``_Turns``), 256 KiB slices came out faster than one-shot at concurrency
1, 4 and 32, and than 1 MiB slices (``benchmarks/bench_sliced.py``). Interleaved, without
turns, small slices had cost throughput (0.8x one-shot at 32).
"""

STREAM_THRESHOLD = 1024 * 1024
"""Answers at least this large (Content-Length, or bytes read so far) go incremental."""

MIN_THRESHOLD_BYTES = 64 * 1024
"""Floor of the threshold when calls share the loop (see ``StreamDecode.plan``)."""

_TAIL = 8 * 1024
_CHUNK = 1024 * 1024
"""Bytes asked for per read. aiohttp then buffers up to two reads ahead of the reader, so
the next slice has mostly arrived when the last is done; 64 KiB reads (a wait on the
socket, a pause and resume of it, every 128 KiB) cost 4-8% at concurrency 32."""
_WS = b" \t\r\n"
_SPACE = re.compile(rb"[ \t\r\n]*")
_TOKENS = re.compile(rb'"[^"]*"?|[{}\[\]]')
_BRACKET = re.compile(rb'(?:[^"{}\[\]]++|"[^"]*+")*+[{}\[\]]')  # possessive: no backtracking
_OPEN = frozenset(b"{[")
_INDEX = re.compile(r"^\$\[(\d+)\]")


def _mask_escapes(view: bytes) -> bytes:
    """The same bytes with every ``\\\\`` and ``\\"`` escape blanked (lengths kept)."""
    if b"\\" not in view:
        return view
    return view.replace(b"\\\\", b"__").replace(b'\\"', b"__")


def _guess_end(view: bytes) -> int:
    """Index just past the last element of ``view`` that seems complete, or 0.

    Only the last ``_TAIL`` bytes are scanned, from an object start (``{"``), with the
    regex skipping strings: the shallowest depth a close bracket reaches there is the
    array's own level, as long as the tail holds one element end. A wrong guess (the
    start was inside a string, an element longer than the tail) does not parse.
    """
    start = view.rfind(b'{"', 0, max(0, len(view) - _TAIL)) if len(view) > _TAIL else 0
    start = max(start, 0)
    # The scan stops at the last close bracket: past it nothing can end an element, and a
    # string cut off at the end would make the regex retry at every byte up to there.
    stop = max(view.rfind(b"}"), view.rfind(b"]")) + 1
    depth = lowest = 0
    last = 0
    for match in _BRACKET.finditer(view, start, stop):
        if view[match.end() - 1] in _OPEN:
            depth += 1
        else:
            depth -= 1
            if depth < lowest:
                lowest, last = depth, match.end()
            elif depth == lowest:
                last = match.end()
    return last


def _exact_end(view: bytes) -> int:
    """Index just past the last complete element of ``view``, or 0: a scan of every token.

    ``view`` begins at an element and has its escapes masked, so quotes delimit strings.
    """
    depth = 0
    last = 0
    for match in _TOKENS.finditer(view):
        char = view[match.start()]
        if char == 0x22:  # a string, skipped whole
            continue
        if char in _OPEN:
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                last = match.end()
            elif depth < 0:  # the array's own "]"
                return last
    return last


class ArraySplitter:
    """Cut a streamed top-level JSON array into decoded slices of whole elements.

    ``feed(chunk)`` then iterate ``slices()`` for ``(index of first element, list)``;
    ``close()`` at the end of the body returns the last slice and checks the closing
    bracket. Raises ``ResponseDecodeError`` on a body that is not a JSON array.
    """

    def __init__(self, slice_bytes: int = SLICE_BYTES, *, status: int | None = None) -> None:
        self._slice = slice_bytes
        self._status = status
        self._buf = bytearray()
        self._state = "start"  # start -> element -> separator -> done
        self._wait = slice_bytes  # bytes needed before the next look for a boundary
        self.count = 0
        """Elements emitted so far."""

    @property
    def ready(self) -> bool:
        """True when enough bytes are buffered for ``slices()`` to look for a slice."""
        return len(self._buf) >= self._wait

    def feed(self, data: bytes) -> None:
        """Add the next piece of the body."""
        if self._state == "done" and data.strip(_WS):
            raise self._syntax("trailing data after the array")
        self._buf += data

    def slices(self, final: bool = False) -> Iterator[tuple[int, list[Any]]]:
        """Decoded slices that the bytes so far complete; ``final`` takes the rest too."""
        while True:
            if not self._skip():
                return
            buf = self._buf
            if len(buf) < self._wait and not final:
                return
            self._wait = self._slice
            scalar = buf[0] not in _OPEN  # nothing cheap finds its end: take it all at the end
            if final and (scalar or len(buf) <= 2 * self._slice):
                yield self._rest()  # the last elements and "]": no boundary to find
                return
            if scalar:
                return
            found = self._find(_mask_escapes(bytes(buf[: self._slice])), final)
            if found is None:
                return
            yield self._emit(*found)

    def _find(self, view: bytes, final: bool) -> tuple[list[Any], int] | None:
        """The whole elements at the buffer's head, decoded, and where they end: a
        guessed end checked by decoding, else the exact scan (None: none complete yet)."""
        buf = self._buf
        end = _guess_end(view)
        try:
            items = self._decode(bytes(buf[:end])) if end else None
        except ResponseDecodeError:  # a wrong guess: the exact scan decides
            items = None
        if items is not None:
            return items, end
        end = _exact_end(view)
        if not end and len(view) < len(buf):  # one element bigger than a slice
            end = _exact_end(_mask_escapes(bytes(buf)))
        if not end:
            if final:
                raise self._syntax("the array is cut short")
            self._wait = 2 * len(buf)  # one huge element: look again when doubled
            return None
        return self._decode(bytes(buf[:end])), end

    def close(self) -> Iterator[tuple[int, list[Any]]]:
        """The last slices at the end of the body; checks that the array was closed."""
        yield from self.slices(final=True)
        self._skip()
        if self._state != "done":
            raise self._syntax("the array is not closed")

    def _emit(self, items: list[Any], end: int) -> tuple[int, list[Any]]:
        del self._buf[:end]
        first = self.count
        self.count += len(items)
        self._state = "separator"
        return first, items

    def _skip(self) -> bool:
        """Move past whitespace, ``[`` and commas; True when an element starts the buffer."""
        buf = self._buf
        while True:
            n = _SPACE.match(buf).end()  # type: ignore[union-attr]
            if n:
                del buf[:n]
            if not buf:
                return False
            head = buf[0]
            if self._state == "element":
                if head == 0x5D and self.count == 0:  # "[]"
                    del buf[:1]
                    self._state = "done"
                    continue
                return True
            if self._state == "start":
                if head != 0x5B:
                    raise self._syntax("expected a JSON array")
                self._state = "element"
            elif self._state == "separator":
                if head == 0x2C:
                    self._state = "element"
                elif head == 0x5D:
                    self._state = "done"
                else:
                    raise self._syntax("expected ',' or ']' between elements")
            else:  # done
                raise self._syntax("trailing data after the array")
            del buf[:1]

    def _rest(self) -> tuple[int, list[Any]]:
        """The rest of the body in one slice: elements, then ``]`` (scalar elements)."""
        text = bytes(self._buf).rstrip(_WS)
        if not text.endswith(b"]"):
            raise self._syntax("the array is not closed")
        got = self._emit(self._decode(text[:-1]), len(self._buf))
        self._state = "done"
        return got

    def _decode(self, part: bytes) -> list[Any]:
        """``orjson.loads`` of whole elements; ``ResponseDecodeError`` if they are not."""
        try:
            text = b"[" + part + b"]"
            items = orjson.loads(text)
            if has_long_number(part):
                items = read_exactly(text, items, self._status)
        except orjson.JSONDecodeError as exc:
            raise self._syntax(exc.msg, part) from None
        return items  # type: ignore[no-any-return]

    def _syntax(self, why: str, part: bytes = b"") -> ResponseDecodeError:
        snippet = redact_text(" ".join(part[:80].decode("utf-8", "replace").split()))
        where = f" near element {self.count}" if self._state != "start" else ""
        return ResponseDecodeError(
            f"HTTP {self._status} body is not valid JSON ({why}{where})"
            + (f": {snippet!r}" if snippet else ""),
            status=self._status,
        )


def structure_slice(
    items: list[Any], item_type: type[T], first: int, status: int | None
) -> list[T]:
    """Structure one slice; an error's JSON path is given as in the whole answer."""
    try:
        return structure(items, list[item_type], status=status)  # type: ignore[valid-type]
    except ResponseDecodeError as exc:
        if not first:
            raise
        path = _INDEX.sub(lambda m: f"$[{int(m[1]) + first}]", exc.path, count=1)
        message = str(exc).replace(f" at {exc.path}: ", f" at {path}: ", 1)
        raise ResponseDecodeError(message, path=path, status=exc.status) from None


async def structure_chunks(
    chunks: AsyncIterable[bytes],
    item_type: type[T],
    *,
    status: int | None = None,
    slice_bytes: int = SLICE_BYTES,
) -> list[T]:
    """Decode a streamed JSON array into ``list[item_type]``, slice by slice.

    Each slice's decode and structuring is one synchronous step (run inside the
    converter's ``wrap_structuring`` wrapper, if one is set); between slices control goes
    back to the loop. The calls on one loop
    take turns at it (``_Turns``). Errors are the ``ResponseDecodeError`` the one-shot
    path raises, with the path in the whole answer.
    """
    splitter = ArraySplitter(slice_bytes, status=status)
    out: list[T] = []
    loop = asyncio.get_running_loop()
    turns = _TURNS.get(loop)
    if turns is None:  # one per loop, made once (not a Lock made and dropped per answer)
        turns = _TURNS[loop] = _Turns()
    body = aiter(chunks)
    try:
        while True:
            # A read that has to wait gives the turn up: the callback runs only then.
            waits = loop.call_soon(turns.give, splitter) if turns.owner is splitter else None
            try:
                chunk = await anext(body)
            except StopAsyncIteration:
                break
            finally:
                if waits is not None:
                    waits.cancel()
            splitter.feed(chunk)
            if splitter.ready:
                await turns.take(splitter)
                await _structure(splitter.slices(), out, item_type, status)
        await turns.take(splitter)
        await _structure(splitter.close(), out, item_type, status)
    finally:
        turns.give(splitter)
    return out


async def _structure(
    slices: Iterator[tuple[int, list[Any]]], out: list[T], tp: type[T], status: Any
) -> None:
    """Decode and structure each slice into ``out``, giving the loop a turn after each.

    A slice is one synchronous step, run in the converter's ``structuring_step`` (a
    wrapper the user set, e.g. a GC pause: the slice's dicts are then freed before any
    collection sees them).
    """
    while True:
        with structuring_step():
            got = next(slices, None)
            if got is None:
                return
            first, items = got
            out += structure_slice(items, tp, first, status)
        await asyncio.sleep(0)


class _Turns:
    """The calls structuring slices on one loop take turns: one at a time.

    Interleaved, the slices of many answers arriving together (a fan-out of 32) keep
    every answer's finished models alive until nearly all are done, and each young
    collection meanwhile scans them again: at concurrency 32 that cost 15% of the
    throughput against the one-shot path. In turns, an answer's models are done with
    about as soon as on the one-shot path. A call keeps the turn from slice to slice
    while its bytes are there, and gives it up whenever a read has to wait, so a slow
    answer holds up no other. The loop still gets a turn after every slice.

    The turn is an ``asyncio.Lock``, which is fair: it goes to the waiters in order, a
    newcomer never takes it from one woken but not yet run, and one cancelled once woken
    passes it on. ``owner`` says who holds it, so that a holder takes it again at once.
    """

    __slots__ = ("_lock", "owner")

    def __init__(self) -> None:
        self.owner: object | None = None
        """Who has the turn: a caller's token."""
        self._lock = asyncio.Lock()

    async def take(self, who: object) -> None:
        """Return once ``who`` has the turn: at once if free, else after those waiting."""
        if self.owner is not who:
            await self._lock.acquire()
            self.owner = who

    def give(self, who: object) -> None:
        """Give the turn up if ``who`` has it; it goes to the first call waiting."""
        if self.owner is who:
            self.owner = None
            self._lock.release()


@attrs.frozen
class Sliced:
    """What ``StreamDecode`` returns for an answer it structured in slices.

    ``items`` are the models; ``error`` the ``ResponseDecodeError`` of a bad value, kept
    rather than raised so that, as on the one-shot path, it is not retried.
    """

    items: list[Any]
    error: ResponseDecodeError | None = None


class StreamDecode(Decoder[list[T]]):
    """The ``Decoder`` of a list answer: big 2xx JSON arrays structured as they stream.

    The pipeline hands it a 2xx response with its body unread (``read_stream``). A small
    answer (by Content-Length, or by the bytes read before ``threshold``) is read whole
    and decoded by ``decode_json`` as any call's, then structured by ``build``. A big
    array is structured into ``item_type`` in slices, and comes back as a ``Sliced``.
    Syntax errors and cuts raise (the pipeline retries reads); bad values come back in
    ``Sliced.error``, for ``build`` to raise unretried. The body cap is the transport's,
    enforced as the stream is read. Use it as a context manager around the call: calls
    in flight on one loop share the threshold (see ``plan``).
    """

    __slots__ = ("_loop", "item_type", "slice_bytes", "threshold")

    streams = True

    def __init__(
        self,
        item_type: type[T],
        *,
        threshold: int | None = None,
        slice_bytes: int | None = None,
    ) -> None:
        super().__init__(list[item_type])  # type: ignore[valid-type]
        self.item_type = item_type
        self.threshold = STREAM_THRESHOLD if threshold is None else threshold
        self.slice_bytes = SLICE_BYTES if slice_bytes is None else slice_bytes
        self._loop: asyncio.AbstractEventLoop | None = None

    def __enter__(self) -> Self:
        """Count this call on the running loop until it ends."""
        self._loop = asyncio.get_running_loop()
        _ACTIVE[self._loop] = _ACTIVE.get(self._loop, 0) + 1
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is None:
            raise RuntimeError("StreamDecode exited without being entered")
        left = _ACTIVE.get(self._loop, 1) - 1
        if left > 0:
            _ACTIVE[self._loop] = left
        else:
            _ACTIVE.pop(self._loop, None)
        self._loop = None

    def plan(self, headers: Mapping[str, str]) -> bool:
        """True when the answer is, or may be, large enough to go incremental.

        Calls in flight on the same loop share the threshold: with ``n`` of them (a
        ``for_events`` fan-out), answers from ``threshold / n`` bytes on (floor
        ``MIN_THRESHOLD_BYTES``) go incremental, so answers finishing together are
        structured a slice at a time rather than one whole answer after another.
        """
        sharing = _ACTIVE.get(self._loop, 1) if self._loop is not None else 1
        if sharing > 1:
            self.threshold = max(MIN_THRESHOLD_BYTES, self.threshold // sharing)
        length = declared_length(headers)
        return length is None or length >= self.threshold

    async def read_stream(self, stream: StreamResponse) -> Any:
        """Decode ``stream``'s body: the one-shot data, or a ``Sliced`` for a big array."""
        chunks = stream.iter_chunks(_CHUNK)
        if not self.plan(stream.headers):
            return self._one_shot(stream, await _read_all(chunks))
        head: list[bytes] = []
        total = 0
        async for chunk in chunks:
            total += len(chunk)
            head.append(chunk)
            if total >= self.threshold:
                break
        else:  # small after all
            return self._one_shot(stream, b"".join(head))
        first = b"".join(head)
        if not first.lstrip(_WS).startswith(b"["):  # not an array (an object, "{}")
            return self._one_shot(stream, first + await _read_all(chunks))

        async def body() -> AsyncIterator[bytes]:
            yield first
            async for chunk in chunks:
                yield chunk

        try:
            items = await structure_chunks(
                body(), self.item_type, status=stream.status, slice_bytes=self.slice_bytes
            )
        except ResponseDecodeError as exc:
            if exc.path == "$":  # the body itself is malformed: raised, like decode_json's
                raise
            return Sliced([], exc)  # a bad value: the caller raises it, unretried
        return Sliced(items)

    def build(self, data: Any, status: int) -> list[T]:
        """The models: sliced already (a bad value's error raised now), or structured."""
        if type(data) is Sliced:
            if data.error is not None:
                raise data.error
            return data.items
        return super().build(data, status)

    @staticmethod
    def _one_shot(stream: StreamResponse, content: bytes) -> Any:
        return decode_json(Response(stream.status, stream.headers, content))


async def _read_all(chunks: AsyncIterator[bytes]) -> bytes:
    return b"".join([chunk async for chunk in chunks])


_ACTIVE: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, int] = weakref.WeakKeyDictionary()
"""Entries calls in flight per event loop (read only to size thresholds and slices)."""

_TURNS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Turns] = weakref.WeakKeyDictionary()
"""Each event loop's turns at structuring slices."""
