"""Interception of HTTP traffic at the transport of ``httpx2`` (and ``httpx``), where SDKs send it.

The ``openai`` and ``anthropic`` SDKs send every request through
``httpx2.HTTPTransport.handle_request`` or ``httpx2.AsyncHTTPTransport.handle_async_request``.
While at least one :class:`Interceptor` is active, those methods (and their twins in
``httpx``, when it is installed) are patched: each request is offered to the active
handlers, newest first; the first that returns a response answers it, and a request no
handler answers goes to the real transport. Transports a test builds itself
(``httpx2.MockTransport``) are left alone.

A handler builds its response with :func:`make_response`, which makes an object of the
library the request came from, and may send the request on to the real network with
:func:`forward_sync` / :func:`forward_async` (through the client's own transport: its
connection pool, proxies and TLS settings). The fake model and the cassettes are handlers;
nothing else patches the network.
"""

from __future__ import annotations

import contextlib
import contextvars
import importlib
import inspect
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from types import ModuleType, TracebackType
from typing import Any

import httpx2

__all__ = [
    "Handler",
    "Interceptor",
    "forward_async",
    "forward_sync",
    "handlers_before",
    "is_async_request",
    "make_response",
]

#: A handler answers a request with a response, or returns ``None`` to let it pass.
Handler = Callable[[Any], "Any | Awaitable[Any] | None"]


@dataclass
class _Library:
    """One HTTP library whose transports are patched, with their original methods."""

    module: ModuleType
    sync_original: Callable[..., Any]
    async_original: Callable[..., Any]
    stream_classes: tuple[type, type] | None = None


_lock = threading.RLock()
_handlers: list[Handler] = []
_libraries: list[_Library] = []
# (transport instance, is async, library) of the request being handled.
_current: contextvars.ContextVar[tuple[Any, bool, _Library] | None] = contextvars.ContextVar(
    "agentctx_transport", default=None
)


def _require_current(what: str) -> tuple[Any, bool, _Library]:
    current = _current.get()
    if current is None:
        raise RuntimeError(f"{what} is only available inside an interceptor handler")
    return current


def is_async_request() -> bool:
    """Whether the request being handled comes from an async client."""
    current = _current.get()
    return bool(current and current[1])


def forward_sync(request: Any) -> Any:
    """Send the request being handled to the real network (sync clients)."""
    transport, is_async, library = _require_current("forward_sync()")
    if is_async:
        raise RuntimeError("forward_sync() called for an async client; use forward_async()")
    return library.sync_original(transport, request)


async def forward_async(request: Any) -> Any:
    """Send the request being handled to the real network (async clients)."""
    transport, is_async, library = _require_current("forward_async()")
    if not is_async:
        raise RuntimeError("forward_async() called for a sync client; use forward_sync()")
    return await library.async_original(transport, request)


#: The stream classes of each library, built once: a library is patched anew for every
#: test, and building two classes on a test's first request cost it tens of microseconds.
_built_stream_classes: dict[ModuleType, tuple[type, type]] = {}


def _stream_classes(library: _Library) -> tuple[type, type]:
    if library.stream_classes is None:
        library.stream_classes = _built_stream_classes.get(library.module)
    if library.stream_classes is None:
        sync_base = library.module.SyncByteStream
        async_base = library.module.AsyncByteStream

        class ChunkStream(sync_base, async_base):  # type: ignore[misc,valid-type]
            """Yields recorded chunks one by one (event boundaries of a stream kept)."""

            def __init__(self, chunks: Iterable[bytes]) -> None:
                self._chunks = list(chunks)

            def __iter__(self) -> Iterator[bytes]:
                yield from self._chunks

            async def __aiter__(self) -> AsyncIterator[bytes]:
                for chunk in self._chunks:
                    yield chunk

        class TeeStream(sync_base, async_base):  # type: ignore[misc,valid-type]
            """Passes a live stream through chunk by chunk, keeping a copy for later."""

            def __init__(self, inner: Any, on_close: Callable[[bytes, bool], None]) -> None:
                self._inner = inner
                self._on_close = on_close
                self._parts: list[bytes] = []
                self._complete = False
                self._closed = False

            def __iter__(self) -> Iterator[bytes]:
                for chunk in self._inner:
                    self._parts.append(chunk)
                    yield chunk
                self._complete = True

            async def __aiter__(self) -> AsyncIterator[bytes]:
                async for chunk in self._inner:
                    self._parts.append(chunk)
                    yield chunk
                self._complete = True

            def _finish(self) -> None:
                if not self._closed:
                    self._closed = True
                    self._on_close(b"".join(self._parts), self._complete)

            def close(self) -> None:
                try:
                    if hasattr(self._inner, "close"):
                        self._inner.close()
                finally:
                    self._finish()

            async def aclose(self) -> None:
                try:
                    if hasattr(self._inner, "aclose"):
                        await self._inner.aclose()
                finally:
                    self._finish()

        library.stream_classes = (ChunkStream, TeeStream)
        _built_stream_classes[library.module] = library.stream_classes
    return library.stream_classes


def make_response(
    status: int,
    *,
    headers: Mapping[str, str] | Iterable[tuple[str, str]] = (),
    content: bytes | None = None,
    chunks: Iterable[bytes] | None = None,
) -> Any:
    """A response of the library the handled request came from (``httpx2`` outside one).

    Give ``content`` for a body in one piece or ``chunks`` for a body delivered in parts,
    as a stream is.
    """
    current = _current.get()
    module = current[2].module if current else httpx2
    if chunks is not None:
        library = current[2] if current else _library_for(httpx2)
        chunk_stream, _ = _stream_classes(library)
        return module.Response(status, headers=list(_pairs(headers)), stream=chunk_stream(chunks))
    return module.Response(status, headers=list(_pairs(headers)), content=content or b"")


def tee_response(response: Any, on_close: Callable[[bytes, bool], None]) -> Any:
    """Wrap a live response so its body streams through and ``on_close(body, complete)``
    gets a copy of the raw bytes when the client closes it."""
    _, _, library = _require_current("tee_response()")
    _, tee_stream = _stream_classes(library)
    return library.module.Response(
        response.status_code,
        headers=response.headers.raw,
        stream=tee_stream(response.stream, on_close),
        extensions=response.extensions,
    )


def _pairs(headers: Mapping[str, str] | Iterable[tuple[str, str]]) -> Iterator[tuple[str, str]]:
    items = headers.items() if isinstance(headers, Mapping) else headers
    for name, value in items:
        yield str(name), str(value)


def handlers_before(handler: Handler) -> list[Handler]:
    """The handlers started before ``handler`` that are still active, newest first (the
    order they are offered a request in); empty when ``handler`` is not active.

    A handler that answers a request as if it were not there (a recorder) asks them in
    this order, then forwards what none of them answers.
    """
    with _lock:
        handlers = list(_handlers)
    try:
        position = handlers.index(handler)
    except ValueError:
        return []
    return list(reversed(handlers[:position]))


def _library_for(module: ModuleType) -> _Library:
    for library in _libraries:
        if library.module is module:
            return library
    return _Library(
        module,
        module.HTTPTransport.handle_request,
        module.AsyncHTTPTransport.handle_async_request,
    )


def _dispatch_sync(request: Any) -> Any:
    request.read()
    for handler in reversed(list(_handlers)):
        response = handler(request)
        if inspect.isawaitable(response):
            close = getattr(response, "close", None)
            if close is not None:
                close()
            raise TypeError(
                f"The interceptor handler {handler!r} returned an awaitable for a request "
                "made by a sync client; give sync clients a handler that returns a response."
            )
        if response is not None:
            return response
    return None


async def _dispatch_async(request: Any) -> Any:
    await request.aread()
    for handler in reversed(list(_handlers)):
        response = handler(request)
        if inspect.isawaitable(response):
            response = await response
        if response is not None:
            return response
    return None


def _patch(library: _Library) -> None:
    def handle_request(self: Any, request: Any) -> Any:
        token = _current.set((self, False, library))
        try:
            response = _dispatch_sync(request)
        finally:
            _current.reset(token)
        if response is not None:
            return response
        return library.sync_original(self, request)

    async def handle_async_request(self: Any, request: Any) -> Any:
        token = _current.set((self, True, library))
        try:
            response = await _dispatch_async(request)
        finally:
            _current.reset(token)
        if response is not None:
            return response
        return await library.async_original(self, request)

    library.module.HTTPTransport.handle_request = handle_request
    library.module.AsyncHTTPTransport.handle_async_request = handle_async_request


def _install() -> None:
    modules = [httpx2]
    with contextlib.suppress(ImportError):
        modules.append(importlib.import_module("httpx"))
    for module in modules:
        library = _library_for(module)
        _libraries.append(library)
        _patch(library)


def _uninstall() -> None:
    while _libraries:
        library = _libraries.pop()
        library.module.HTTPTransport.handle_request = library.sync_original
        library.module.AsyncHTTPTransport.handle_async_request = library.async_original


class Interceptor:
    """Routes HTTP requests to ``handler`` while started (also a context manager)."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self._active = False

    @property
    def active(self) -> bool:
        return self._active

    def start(self) -> None:
        with _lock:
            if self._active:
                return
            if not _handlers:
                _install()
            _handlers.append(self.handler)
            self._active = True

    def stop(self) -> None:
        with _lock:
            if not self._active:
                return
            _handlers.remove(self.handler)
            self._active = False
            if not _handlers:
                _uninstall()

    def __enter__(self) -> Interceptor:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
