"""Which active ``respx`` router has a route for a request, at the layer below the
transports: respx is the other tool that answers requests in a test, and the httpx client
(:mod:`pytest_agentctx.traffic.clients.httpx`) asks before offering a request to the
handlers. Without respx imported, or no router active, it costs one dictionary look-up.

respx is not a dependency: its objects are read through ``getattr``, typed ``object``.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_agentctx.traffic.transport.wire import WireRequest


@dataclass(frozen=True)
class RespxRoute:
    """The respx route a request matched, with its router and the request respx matched."""

    router: object
    route: object
    request: object  # the httpx.Request respx sees

    @property
    def passes_through(self) -> bool:
        return bool(getattr(self.route, "is_pass_through", False))

    def note_pass_through(self) -> None:
        """Count the request as a call of its pass-through route, as respx does when it
        passes one on (``assert_all_called`` then holds when a handler answered it)."""
        record = getattr(self.router, "record", None)
        if record is not None:
            record(self.request, response=None, route=self.route)


def respx_route(request: WireRequest, core: str) -> RespxRoute | None:
    """The route of an active respx router that matches ``request`` at the layer below
    the transports that send through ``core`` (``httpcore2``), where respx would answer
    it; ``None`` when there is none.

    respx keeps its mockers in ``respx.mocks.Mocker.registry``: each patches some
    ``targets`` (``httpcore._sync.connection_pool.ConnectionPool``...) while routers are
    registered with it. respx's default mocker (``using="httpcore"``) patches ``httpcore``,
    below ``httpx``'s transports; pytest-httpx2's (``using="httpcore2"``) patches
    ``httpcore2``, below ``httpx2``'s. respx's ``using="httpx"`` mocker answers in the
    client, before the transport: its requests never reach the handlers.
    """
    mocks = sys.modules.get("respx.mocks")
    if mocks is None:  # respx not imported: nothing to ask
        return None
    registry = getattr(getattr(mocks, "Mocker", None), "registry", None)
    if not registry:
        return None
    prefix = core + "."
    probe: object | None = None
    for mocker in tuple(registry.values()):
        routers = getattr(mocker, "routers", None)
        if not routers:
            continue
        if not any(str(target).startswith(prefix) for target in getattr(mocker, "targets", ())):
            continue
        if probe is None:
            probe = _as_httpx_request(request)
        for router in tuple(routers):
            route = _first_match(router, probe)
            if route is not None:
                return RespxRoute(router, route, probe)
    return None


def _as_httpx_request(request: WireRequest) -> object:
    """``request`` as the ``httpx.Request`` respx matches (respx builds one from the
    ``httpcore(2)`` request the same way: method, URL, raw headers, body)."""
    httpx = sys.modules.get("httpx")
    if httpx is None or isinstance(request, httpx.Request):
        return request
    probe = httpx.Request(
        request.method,
        str(request.url),
        headers=request.headers.raw,
        stream=httpx.ByteStream(bytes(request.content or b"")),
    )
    probe.read()
    return probe


def _first_match(router: object, request: object) -> object | None:
    """The first route of ``router`` whose pattern matches ``request`` (respx stops at it
    too), or ``None``. Patterns only: no side effect runs and no call is recorded here;
    respx does both when it answers the request itself."""
    routes: tuple[object, ...] = tuple(getattr(router, "routes", ()))
    for route in routes:
        pattern = getattr(route, "pattern", None)
        if not pattern or pattern.match(request):
            return route
    return None
