"""Interception of ``httpx2`` and ``httpx`` at their transports, where the ``openai`` and
``anthropic`` SDKs send every request.

While installed, ``HTTPTransport.handle_request`` and ``AsyncHTTPTransport.handle_async_request``
of ``httpx2`` (and of ``httpx``, when it is installed) read the request's body and hand the
request, as it is, to :func:`~pytest_agentctx.traffic.transport.dispatch.dispatch_sync` /
:func:`~pytest_agentctx.traffic.transport.dispatch.dispatch_async`: handlers take and give
objects of the library the request came from. Going on to the network calls the original
method, through the client's own transport (its connection pool, proxies and TLS
settings), after giving the pool its real TLS context (:mod:`pytest_agentctx.traffic.lazy_tls`)
unless respx answers the request there. Transports a test builds itself
(``httpx2.MockTransport``) are left alone.

A request that an active ``respx`` router has a route for, at the layer below the transport
where respx mocks (``httpcore`` for ``httpx``, ``httpcore2`` for ``httpx2``), is dispatched
with that route (:mod:`pytest_agentctx.traffic.respx_routes`).

The module is named after the library; its ``import httpx`` is absolute and names the
library, never this module.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Protocol

import httpx2

from pytest_agentctx.traffic import lazy_tls
from pytest_agentctx.traffic.errors import NetworkBlocked
from pytest_agentctx.traffic.respx_routes import RespxRoute, respx_route
from pytest_agentctx.traffic.transport.dispatch import dispatch_async, dispatch_sync
from pytest_agentctx.traffic.transport.wire import WireRequest, WireResponse


class _TransportRequest(WireRequest, Protocol):
    """A request as a transport gets it: its body may be unread yet."""

    def read(self) -> bytes: ...

    async def aread(self) -> bytes: ...


@dataclass(frozen=True)
class _Library:
    """One HTTP library whose transports are patched, with their original methods."""

    module: ModuleType
    sync_original: Callable[[object, WireRequest], WireResponse]
    async_original: Callable[[object, WireRequest], Awaitable[WireResponse]]

    @property
    def core(self) -> str:
        """The package its transports send through, where respx mocks it (``httpcore2``)."""
        return self.module.__name__.replace("httpx", "httpcore", 1)


_libraries: list[_Library] = []


def _materialize(transport: object, route: RespxRoute | None) -> None:
    """Before a request goes on to the real transport: unless respx answers it there, it
    goes to the network, and the transport needs its real TLS context (:mod:`.lazy_tls`)."""
    if route is None or route.passes_through:
        lazy_tls.materialize(transport)


def _patch(library: _Library) -> None:
    module, core = library.module, library.core
    sync_original, async_original = library.sync_original, library.async_original

    def refuse(request: WireRequest, blocked: NetworkBlocked) -> BaseException:
        # what the transport raises when the guard refuses its connection
        error: BaseException = module.ConnectError(str(blocked), request=request)
        return error

    def handle_request(self: object, request: _TransportRequest) -> WireResponse:
        request.read()
        route = respx_route(request, core)

        def send(sent: WireRequest) -> WireResponse:
            _materialize(self, route)
            return sync_original(self, sent)

        return dispatch_sync(request, send, library=module, route=route, refuse=refuse)

    async def handle_async_request(self: object, request: _TransportRequest) -> WireResponse:
        await request.aread()
        route = respx_route(request, core)

        async def send(sent: WireRequest) -> WireResponse:
            _materialize(self, route)
            return await async_original(self, sent)

        return await dispatch_async(request, send, library=module, route=route, refuse=refuse)

    module.HTTPTransport.handle_request = handle_request
    module.AsyncHTTPTransport.handle_async_request = handle_async_request


def install() -> None:
    """Patch the transports of ``httpx2``, and of ``httpx`` when it is installed."""
    modules = [httpx2]
    with contextlib.suppress(ImportError):
        modules.append(importlib.import_module("httpx"))
    for module in modules:
        library = _Library(
            module,
            module.HTTPTransport.handle_request,
            module.AsyncHTTPTransport.handle_async_request,
        )
        _libraries.append(library)
        _patch(library)


def uninstall() -> None:
    """Put the transports' own methods back."""
    while _libraries:
        library = _libraries.pop()
        library.module.HTTPTransport.handle_request = library.sync_original
        library.module.AsyncHTTPTransport.handle_async_request = library.async_original
