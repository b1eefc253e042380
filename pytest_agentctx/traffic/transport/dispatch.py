"""The dispatch of a request to the handlers: which handlers it is offered, in which order,
and how a handler sends it on to the network.

A client (:mod:`pytest_agentctx.traffic.clients`) hands each request, converted to a
:class:`~.wire.WireRequest`, to :func:`dispatch_sync` or :func:`dispatch_async` with a
function that sends it through the client's own code. The request is offered to the
active handlers of the context that makes it, newest first (:mod:`pytest_agentctx.traffic.scopes`
says which); the first that returns a response answers it, and a request no handler answers
is sent. A handler may send it on itself (:func:`forward_sync` / :func:`forward_async`),
and ask for those offered it after itself (:func:`handlers_before`).

Other tools in the same test come first: a request that an active ``respx`` router has a
route for, below the transport (:mod:`pytest_agentctx.traffic.respx_routes`), is offered
only to the witnesses (handlers that keep a copy of what the test saw), which pass it on
(:func:`answered_by_another_tool` tells them why); then it is sent, and respx answers it.

An ignored request (:mod:`pytest_agentctx.traffic.ignore`) is decided before all of that:
it is offered to no handler, and no scope owns it (it is never refused as unscoped or
late). It is sent when it may reach the network: when every active network guard allows
its host (loopback, the allowed hosts; with no guard active, as while a test records,
every host), or when respx answers it. Else the client gets the error it gets offline,
made by the ``refuse`` function the client passed (its own connection error around a
:class:`~pytest_agentctx.traffic.errors.NetworkBlocked`), and the request is noted to be
listed (:func:`~pytest_agentctx.traffic.ignore.note_not_sent`); no guard counts it, so
the test does not fail for it.
"""

from __future__ import annotations

import contextvars
import inspect
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import ModuleType
from typing import cast

import httpx2

from pytest_agentctx.traffic import ignore, scopes
from pytest_agentctx.traffic.errors import NetworkBlocked
from pytest_agentctx.traffic.respx_routes import RespxRoute
from pytest_agentctx.traffic.transport.wire import Handler, Recorded, WireRequest, WireResponse

#: How a client sends a request to the network through its own code.
SyncSend = Callable[[WireRequest], WireResponse]
AsyncSend = Callable[[WireRequest], Awaitable[WireResponse]]
#: How a client's own connection error is made for an ignored request that may not reach
#: the network (the refusal is its cause).
Refuse = Callable[[WireRequest, NetworkBlocked], BaseException]


@dataclass(slots=True)
class Handling:
    """The request being handled: the library whose objects its handlers take and give,
    and how it goes on to the network (one of the two sends, by the kind of client)."""

    library: ModuleType
    sync_send: SyncSend | None = None
    async_send: AsyncSend | None = None
    #: The respx route that matched it (see :func:`.respx_routes.respx_route`), if any.
    route: RespxRoute | None = None
    #: Whether a handler sent it on to the network.
    forwarded: bool = False
    #: The interceptors of the context that made it, newest first (see :func:`_offered`).
    scoped: tuple[scopes.Member, ...] = ()
    #: Whether the client takes a recorded response in one piece as it was stored
    #: (:class:`.responses.Recorded`, botocore's), from the handler it offers the request
    #: to itself (:attr:`offered_to`), never from one a handler asks.
    takes_recorded: bool = False
    #: The handler the request is offered to now by the dispatch itself.
    offered_to: Handler | None = None

    @property
    def is_async(self) -> bool:
        return self.async_send is not None

    @property
    def elsewhere(self) -> bool:
        """Whether another tool (a respx route) answers it below the transport."""
        return self.route is not None and not self.route.passes_through


_current: contextvars.ContextVar[Handling | None] = contextvars.ContextVar(
    "agentctx_transport", default=None
)


#: Whether the request being sent now was dispatched by a client above the library it goes
#: through (botocore's session above urllib3): the interceptor below sends it unseen.
_above: contextvars.ContextVar[bool] = contextvars.ContextVar("agentctx_above", default=False)


@contextmanager
def sent_below() -> Iterator[None]:
    """While a client sends on a request it dispatched (:func:`dispatch_sync`) through the
    library below it, whose interceptor must not offer it to the handlers a second time."""
    token = _above.set(True)
    try:
        yield
    finally:
        _above.reset(token)


def dispatched_above() -> bool:
    """Whether the request being sent was dispatched already (see :func:`sent_below`)."""
    return _above.get()


def current_handling() -> Handling | None:
    """The request being handled in this context, ``None`` outside a handler."""
    return _current.get()


def _require_current(what: str) -> Handling:
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


def forward_sync(request: WireRequest) -> WireResponse:
    """Send the request being handled to the real network (sync clients)."""
    current = _require_current("forward_sync()")
    send = current.sync_send
    if send is None:
        raise RuntimeError("forward_sync() called for an async client; use forward_async()")
    current.forwarded = True
    return send(request)


async def forward_async(request: WireRequest) -> WireResponse:
    """Send the request being handled to the real network (async clients)."""
    current = _require_current("forward_async()")
    send = current.async_send
    if send is None:
        raise RuntimeError("forward_async() called for a sync client; use forward_sync()")
    current.forwarded = True
    return await send(request)


def handlers_before(handler: Handler) -> list[Handler]:
    """The handlers offered a request after ``handler``, newest first: those started
    before it in its scope that are still active (see
    :class:`~pytest_agentctx.traffic.transport.Interceptor`); empty when ``handler`` is not
    offered requests here. Inside a handler, those the request being handled is offered
    after it; for a request another tool answers (:func:`answered_by_another_tool`), only
    the witnesses among them, as only they are offered it.

    A handler that answers a request as if it were not there (a recorder) asks them in
    this order, then forwards what none of them answers.
    """
    current = _current.get()
    if current is not None:
        scoped = current.scoped
    else:
        offered = scopes.offered()
        scoped = offered if isinstance(offered, tuple) else ()
    for position, member in enumerate(scoped):
        if member.handler == handler:
            older = scoped[position + 1 :]
            if answered_by_another_tool():
                return [m.handler for m in older if m.witness]
            return [m.handler for m in older]
    return []


def _offered(current: Handling, request: WireRequest) -> list[Handler]:
    """The handlers to offer ``request``, newest first: those of the context that made
    it, only the witnesses among them when another tool answers it. Raises
    :class:`~pytest_agentctx.traffic.errors.UnscopedRequest` when no scope owns it (see
    :func:`.scopes.refusal`), or when it is late: made by work of a scope that ended (see
    :func:`.scopes.late_refusal`)."""
    offered = scopes.offered()
    if offered is None:
        raise scopes.refusal(request)
    if isinstance(offered, scopes.Ended):
        raise scopes.late_refusal(request, offered)
    current.scoped = offered
    if current.elsewhere:
        return [m.handler for m in offered if m.witness]
    return [m.handler for m in offered]


def _answered(current: Handling, response: WireResponse | None) -> WireResponse | None:
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


#: The answers known not to be awaitable, found so without asking.
_NOT_AWAITABLE = (httpx2.Response, Recorded)


def _dispatch_sync(
    current: Handling, request: WireRequest, handlers: list[Handler]
) -> WireResponse | None:
    for handler in handlers:
        current.offered_to = handler
        response = handler(request)
        # (an httpx2 response, the usual answer, or a recording is known not to be awaitable)
        if type(response) not in _NOT_AWAITABLE and inspect.isawaitable(response):
            close = getattr(response, "close", None)
            if close is not None:
                close()
            raise TypeError(
                f"The interceptor handler {handler!r} returned an awaitable for a request "
                "made by a sync client; give sync clients a handler that returns a response."
            )
        if response is not None:
            return cast("WireResponse", response)
    return None


async def _dispatch_async(request: WireRequest, handlers: list[Handler]) -> WireResponse | None:
    for handler in handlers:
        response = handler(request)
        if inspect.isawaitable(response):
            response = await response
        if response is not None:
            return response
    return None


def _not_sent(request: WireRequest, rule: ignore.IgnoreRule) -> NetworkBlocked:
    """The refusal of an ignored request that may not reach the network, noted to be listed."""
    from pytest_agentctx.redaction.active import active

    where = "agent_ignore_hosts" if rule.source == ignore.SESSION_SOURCE else rule.source
    text = f"{request.method} {request.url} (ignored by {rule.entry!r} of {where})"
    message = (
        f"pytest-agentctx did not send {text}: an ignored request is never recorded nor "
        "replayed, and while a test replays it reaches only loopback and the allowed hosts. "
        "The client gets the error it gets offline; the test does not fail for it. To send "
        f"it while replaying, allow its host too: agent_allowed_hosts = {request.url.host} "
        f"(or @pytest.mark.agent(allowed_hosts=[{request.url.host!r}]))."
    )
    redactor = active()
    if redactor is not None:
        text, message = redactor.text(text), redactor.text(message)
    ignore.note_not_sent(text)
    return NetworkBlocked(message)


def _ignored(request: WireRequest, route: RespxRoute | None) -> NetworkBlocked | bool:
    """For a request :mod:`~pytest_agentctx.traffic.ignore` ignores: ``True`` when it may
    be sent (respx answers it, or every active guard allows its host), else its refusal.
    ``False`` for any other request."""
    if not ignore.active():
        return False
    url = request.url
    rule = ignore.matching(url.host, url.path)
    if rule is None:
        return False
    if route is not None and not route.passes_through:
        return True
    from pytest_agentctx.traffic.cassettes.guards import active_guards

    if all(guard.allows(url.host) for guard in active_guards()):
        return True
    return _not_sent(request, rule)


def _refusal(request: WireRequest, blocked: NetworkBlocked, refuse: Refuse | None) -> BaseException:
    error = blocked if refuse is None else refuse(request, blocked)
    if error is not blocked:
        error.__cause__ = blocked
    return error


def dispatch_sync(
    request: WireRequest,
    send: SyncSend,
    *,
    library: ModuleType = httpx2,
    route: RespxRoute | None = None,
    refuse: Refuse | None = None,
    takes_recorded: bool = False,
) -> WireResponse:
    """Handle a request of a sync client, its body read: the active handlers are offered
    it, as an object of ``library`` (``httpx2``, or ``httpx`` for its own requests), and
    answer it with responses of that library. ``send`` sends it to the network through the
    client's own code (for a client other than httpx, converting the request back, and its
    response to an ``httpx2`` one, streamed); it is used when a handler forwards the request
    (:func:`forward_sync`) or none answers it. ``route`` is the respx route it matched.
    ``refuse`` makes the client's connection error for an ignored request that may not
    reach the network (by default the :class:`NetworkBlocked` itself is raised).
    ``takes_recorded``: the client reads a :class:`.responses.Recorded` too (see
    :func:`.responses.recorded_response`)."""
    ignored = _ignored(request, route)
    if ignored is True:
        return send(request)
    if isinstance(ignored, NetworkBlocked):
        raise _refusal(request, ignored, refuse)
    current = Handling(library, sync_send=send, route=route, takes_recorded=takes_recorded)
    token = _current.set(current)
    try:
        handlers = _offered(current, request)
        response = _answered(current, _dispatch_sync(current, request, handlers))
    finally:
        _current.reset(token)
    return response if response is not None else send(request)


async def dispatch_async(
    request: WireRequest,
    send: AsyncSend,
    *,
    library: ModuleType = httpx2,
    route: RespxRoute | None = None,
    refuse: Refuse | None = None,
) -> WireResponse:
    """:func:`dispatch_sync` for a request of an async client."""
    ignored = _ignored(request, route)
    if ignored is True:
        return await send(request)
    if isinstance(ignored, NetworkBlocked):
        raise _refusal(request, ignored, refuse)
    current = Handling(library, async_send=send, route=route)
    token = _current.set(current)
    try:
        handlers = _offered(current, request)
        response = _answered(current, await _dispatch_async(request, handlers))
    finally:
        _current.reset(token)
    return response if response is not None else await send(request)


def _older_witnesses(current: Handling, handler: Handler) -> list[Handler]:
    for position, member in enumerate(current.scoped):
        if member.handler == handler:
            return [m.handler for m in current.scoped[position + 1 :] if m.witness]
    return []


def _as_another_tools(current: Handling, answered: WireResponse) -> Handling:
    """The handling of a request ``answered`` already, offered to witnesses as another
    tool's: what they forward it to gives back ``answered``."""

    def send_sync(_: WireRequest) -> WireResponse:
        return answered

    async def send_async(_: WireRequest) -> WireResponse:
        return answered

    return Handling(
        current.library,
        sync_send=None if current.is_async else send_sync,
        async_send=send_async if current.is_async else None,
        route=RespxRoute(None, None, None),
        scoped=current.scoped,
    )


def witnessed_sync(handler: Handler, request: WireRequest, answered: WireResponse) -> WireResponse:
    """For a handler that answers a request as another tool in the test would (an
    in-process fake server, never recorded): offer it, with its answer, to the witnesses
    started before ``handler`` (a cassette's exchange log), which keep their copy and pass
    it on; returns the response to give the client (``answered``, or a witness's copy of
    it). Witnesses started after ``handler`` were offered the request before it already."""
    current = _current.get()
    witnesses = _older_witnesses(current, handler) if current is not None else []
    if current is None or not witnesses:
        return answered
    token = _current.set(_as_another_tools(current, answered))
    try:
        response = witnesses[0](request)
    finally:
        _current.reset(token)
    if inspect.isawaitable(response):
        raise TypeError(f"The witness {witnesses[0]!r} returned an awaitable for a sync client.")
    return response if response is not None else answered


async def witnessed_async(
    handler: Handler, request: WireRequest, answered: WireResponse
) -> WireResponse:
    """:func:`witnessed_sync` for a request of an async client."""
    current = _current.get()
    witnesses = _older_witnesses(current, handler) if current is not None else []
    if current is None or not witnesses:
        return answered
    token = _current.set(_as_another_tools(current, answered))
    try:
        response = witnesses[0](request)
        if inspect.isawaitable(response):
            response = await response
    finally:
        _current.reset(token)
    return response if response is not None else answered
