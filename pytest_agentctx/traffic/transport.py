"""Interception of HTTP traffic at the transport of ``httpx2`` (and ``httpx``), where SDKs send it.

The ``openai`` and ``anthropic`` SDKs send every request through
``httpx2.HTTPTransport.handle_request`` or ``httpx2.AsyncHTTPTransport.handle_async_request``.
While at least one :class:`Interceptor` is active, those methods (and their twins in
``httpx``, when it is installed) are patched: each request is offered to the active
handlers of the context that makes it, newest first; the first that returns a response
answers it, and a request no handler answers goes to the real transport. Transports a test
builds itself (``httpx2.MockTransport``) are left alone.

The patching is process-wide, the handlers are not: an interceptor answers for the
:mod:`contextvars` context it was started in and those copied from it (asyncio tasks, so two
runs awaited together each get their own cassette or fake model). A request of a thread
started without a context goes to the one chain of active interceptors, or, while several
concurrent runs each have their own, is refused with
:class:`~pytest_agentctx.traffic.errors.UnscopedRequest` (see :mod:`.scopes`).

A handler builds its response with :func:`make_response`, which makes an object of the
library the request came from, and may send the request on to the real network with
:func:`forward_sync` / :func:`forward_async` (through the client's own transport: its
connection pool, proxies and TLS settings). The fake model and the cassettes are handlers;
nothing else patches the network.

Other tools in the same test come first: a request that an active ``respx`` router has a
route for, at the layer below the transport where respx mocks (``httpcore`` for ``httpx``,
``httpcore2`` for ``httpx2``), is not offered to the handlers but sent on to the real
transport, where respx answers it. Only handlers started with ``witness=True`` (recorders of
what the test saw) are offered it first; they must pass it on (:func:`forward_sync` /
:func:`forward_async`), and :func:`answered_by_another_tool` tells them why. A request respx
has no route for, or a pass-through route, goes to the handlers as usual
(:mod:`.respx_routes`).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import importlib
import inspect
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from types import ModuleType, TracebackType
from typing import Any, cast

import httpx2

from pytest_agentctx.traffic import lazy_tls, scopes
from pytest_agentctx.traffic.errors import UnscopedRequest
from pytest_agentctx.traffic.respx_routes import RespxRoute, respx_route

__all__ = [
    "Handler",
    "Interceptor",
    "answered_by_another_tool",
    "dispatch_async",
    "dispatch_sync",
    "forward_async",
    "forward_sync",
    "handlers_before",
    "is_async_request",
    "make_response",
    "release_leftovers",
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

    @property
    def core(self) -> str:
        """The package its transports send through, where respx mocks it (``httpcore2``)."""
        return self.module.__name__.replace("httpx", "httpcore", 1)


#: Guards starting and stopping interceptors, and the patching. Which interceptors a
#: request is offered is the scopes' (:mod:`.scopes`), read without it.
_lock = threading.RLock()
_libraries: list[_Library] = []


@dataclass
class _Handling:
    """The request being handled, and where it came from."""

    transport: Any
    is_async: bool
    library: _Library
    #: The respx route that matched it (see :func:`.respx_routes.respx_route`), if any.
    route: RespxRoute | None = None
    #: Whether a handler sent it on to the real transport.
    forwarded: bool = False
    #: How a request of another client library (see :func:`dispatch_sync`) goes on to the
    #: network: its own send, taking and giving ``httpx2`` objects. None for httpx(2).
    send: Callable[[Any], Any] | None = None
    #: The interceptors of the context that made it, newest first (see :func:`_offered`).
    scoped: tuple[Interceptor, ...] = ()

    @property
    def elsewhere(self) -> bool:
        """Whether another tool (a respx route) answers it below the transport."""
        return self.route is not None and not self.route.passes_through


_current: contextvars.ContextVar[_Handling | None] = contextvars.ContextVar(
    "agentctx_transport", default=None
)


def _require_current(what: str) -> _Handling:
    current = _current.get()
    if current is None:
        raise RuntimeError(f"{what} is only available inside an interceptor handler")
    return current


def is_async_request() -> bool:
    """Whether the request being handled comes from an async client."""
    current = _current.get()
    return bool(current and current.is_async)


def answered_by_another_tool() -> bool:
    """Whether another tool in the test (a ``respx`` route) answers the request being
    handled, below the transport. Only witnesses are offered such a request; they pass it
    on with :func:`forward_sync` / :func:`forward_async` and never store it as their own."""
    current = _current.get()
    return bool(current and current.elsewhere)


def forward_sync(request: Any) -> Any:
    """Send the request being handled to the real network (sync clients)."""
    current = _require_current("forward_sync()")
    if current.is_async:
        raise RuntimeError("forward_sync() called for an async client; use forward_async()")
    current.forwarded = True
    if current.send is not None:
        return current.send(request)
    _materialize(current)
    return current.library.sync_original(current.transport, request)


async def forward_async(request: Any) -> Any:
    """Send the request being handled to the real network (async clients)."""
    current = _require_current("forward_async()")
    if not current.is_async:
        raise RuntimeError("forward_async() called for a sync client; use forward_sync()")
    current.forwarded = True
    if current.send is not None:
        return await current.send(request)
    _materialize(current)
    return await current.library.async_original(current.transport, request)


def _materialize(current: _Handling) -> None:
    """Before a request goes on to the real transport: unless respx answers it there, it
    goes to the network, and the transport needs its real TLS context (:mod:`.lazy_tls`)."""
    if not current.elsewhere:
        lazy_tls.materialize(current.transport)


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
        self, inner: Any, on_close: Callable[[bytes, bool], None], *, is_async: bool = False
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
        if not self._closed and not self._async:
            self._complete = _read_rest(self._inner, self._parts, seconds, max_bytes)
        self._finish()
        return self._complete

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


#: The stream classes of each library, built once: a library is patched anew for every
#: test, and building two classes on a test's first request cost it tens of microseconds.
_built_stream_classes: dict[ModuleType, tuple[type, type]] = {}


def _stream_classes(library: _Library) -> tuple[type, type]:
    if library.stream_classes is None:
        library.stream_classes = _built_stream_classes.get(library.module)
    if library.stream_classes is None:
        sync_base = library.module.SyncByteStream
        async_base = library.module.AsyncByteStream

        class ChunkStream(_Chunks, sync_base, async_base):  # type: ignore[misc,valid-type]
            """Yields recorded chunks one by one (event boundaries of a stream kept)."""

        class TeeStream(_Tee, sync_base, async_base):  # type: ignore[misc,valid-type]
            """Passes a live stream through chunk by chunk, keeping a copy for later."""

        library.stream_classes = (ChunkStream, TeeStream)
        _built_stream_classes[library.module] = library.stream_classes
    return library.stream_classes


def _nothing() -> None:
    pass


def _read_rest(inner: Any, parts: list[bytes], seconds: float, max_bytes: int) -> bool:
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
            inner.close()


def make_response(
    status: int,
    *,
    headers: Mapping[str, str] | Iterable[tuple[str, str]] = (),
    content: bytes | None = None,
    chunks: Iterable[bytes] | None = None,
    on_end: Callable[[], None] | None = None,
) -> Any:
    """A response of the library the handled request came from (``httpx2`` outside one).

    Give ``content`` for a body in one piece or ``chunks`` for a body delivered in parts,
    as a stream is; ``on_end`` is called when the reader asks for more than ``chunks`` (it
    may raise, to say there is no more to give).
    """
    current = _current.get()
    module = current.library.module if current else httpx2
    if chunks is not None:
        library = current.library if current else _library_for(httpx2)
        chunk_stream, _ = _stream_classes(library)
        stream = chunk_stream(chunks, on_end)
        return module.Response(status, headers=list(_pairs(headers)), stream=stream)
    return module.Response(status, headers=list(_pairs(headers)), content=content or b"")


def tee_response(response: Any, on_close: Callable[[bytes, bool], None]) -> Any:
    """Wrap a live response so its body streams through and ``on_close(body, complete)``
    gets a copy of the raw bytes when the client closes it.

    The wrapper's ``stream`` has ``finish(seconds=, max_bytes=)``, to hand over the copy of
    a response the client never closes (see ``TeeStream.finish``)."""
    current = _require_current("tee_response()")
    library = current.library
    _, tee_stream = _stream_classes(library)
    return library.module.Response(
        response.status_code,
        headers=response.headers.raw,
        stream=tee_stream(response.stream, on_close, is_async=current.is_async),
        extensions=response.extensions,
    )


def _pairs(headers: Mapping[str, str] | Iterable[tuple[str, str]]) -> Iterator[tuple[str, str]]:
    items = headers.items() if isinstance(headers, Mapping) else headers
    for name, value in items:
        yield str(name), str(value)


def handlers_before(handler: Handler) -> list[Handler]:
    """The handlers offered a request after ``handler``, newest first: those started
    before it in its scope that are still active (see :class:`Interceptor`); empty when
    ``handler`` is not offered requests here. Inside a handler, those the request being
    handled is offered after it; for a request another tool answers
    (:func:`answered_by_another_tool`), only the witnesses among them, as only they are
    offered it.

    A handler that answers a request as if it were not there (a recorder) asks them in
    this order, then forwards what none of them answers.
    """
    current = _current.get()
    if current is not None:
        scoped = current.scoped
    else:
        offered = scopes.offered()
        scoped = cast("tuple[Interceptor, ...]", offered if isinstance(offered, tuple) else ())
    for position, interceptor in enumerate(scoped):
        if interceptor.handler == handler:
            older = scoped[position + 1 :]
            if answered_by_another_tool():
                return [i.handler for i in older if i.witness]
            return [i.handler for i in older]
    return []


def _library_for(module: ModuleType) -> _Library:
    for library in _libraries:
        if library.module is module:
            return library
    return _Library(
        module,
        module.HTTPTransport.handle_request,
        module.AsyncHTTPTransport.handle_async_request,
    )


def _offered(current: _Handling, request: Any) -> list[Handler]:
    """The handlers to offer ``request``, newest first: those of the context that made
    it, only the witnesses among them when another tool answers it. Raises
    :class:`UnscopedRequest` when no scope owns it (see :func:`.scopes.refusal`), or when
    it is late: made by work of a scope that ended (see :func:`.scopes.late_refusal`)."""
    offered = scopes.offered()
    if offered is None:
        raise scopes.refusal(request)
    if isinstance(offered, scopes.Ended):
        raise scopes.late_refusal(request, offered)
    scoped = current.scoped = cast("tuple[Interceptor, ...]", offered)
    if current.elsewhere:
        return [i.handler for i in scoped if i.witness]
    return [i.handler for i in scoped]


def _answered(current: _Handling, response: Any) -> Any:
    """``response`` as a handler gave it; a pass-through respx route it matched counts a
    call when the request did not go on to respx."""
    route = current.route
    if (
        response is not None
        and route is not None
        and route.passes_through
        and not current.forwarded
    ):
        route.note_pass_through()
    return response


def _dispatch_sync(request: Any, handlers: list[Handler]) -> Any:
    for handler in handlers:
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


async def _dispatch_async(request: Any, handlers: list[Handler]) -> Any:
    for handler in handlers:
        response = handler(request)
        if inspect.isawaitable(response):
            response = await response
        if response is not None:
            return response
    return None


def _patch(library: _Library) -> None:
    def handle_request(self: Any, request: Any) -> Any:
        request.read()
        current = _Handling(self, False, library, respx_route(request, library.core))
        token = _current.set(current)
        try:
            response = _answered(current, _dispatch_sync(request, _offered(current, request)))
        finally:
            _current.reset(token)
        if response is not None:
            return response
        _materialize(current)
        return library.sync_original(self, request)

    async def handle_async_request(self: Any, request: Any) -> Any:
        await request.aread()
        current = _Handling(self, True, library, respx_route(request, library.core))
        token = _current.set(current)
        try:
            handlers = _offered(current, request)
            response = _answered(current, await _dispatch_async(request, handlers))
        finally:
            _current.reset(token)
        if response is not None:
            return response
        _materialize(current)
        return await library.async_original(self, request)

    library.module.HTTPTransport.handle_request = handle_request
    library.module.AsyncHTTPTransport.handle_async_request = handle_async_request


# -- other client libraries (urllib3, aiohttp) ------------------------------------------


def dispatch_sync(
    request: httpx2.Request, send: Callable[[httpx2.Request], httpx2.Response]
) -> httpx2.Response:
    """Handle a request made through another sync client library (urllib3, and so
    ``requests``), converted to an ``httpx2`` request with its body read: the active
    handlers are offered it as they are an ``httpx2`` request, and answer it with ``httpx2``
    responses. ``send`` sends it to the network through the library's own code (converting
    the request back, and the library's response to an ``httpx2`` one, streamed); it is used
    when a handler forwards the request (:func:`forward_sync`) or none answers it."""
    current = _Handling(None, False, _library_for(httpx2), send=send)
    token = _current.set(current)
    try:
        response = _dispatch_sync(request, _offered(current, request))
    finally:
        _current.reset(token)
    return response if response is not None else send(request)


async def dispatch_async(
    request: httpx2.Request, send: Callable[[httpx2.Request], Awaitable[httpx2.Response]]
) -> httpx2.Response:
    """:func:`dispatch_sync` for another async client library (aiohttp)."""
    current = _Handling(None, True, _library_for(httpx2), send=send)
    token = _current.set(current)
    try:
        response = await _dispatch_async(request, _offered(current, request))
    finally:
        _current.reset(token)
    return response if response is not None else await send(request)


def _install() -> None:
    modules = [httpx2]
    with contextlib.suppress(ImportError):
        modules.append(importlib.import_module("httpx"))
    for module in modules:
        library = _library_for(module)
        _libraries.append(library)
        _patch(library)
    from pytest_agentctx.traffic.clients import PATCHERS

    for install, _ in PATCHERS:
        install()


def _uninstall() -> None:
    from pytest_agentctx.traffic.clients import PATCHERS

    for _, uninstall in reversed(PATCHERS):
        uninstall()
    while _libraries:
        library = _libraries.pop()
        library.module.HTTPTransport.handle_request = library.sync_original
        library.module.AsyncHTTPTransport.handle_async_request = library.async_original


def release_leftovers() -> None:
    """A session ended: forget its leftover threads, unpatch if no interceptor is active."""
    with _lock:
        scopes.forget_orphans()
        if _libraries and not scopes.scopes():
            _uninstall()


class Interceptor:
    """Routes HTTP requests to ``handler`` while started (also a context manager).

    It answers for the context it was started in (:mod:`contextvars`): the requests made
    there, and in the contexts copied from it afterwards (the asyncio tasks created there,
    ``asyncio.to_thread``), see :mod:`.scopes`. Stopped, from any context, it answers no
    more. A request made in a context with none of its own (a thread) goes to the one
    chain of interceptors active, or is refused with :class:`UnscopedRequest` when several
    concurrent scopes are active; :attr:`refused` keeps those refusals.

    A ``witness`` handler is also offered the requests another tool in the test answers
    (:func:`answered_by_another_tool`): it must pass them on, and may keep a copy of what
    the test saw. Other handlers never see them.
    """

    def __init__(self, handler: Handler, *, witness: bool = False) -> None:
        self.handler = handler
        self.witness = witness
        self._active = False
        #: The requests refused while it was active because no scope owned them (made in
        #: a thread without a run's context while concurrent runs each had their own):
        #: its owner fails the test with the first (a cassette's :meth:`check`).
        self.refused: list[UnscopedRequest] = []

    @property
    def active(self) -> bool:
        return self._active

    def start(self) -> None:
        """Answer the requests of the current context (and those copied from it) from now."""
        with _lock:
            if self._active:
                return
            if scopes.enter(self) and not _libraries:
                try:
                    _install()
                except BaseException:
                    scopes.leave(self)
                    raise
            self._active = True

    def stop(self) -> None:
        """Answer no more requests, whichever context stops it."""
        with _lock:
            if not self._active:
                return
            self._active = False
            # a thread a test left running keeps the patches: its requests are refused
            if scopes.leave(self) and not scopes.pending():
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
