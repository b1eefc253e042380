"""One HTTP exchange (a request and its response), as capture reads it, and the live recorder.

An :class:`Exchange` holds its bodies in the stored form of the cassettes (see
:mod:`pytest_agentctx.traffic.cassettes.body`): ``{"json": ...}``, ``{"sse": [events]}``,
``{"text": ...}``, ``{"base64": ...}``, ``{"eventstream": [messages]}`` or ``None``. A
cassette's interactions convert to exchanges for free; :class:`TrafficRecorder` builds
them from live traffic.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from pytest_agentctx.traffic import transport
from pytest_agentctx.traffic.cassettes.body import (
    Body,
    BodyTooLarge,
    body_bytes,
    decompress,
    encode_body,
)
from pytest_agentctx.traffic.cassettes.fileformat import Interaction
from pytest_agentctx.traffic.roles import DEFAULT_ROLE, current_role
from pytest_agentctx.traffic.transport import WireRequest, WireResponse


@dataclass(frozen=True)
class Exchange:
    """One request a test made and the response it got.

    ``request`` and ``response`` are bodies in the cassettes' stored form. ``origin`` says
    where the exchange came from (``path#index`` for a cassette, ``live#index``). ``role``
    is the role the request was made under (:mod:`pytest_agentctx.traffic.roles`):
    capture builds the agent's runs of the ``"agent"`` exchanges only.
    """

    method: str
    url: str
    status: int
    request: Body = None
    response: Body = None
    origin: str = ""
    role: str = DEFAULT_ROLE

    @classmethod
    def from_interaction(cls, interaction: Interaction) -> Exchange:
        """The exchange of a cassette's recorded interaction."""
        return cls(
            interaction.method,
            interaction.url,
            interaction.status,
            interaction.request_body,
            interaction.response_body,
            interaction.origin,
            interaction.role,
        )

    @property
    def path(self) -> str:
        """The URL's path (``/v1/chat/completions``)."""
        return urlsplit(self.url).path

    def request_json(self) -> Any:
        """The request body as JSON (as :func:`json.loads` gives it), or ``None`` when it
        is not JSON."""
        return _json_of(self.request)

    def response_json(self) -> Any:
        """The response body as JSON (as :func:`json.loads` gives it), or ``None`` when it
        is not JSON."""
        return _json_of(self.response)

    def describe(self) -> str:
        """``POST https://... -> 200``, for messages."""
        return f"{self.method} {self.url} -> {self.status}"


def _json_of(body: Body) -> Any:
    if body is None:
        return None
    if "json" in body:
        return body["json"]
    if "sse" in body or "eventstream" in body:
        return None
    try:
        return json.loads(body_bytes(body))
    except (ValueError, UnicodeDecodeError):
        return None


def _as_exchange(item: Exchange | Interaction) -> Exchange:
    return item if isinstance(item, Exchange) else Exchange.from_interaction(item)


#: Makes the exchange of a response from the bytes of its body the client read.
_Make = Callable[[WireResponse, bytes], Exchange]


def _maker(method: str, url: str, request_body: Body, slot: int) -> _Make:
    """How the exchange of the request ``method url`` in ``slot`` is made of its
    response and the bytes read of its body (decoded as the client got them), with the
    role the request is made under now."""
    role = current_role()

    def make(response: WireResponse, data: bytes) -> Exchange:
        encoding = response.headers.get("content-encoding")
        try:
            decoded, ok = decompress(data, encoding)
        except BodyTooLarge:  # past the size limit: no body kept
            decoded, ok = b"", False
        body = encode_body(decoded, response.headers.get("content-type")) if ok else None
        return Exchange(method, url, response.status_code, request_body, body, f"live#{slot}", role)

    return make


class TrafficRecorder:
    """An interceptor handler that keeps a copy of every exchange, in request order.

    A request goes to the handlers that were active before the recorder (a cassette, the
    fake model) as it would without it; one that none of them answers is forwarded to the
    network through the client's own transport. Each response's body is copied as the
    client reads it, so streams pass through unchanged; an exchange joins :attr:`exchanges`
    once its response is closed, or as far as the client read it while it is open (an MCP
    server that a client keeps running answers its last message on a stream that stays
    open after the test looked at its context). It witnesses the requests another tool in
    the test (a ``respx`` route) answers too: they reach that tool and are kept like the
    others.
    """

    def __init__(self) -> None:
        self._slots: list[Exchange | None] = []
        #: The responses not closed yet, by slot: how to read what the client read of
        #: each, and how to make its exchange of those bytes.
        self._open: dict[int, tuple[Callable[[], bytes | None], Callable[[bytes], Exchange]]] = {}
        self._lock = threading.Lock()
        self.interceptor = transport.Interceptor(self.handle, witness=True)

    @property
    def exchanges(self) -> list[Exchange]:
        """The complete exchanges so far, in the order their requests were made."""
        with self._lock:
            slots = list(self._slots)
            still_open = dict(self._open)
        kept: list[Exchange] = []
        for number, slot in enumerate(slots):
            if slot is None and number in still_open:
                read_so_far, make = still_open[number]
                data = read_so_far()
                slot = None if data is None else make(data)
            if slot is not None:
                kept.append(slot)
        return kept

    def start(self) -> None:
        """Record from now on."""
        self.interceptor.start()

    def stop(self) -> None:
        """Stop recording (what was recorded stays)."""
        self.interceptor.stop()

    def handle(self, request: WireRequest) -> WireResponse | Awaitable[WireResponse]:
        """Answer ``request`` as the other handlers (or the network) do, keeping a copy."""
        with self._lock:
            slot = len(self._slots)
            self._slots.append(None)
        raw = bytes(request.content or b"")
        try:
            request_body: Body = {"json": json.loads(raw)} if raw else None
        except ValueError:
            request_body = encode_body(raw, request.headers.get("content-type"))
        method = request.method.upper()
        url = str(request.url)
        # The handlers started before this one answer as if the recorder were not there.
        handlers = transport.handlers_before(self.handle)

        def keep(response: WireResponse) -> WireResponse:
            return self._keep(response, slot, _maker(method, url, request_body, slot))

        if transport.is_async_request():

            async def answer_async() -> WireResponse:
                for handler in handlers:
                    response = handler(request)
                    if isinstance(response, Awaitable):
                        response = await response
                    if response is not None:
                        return keep(response)
                return keep(await transport.forward_async(request))

            return answer_async()
        for handler in handlers:
            answer = handler(request)
            if isinstance(answer, Awaitable):
                raise TypeError(
                    f"The interceptor handler {handler!r} returned an awaitable for a request "
                    "made by a sync client; give sync clients a handler that returns a response."
                )
            if answer is not None:
                return keep(answer)
        return keep(transport.forward_sync(request))

    def _keep(self, response: WireResponse, slot: int, make: _Make) -> WireResponse:
        """``response`` passed through, its exchange kept in ``slot`` when it is closed,
        and read as far as it went while it is open."""

        def store(data: bytes, complete: bool) -> None:
            exchange = make(response, data)
            with self._lock:
                self._slots[slot] = exchange
                self._open.pop(slot, None)

        teed = transport.tee_response(response, store)
        read_so_far = getattr(teed.stream, "read_so_far", None)
        if read_so_far is not None:
            with self._lock:
                if self._slots[slot] is None:
                    self._open[slot] = (read_so_far, lambda data: make(response, data))
        return teed
