"""Interception of HTTP traffic at the ``httpx2`` transport, where the SDKs send it.

The ``openai`` and ``anthropic`` SDKs send every request through
``httpx2.HTTPTransport.handle_request`` or ``httpx2.AsyncHTTPTransport.handle_async_request``.
While at least one :class:`Interceptor` is active, both are patched: each request is offered
to the active handlers, newest first; the first that returns a response answers it, and a
request no handler answers goes to the real transport. Transports a test builds itself
(``httpx2.MockTransport``) are left alone.

The fake model and the cassettes are handlers; nothing else patches the network.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any

import httpx2

__all__ = ["Handler", "Interceptor"]

#: A handler answers a request with a response, or returns ``None`` to let it pass.
Handler = Callable[[httpx2.Request], "httpx2.Response | Awaitable[httpx2.Response | None] | None"]

_lock = threading.RLock()
_handlers: list[Handler] = []
_originals: dict[str, Any] = {}


def _sync_dispatch(request: httpx2.Request) -> httpx2.Response | None:
    request.read()
    for handler in reversed(list(_handlers)):
        response = handler(request)
        if inspect.isawaitable(response):
            if inspect.iscoroutine(response):
                response.close()  # never awaited: close it, or Python warns when it is collected
            raise TypeError(
                f"The interceptor handler {handler!r} returned an awaitable for a request "
                "made by a sync client; give sync clients a handler that returns a response."
            )
        if response is not None:
            return response
    return None


async def _async_dispatch(request: httpx2.Request) -> httpx2.Response | None:
    await request.aread()
    for handler in reversed(list(_handlers)):
        response = handler(request)
        if inspect.isawaitable(response):
            response = await response
        if response is not None:
            return response
    return None


def _patched_sync(self: httpx2.HTTPTransport, request: httpx2.Request) -> httpx2.Response:
    response = _sync_dispatch(request)
    if response is not None:
        return response
    original: Callable[[httpx2.HTTPTransport, httpx2.Request], httpx2.Response] = _originals["sync"]
    return original(self, request)


async def _patched_async(
    self: httpx2.AsyncHTTPTransport, request: httpx2.Request
) -> httpx2.Response:
    response = await _async_dispatch(request)
    if response is not None:
        return response
    original: Callable[[httpx2.AsyncHTTPTransport, httpx2.Request], Awaitable[httpx2.Response]] = (
        _originals["async"]
    )
    return await original(self, request)


def _install() -> None:
    _originals["sync"] = httpx2.HTTPTransport.handle_request
    _originals["async"] = httpx2.AsyncHTTPTransport.handle_async_request
    httpx2.HTTPTransport.handle_request = _patched_sync  # type: ignore[method-assign]
    httpx2.AsyncHTTPTransport.handle_async_request = _patched_async  # type: ignore[method-assign]


def _uninstall() -> None:
    httpx2.HTTPTransport.handle_request = _originals.pop("sync")  # type: ignore[method-assign]
    httpx2.AsyncHTTPTransport.handle_async_request = _originals.pop("async")  # type: ignore[method-assign]


class Interceptor:
    """Routes the SDKs' HTTP requests to ``handler`` while started (a context manager)."""

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
