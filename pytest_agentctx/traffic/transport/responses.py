"""The responses a handler gives: :func:`make_response` builds one in the library of the
request being handled, :func:`tee_response` passes a live one through while keeping a copy
of its body, and :func:`as_httpx2` gives a client that converts ``httpx2`` responses one.

Their bodies are byte streams of that library (``httpx2``'s, or ``httpx``'s): the classes,
:class:`_Chunks` and :class:`_Tee` mixed into the library's stream classes, are built once
per library (:func:`_stream_classes`).
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Iterator, Mapping
from itertools import chain
from types import ModuleType

import httpx2

from pytest_agentctx.traffic.transport.dispatch import current_handling
from pytest_agentctx.traffic.transport.wire import Handler, Recorded, WireResponse


class _Chunks:
    """Yields recorded chunks one by one (event boundaries of a stream kept), then calls
    ``on_end`` (if given) when the reader asks for more. Mixed into each library's byte
    stream classes (see :func:`_stream_classes`)."""

    def __init__(self, chunks: Iterable[bytes], on_end: Callable[[], None] | None = None) -> None:
        self._chunks = list(chunks)
        self._on_end = on_end or _nothing

    def __iter__(self) -> Iterator[bytes]:
        yield from self._chunks
        self._on_end()

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self._chunks:
            yield chunk
        self._on_end()


class _Tee:
    """Passes a live stream through chunk by chunk, keeping a copy for later. Mixed into
    each library's byte stream classes (see :func:`_stream_classes`)."""

    def __init__(
        self,
        inner: Iterable[bytes] | AsyncIterable[bytes],
        on_close: Callable[[bytes, bool], None],
        *,
        is_async: bool = False,
    ) -> None:
        self._inner = inner
        self._on_close = on_close
        self._parts: list[bytes] = []
        self._complete = False
        self._closed = False
        self._async = is_async

    def finish(self, *, seconds: float, max_bytes: int) -> bool:
        """Hand over the copy of a response the client never closed; returns whether it
        is whole.

        A sync stream is read on to its end (from where the client stopped reading), for at
        most ``seconds`` (checked as chunks arrive: a read that hangs waits for the client's
        read timeout) and ``max_bytes`` in all, then closed. An async stream cannot be read
        outside its event loop, which has ended by then: it keeps what the client read.
        """
        inner = self._inner
        if not self._closed and not self._async and isinstance(inner, Iterable):
            self._complete = _read_rest(inner, self._parts, seconds, max_bytes)
        self._finish()
        return self._complete

    def read_so_far(self) -> bytes | None:
        """The bytes the client read, while it has not closed the stream (``None`` once
        it has: the copy went to ``on_close``)."""
        return None if self._closed else b"".join(self._parts)

    def __iter__(self) -> Iterator[bytes]:
        inner = self._inner
        if not isinstance(inner, Iterable):
            raise TypeError(f"a sync client read the async stream {inner!r}")
        for chunk in inner:
            self._parts.append(chunk)
            yield chunk
        self._complete = True

    async def __aiter__(self) -> AsyncIterator[bytes]:
        inner = self._inner
        if not isinstance(inner, AsyncIterable):
            raise TypeError(f"an async client read the sync stream {inner!r}")
        async for chunk in inner:
            self._parts.append(chunk)
            yield chunk
        self._complete = True

    def _finish(self) -> None:
        if not self._closed:
            self._closed = True
            self._on_close(b"".join(self._parts), self._complete)

    def close(self) -> None:
        try:
            close = getattr(self._inner, "close", None)
            if close is not None:
                close()
        finally:
            self._finish()

    async def aclose(self) -> None:
        try:
            aclose = getattr(self._inner, "aclose", None)
            if aclose is not None:
                await aclose()
        finally:
            self._finish()


#: The stream classes of each library, built once: a library is patched anew for every
#: test, and building two classes on a test's first request cost it tens of microseconds.
_built_stream_classes: dict[ModuleType, tuple[type[_Chunks], type[_Tee]]] = {}


def _stream_classes(module: ModuleType) -> tuple[type[_Chunks], type[_Tee]]:
    """The chunk and tee stream classes of the HTTP library ``module``."""
    classes = _built_stream_classes.get(module)
    if classes is None:
        sync_base = module.SyncByteStream
        async_base = module.AsyncByteStream

        class ChunkStream(_Chunks, sync_base, async_base):  # type: ignore[misc,valid-type]
            """Yields recorded chunks one by one (event boundaries of a stream kept)."""

        class TeeStream(_Tee, sync_base, async_base):  # type: ignore[misc,valid-type]
            """Passes a live stream through chunk by chunk, keeping a copy for later."""

        classes = _built_stream_classes[module] = (ChunkStream, TeeStream)
    return classes


def _nothing() -> None:
    pass


def whole_body(stream: object) -> bytes | None:
    """The body of a response :func:`make_response` made of ``chunks`` with nothing to do
    at its end, in one piece, for a client that reads it all at once anyway; ``None`` for
    any other stream (read it chunk by chunk)."""
    if isinstance(stream, _Chunks) and stream._on_end is _nothing:
        return b"".join(stream._chunks)
    return None


def _read_rest(inner: Iterable[bytes], parts: list[bytes], seconds: float, max_bytes: int) -> bool:
    """Read the sync stream ``inner`` on to its end into ``parts`` (within ``seconds`` and
    ``max_bytes`` in all), then close it; returns whether the end was reached."""
    # The clock the frozen clock leaves alone (freezegun patches time.monotonic()).
    now = functools.partial(time.clock_gettime, time.CLOCK_MONOTONIC)
    deadline = now() + seconds
    size = sum(len(part) for part in parts)
    try:
        for chunk in inner:  # a new iteration goes on where the last one stopped
            parts.append(chunk)
            size += len(chunk)
            if size > max_bytes or now() > deadline:
                return False
        return True
    except Exception:  # a broken connection: what arrived is kept, in part
        return False
    finally:
        with contextlib.suppress(Exception):
            close = getattr(inner, "close", None)
            if close is not None:
                close()


def make_response(
    status: int,
    *,
    headers: Mapping[str, str] | Iterable[tuple[str, str]] = (),
    content: bytes | None = None,
    chunks: Iterable[bytes] | None = None,
    on_end: Callable[[], None] | None = None,
) -> WireResponse:
    """A response of the library the handled request came from (``httpx2`` outside one).

    Give ``content`` for a body in one piece or ``chunks`` for a body delivered in parts,
    as a stream is; ``on_end`` is called when the reader asks for more than ``chunks`` (it
    may raise, to say there is no more to give).
    """
    current = current_handling()
    module = current.library if current else httpx2
    response: WireResponse
    if chunks is not None:
        chunk_stream, _ = _stream_classes(module)
        stream = chunk_stream(chunks, on_end)
        response = module.Response(status, headers=_pairs(headers), stream=stream)
    else:
        response = module.Response(status, headers=_pairs(headers), content=content or b"")
    return response


def recorded_response(
    status: int,
    *,
    headers: Mapping[str, str],
    chunks: list[bytes],
    streamed: bool,
    handler: Handler,
) -> WireResponse:
    """The replay of a recorded response whose body is ``chunks``, all of it known: a
    :class:`Recorded` when the client of the request being handled takes one and offered
    the request to ``handler`` itself (a handler that asks other handlers gets the
    library's response, as ever) and the headers are ASCII (``httpx2`` refuses others);
    else :func:`make_response`'s, of ``chunks`` when ``streamed``, else in one piece."""
    current = current_handling()
    if (
        current is not None
        and current.takes_recorded
        and current.offered_to is handler
        and _ascii(headers)
    ):
        body, pairs = b"".join(chunks), tuple(headers.items())
        if body and not streamed and not any(n.lower() == "content-length" for n, _ in pairs):
            pairs += (("Content-Length", str(len(body))),)  # as httpx2 adds it to content
        return Recorded(status, pairs, body)
    if streamed:
        return make_response(status, headers=headers, chunks=chunks)
    return make_response(status, headers=headers, content=b"".join(chunks))


def _ascii(headers: Mapping[str, str]) -> bool:
    return "".join(chain.from_iterable(headers.items())).isascii()


def _pairs(headers: Mapping[str, str] | Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    items = headers.items() if isinstance(headers, Mapping) else headers
    return [(str(name), str(value)) for name, value in items]


def tee_response(response: WireResponse, on_close: Callable[[bytes, bool], None]) -> WireResponse:
    """Wrap a live response so its body streams through and ``on_close(body, complete)``
    gets a copy of the raw bytes when the client closes it.

    The wrapper's ``stream`` has ``finish(seconds=, max_bytes=)``, to hand over the copy of
    a response the client never closes (see ``TeeStream.finish``), and ``read_so_far()``,
    the bytes the client read of a response it has not closed yet."""
    current = current_handling()
    if current is None:
        raise RuntimeError("tee_response() is only available inside an interceptor handler")
    _, tee_stream = _stream_classes(current.library)
    wrapped: WireResponse = current.library.Response(
        response.status_code,
        headers=response.headers.raw,
        stream=tee_stream(response.stream, on_close, is_async=current.is_async),
        extensions=response.extensions,
    )
    return wrapped


def as_httpx2(response: WireResponse) -> httpx2.Response:
    """``response`` as an ``httpx2`` response, for a client that converts one into its own:
    itself when it is one (a handler answers a request of another client with ``httpx2``
    responses), else a new one over its stream."""
    if isinstance(response, httpx2.Response):
        return response
    return httpx2.Response(
        response.status_code,
        headers=response.headers.raw,
        stream=_Passed(response.stream),
        extensions=dict(response.extensions),
    )


class _Passed(httpx2.SyncByteStream, httpx2.AsyncByteStream):
    """The stream of another library's response as an ``httpx2`` stream."""

    def __init__(self, inner: Iterable[bytes] | AsyncIterable[bytes]) -> None:
        self._inner = inner

    def __iter__(self) -> Iterator[bytes]:
        if not isinstance(self._inner, Iterable):
            raise TypeError(f"a sync client read the async stream {self._inner!r}")
        yield from self._inner

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if not isinstance(self._inner, AsyncIterable):
            raise TypeError(f"an async client read the sync stream {self._inner!r}")
        async for chunk in self._inner:
            yield chunk

    def close(self) -> None:
        close = getattr(self._inner, "close", None)
        if close is not None:
            close()

    async def aclose(self) -> None:
        aclose = getattr(self._inner, "aclose", None)
        if aclose is not None:
            await aclose()
