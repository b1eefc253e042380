"""The transport: where the HTTP requests of every client library are offered to the active
handlers (the fake model, the cassettes, capture's recorder) before they reach the network.

While at least one :class:`Interceptor` is active, the client libraries are patched
(:mod:`pytest_agentctx.traffic.clients`): each request is offered to the active handlers of
the context that makes it, newest first; the first that returns a response answers it, and
a request no handler answers goes to the network through the client's own code.

The patching is process-wide, the handlers are not: an interceptor answers for the
:mod:`contextvars` context it was started in and those copied from it (asyncio tasks, so two
runs awaited together each get their own cassette or fake model). A request of a thread
started without a context goes to the one chain of active interceptors, or, while several
concurrent runs each have their own, is refused with
:class:`~pytest_agentctx.traffic.errors.UnscopedRequest` (see
:mod:`pytest_agentctx.traffic.scopes`).

A handler builds its response with :func:`make_response`, an object of the library the
request came from, and may send the request on to the real network with
:func:`forward_sync` / :func:`forward_async`. Other tools in the same test come first: a
request an active ``respx`` router has a route for is offered only to witnesses
(:func:`answered_by_another_tool`).

Its modules, from the bottom up (the clients import the first three, the last imports the
clients):

* :mod:`.wire`: the request and response handlers see (:class:`WireRequest`,
  :class:`WireResponse`) and the :data:`Handler` type;
* :mod:`.dispatch`: the handlers a request is offered and how it goes on to the network;
* :mod:`.responses`: :func:`make_response` and :func:`tee_response`;
* :mod:`.interceptor`: :class:`Interceptor`, which patches the clients while started.
"""

from __future__ import annotations

from pytest_agentctx.traffic.transport.dispatch import (
    answered_by_another_tool as answered_by_another_tool,
    dispatch_async as dispatch_async,
    dispatch_sync as dispatch_sync,
    forward_async as forward_async,
    forward_sync as forward_sync,
    handlers_before as handlers_before,
    is_async_request as is_async_request,
    witnessed_async as witnessed_async,
    witnessed_sync as witnessed_sync,
)
from pytest_agentctx.traffic.transport.interceptor import (
    Interceptor as Interceptor,
    release_leftovers as release_leftovers,
)
from pytest_agentctx.traffic.transport.responses import (
    make_response as make_response,
    tee_response as tee_response,
)
from pytest_agentctx.traffic.transport.wire import (
    CLIENT_EXTENSION as CLIENT_EXTENSION,
    Handler as Handler,
    WireRequest as WireRequest,
    WireResponse as WireResponse,
)
