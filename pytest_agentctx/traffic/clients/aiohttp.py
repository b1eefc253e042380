"""``aiohttp.ClientSession`` traffic through the interceptors, as ``httpx2`` requests.

Where it patches, and why
-------------------------
``ClientSession._request`` is the whole exchange: it builds one ``ClientRequest`` per HTTP
request, follows redirects, fills the cookie jar and applies ``raise_for_status``. For each
request of that loop it asks the connector for a connection
(``BaseConnector.connect(req, traces=, timeout=)``), sets the response parameters of the
connection's protocol, sends the request (``ClientRequest.send(conn)``) and starts the
response it got (``ClientResponse.start(conn)``). This module patches the two methods of
that step, below ``_request``:

- ``BaseConnector.connect`` no longer connects: it returns a placeholder connection
  (:class:`_Deferred`) that keeps what a real connection would have been given;
- ``ClientRequest.send`` given that placeholder converts the request to an ``httpx2``
  request (its body read) and hands it to
  :func:`~pytest_agentctx.traffic.transport.dispatch.dispatch_async`. A handler's ``httpx2``
  response comes back as a ``ClientResponse`` (of the session's response class) that is
  already started. When a handler forwards the request (a cassette that records) or none
  answers it, the placeholder connects for real and the request goes out through
  aiohttp's own ``send`` and ``start``.

So every HTTP request is one interaction, in the order the session sends them: aiohttp's
own code follows a redirect (one interaction per hop), stores the cookies a response sets
and raises for an error status, on replay as live. ``vcrpy`` patches ``_request`` itself and
replays a redirect chain on its own; this module does not.

``aioresponses`` patches ``ClientSession._request``, above these two methods, so the two
never patch the same attribute and may start and stop in any order: a request aioresponses
mocks is answered by it and never reaches the cassette; one it passes through reaches
``_request``, then this module. A WebSocket handshake (a request with an ``Upgrade`` header)
and a connector that overrides ``connect`` are left to aiohttp (not recorded; refused by
the socket guard on replay).

Bodies and streams
------------------
A live response is read raw (the connection's ``auto_decompress`` turned off), as the
``httpx2`` transport reads it, so a cassette stores what it stores of ``httpx2`` traffic: a
compressed body decompressed. The user's response decodes it when the session asked for
``auto_decompress`` (the default), so the code under test sees the body the server's
response gives it. Its ``content`` is an aiohttp ``StreamReader`` that pulls the next chunk
of the ``httpx2`` stream when it runs dry (:class:`_PulledStream`): ``readline()``,
``iter_chunked()``, ``iter_any()``, ``read()``, ``text()`` and ``json()`` work as on a live
response, a replayed stream keeps its recorded chunks, and a recorded stream is teed as the
code reads it. Releasing or closing the response closes the ``httpx2`` stream, so a
response cut short is recorded as far as it was read.

The module is named ``aiohttp`` after the library; its own ``import aiohttp`` is absolute
(``from __future__ import annotations`` has no bearing on it) and names the library, never
this module, as long as this folder itself is not on ``sys.path``.
"""

from __future__ import annotations

import asyncio
import functools
import http
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import aiohttp
import httpx2
from aiohttp import ClientRequest, ClientResponse, ClientTimeout, hdrs, streams
from aiohttp.connector import BaseConnector, Connection
from aiohttp.tracing import Trace
from multidict import CIMultiDict, CIMultiDictProxy

from pytest_agentctx.traffic.errors import NetworkBlocked
from pytest_agentctx.traffic.transport.dispatch import dispatch_async
from pytest_agentctx.traffic.transport.responses import as_httpx2
from pytest_agentctx.traffic.transport.wire import WireRequest, WireResponse, raw_headers

#: aiohttp 3.14 made ``stream_writer`` a required argument of ``ClientResponse``; a response
#: whose request was sent has written all it will, so a writer of size 0 stands in for it.
_SENT: dict[str, object] = (
    {"stream_writer": SimpleNamespace(output_size=0)}
    if "stream_writer" in inspect.signature(ClientResponse.__init__).parameters
    else {}
)
#: Where a started response keeps the cookies its ``Set-Cookie`` headers set (aiohttp 3.12+).
_RAW_COOKIES = hasattr(ClientResponse, "_raw_cookie_headers")
#: The line limit of a response's ``StreamReader`` when the session gives none.
_DEFAULT_BUFSIZE = 2**16


# -- requests ------------------------------------------------------------------------


async def to_httpx_request(req: ClientRequest) -> httpx2.Request:
    """The ``httpx2`` request of aiohttp's ``req``, its body read (a payload aiohttp can
    send again, as it does to follow a redirect: aiohttp 3.12+ keeps what it read). A body
    aiohttp compresses as it sends it (``compress=``) is read plain, without its
    ``content-encoding``."""
    content = await _body_bytes(req.body)
    headers = raw_headers(req.headers.items(), encoding="utf-8")  # aiohttp sends UTF-8
    if req.compress:  # aiohttp compresses the body as it sends it: the one read is plain
        headers = [(name, value) for name, value in headers if name.lower() != b"content-encoding"]
    return httpx2.Request(req.method, str(req.url), headers=headers, content=content or None)


async def _body_bytes(body: object) -> bytes:
    if isinstance(body, bytes | bytearray | memoryview):
        return bytes(body)
    as_bytes = getattr(body, "as_bytes", None)
    if as_bytes is not None:
        data = await as_bytes()
        return bytes(data)
    value = getattr(body, "_value", None)  # aiohttp before 3.12: BytesPayload and its kin
    if isinstance(value, bytes | bytearray):
        return bytes(value)
    raise TypeError(
        f"pytest-agentctx cannot read the body of an aiohttp request to record it: got a "
        f"{type(body).__name__}, expected bytes or an aiohttp payload with as_bytes() "
        "(aiohttp 3.12 or later). Upgrade aiohttp (pip install -U aiohttp) or send the body "
        "as bytes."
    )


# -- live responses ------------------------------------------------------------------


class _AiohttpBody(httpx2.AsyncByteStream):
    """The body of a live aiohttp response as an ``httpx2`` stream, chunks as they arrive."""

    def __init__(self, response: ClientResponse) -> None:
        self.response = response

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self.response.content.iter_any():
            yield chunk

    def close(self) -> None:
        self.response.release()

    async def aclose(self) -> None:
        self.response.release()


def from_client_response(response: ClientResponse) -> httpx2.Response:
    """A started aiohttp response as an ``httpx2`` response whose stream reads its body."""
    version = response.version or aiohttp.HttpVersion11
    return httpx2.Response(
        response.status,
        headers=list(response.raw_headers),
        stream=_AiohttpBody(response),
        extensions={
            "reason_phrase": (response.reason or "").encode("latin-1", "replace"),
            "http_version": f"HTTP/{version.major}.{version.minor}".encode(),
        },
    )


# -- responses given to the code under test ----------------------------------------------


class _NoConnection:
    """The protocol a ``StreamReader`` asks to pause and resume: there is none to ask."""

    _reading_paused = False
    connected = True

    def pause_reading(self) -> None:
        pass

    def resume_reading(self, resume_parser: bool = True) -> None:
        pass


class _PulledStream(streams.StreamReader):
    """aiohttp's ``StreamReader`` (its whole reading API, with aiohttp's behaviour) fed from
    an async iterator of chunks: where it would wait for the network, it takes the next
    chunk (the end of the iterator is its end of file). A reader therefore sees the chunks
    one by one, as they were recorded or as they arrive."""

    def __init__(
        self, chunks: AsyncIterator[bytes], limit: int, loop: asyncio.AbstractEventLoop
    ) -> None:
        super().__init__(_NoConnection(), limit, loop=loop)  # type: ignore[arg-type]
        self._chunks = chunks

    async def _wait(self, func_name: str) -> None:
        try:
            chunk = await anext(self._chunks)
        except StopAsyncIteration:
            self.feed_eof()
        else:
            self.feed_data(chunk)


class _Answered(ClientResponse):
    """A response this module made from an ``httpx2`` response: already started, and
    closing it closes that response's stream (which records a teed one)."""

    _agentctx_stream: httpx2.Response | None = None

    async def start(self, connection: Connection) -> ClientResponse:
        return self

    def release(self) -> Any:  # aiohttp's own: None, or a no-op awaitable before 3.11
        self._agentctx_close()
        return super().release()

    def close(self) -> None:
        self._agentctx_close()
        super().close()

    def _agentctx_close(self) -> None:
        response, self._agentctx_stream = self._agentctx_stream, None
        if response is not None and not response.is_closed:
            close = getattr(response.stream, "close", None)
            if close is not None:
                close()


_answered_classes: dict[type[ClientResponse], type[ClientResponse]] = {}


def _answered_class(base: type[ClientResponse]) -> type[ClientResponse]:
    """:class:`_Answered` over the session's response class (``isinstance`` holds)."""
    if base is ClientResponse or issubclass(base, _Answered):
        return _Answered
    cls = _answered_classes.get(base)
    if cls is None:
        cls = _answered_classes[base] = type(f"Answered{base.__name__}", (_Answered, base), {})
    return cls


def to_client_response(
    response: httpx2.Response,
    req: ClientRequest,
    *,
    decompress: bool = True,
    read_bufsize: int | None = None,
) -> ClientResponse:
    """The started aiohttp response to ``req`` that ``response`` (an ``httpx2`` response)
    gives: status, reason, headers, cookies, and a ``content`` stream that reads the body
    (decoded from its ``content-encoding`` when ``decompress``, as aiohttp's
    ``auto_decompress`` does)."""
    cls = _answered_class(req.response_class or ClientResponse)
    loop = req.loop
    resp = cls(
        req.method,
        req.original_url,
        writer=None,
        continue100=None,
        timer=None,  # type: ignore[arg-type]
        request_info=req.request_info,
        traces=getattr(req, "_traces", []),
        loop=loop,
        session=getattr(req, "_session", None),  # type: ignore[arg-type]
        **_SENT,  # type: ignore[arg-type]  # a stand-in writer
    )
    raw = [(bytes(name), bytes(value)) for name, value in response.headers.raw]
    headers = CIMultiDict(
        (name.decode("utf-8", "surrogateescape"), value.decode("utf-8", "surrogateescape"))
        for name, value in raw
    )
    resp._closed = False
    resp.version = aiohttp.HttpVersion11
    resp.status = response.status_code
    resp.reason = _reason(response)
    resp._headers = CIMultiDictProxy(headers)
    resp._raw_headers = tuple(raw)
    cookies = tuple(headers.getall(hdrs.SET_COOKIE, ()))
    if _RAW_COOKIES:
        resp._raw_cookie_headers = cookies or None
    else:  # aiohttp before 3.12 loads them when the response starts
        for cookie in cookies:
            resp.cookies.load(cookie)
    resp.content = _PulledStream(
        _body_chunks(response, decompress), read_bufsize or _DEFAULT_BUFSIZE, loop
    )
    resp.content.on_eof(resp._response_eof)
    resp._agentctx_stream = response  # type: ignore[attr-defined]  # an _Answered
    return resp


async def _body_chunks(response: httpx2.Response, decompress: bool) -> AsyncIterator[bytes]:
    """The body of ``response``, decoded or as sent. A response a handler built with its
    ``content`` is read already: its ``stream`` still holds the bytes as sent."""
    try:
        content = response.content
    except httpx2.ResponseNotRead:  # a stream: read it now, chunk by chunk
        chunks = response.aiter_bytes() if decompress else response.aiter_raw()
        async for chunk in chunks:
            yield chunk
        return
    if not decompress and isinstance(response.stream, httpx2.ByteStream):
        async for chunk in response.stream:
            yield chunk
        return
    yield content


def _reason(response: httpx2.Response) -> str:
    phrase = response.extensions.get("reason_phrase")
    if isinstance(phrase, bytes) and phrase:
        return phrase.decode("latin-1")
    try:
        return http.HTTPStatus(response.status_code).phrase
    except ValueError:
        return ""


# -- the patches ---------------------------------------------------------------------


class _Params:
    """Stands in for the protocol of a connection not made yet: keeps the response
    parameters ``ClientSession._request`` sets on it."""

    def __init__(self) -> None:
        self.params: dict[str, Any] = {}

    def set_response_params(self, **params: Any) -> None:  # aiohttp's, passed on as they are
        self.params = params


@dataclass
class _Deferred:
    """What the patched ``BaseConnector.connect`` returns: the connection to make if the
    request goes to the network, with what ``connect`` was given."""

    connector: BaseConnector
    req: ClientRequest
    traces: list[Trace]
    timeout: ClientTimeout
    connection: Connection | None = None

    def __post_init__(self) -> None:
        self.protocol = _Params()
        self.transport = self  # aiohttp before 3.10 asserts a connection has a transport

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()

    def release(self) -> None:
        if self.connection is not None:
            self.connection.release()


_Connect = Callable[..., Awaitable[Connection]]
_Send = Callable[[ClientRequest, Connection], Awaitable[ClientResponse]]


@dataclass(frozen=True)
class _Originals:
    connect: _Connect
    send: _Send


_originals: list[_Originals] = []


async def _connect(
    self: BaseConnector,
    req: ClientRequest,
    traces: list[Trace],
    timeout: ClientTimeout,  # noqa: ASYNC109 (BaseConnector.connect's own signature)
) -> Connection | _Deferred:
    original: _Connect = _originals[0].connect if _originals else BaseConnector.connect
    if hdrs.UPGRADE in req.headers:  # a WebSocket handshake: aiohttp's own, untouched
        return await original(self, req, traces=traces, timeout=timeout)
    return _Deferred(self, req, traces, timeout)


async def _send(self: ClientRequest, conn: Connection | _Deferred) -> ClientResponse:
    original: _Send = _originals[0].send if _originals else ClientRequest.send
    if not isinstance(conn, _Deferred):
        return await original(self, conn)
    params = conn.protocol.params
    request = await to_httpx_request(self)
    answer = await dispatch_async(
        request, functools.partial(_send_for_real, self, conn, original), refuse=_refuse(self)
    )
    bufsize = params.get("read_bufsize")
    return to_client_response(
        as_httpx2(answer),
        self,
        decompress=bool(params.get("auto_decompress", True)),
        read_bufsize=bufsize if isinstance(bufsize, int) else None,
    )


def _refuse(req: ClientRequest) -> Callable[[WireRequest, NetworkBlocked], BaseException]:
    """What aiohttp raises when the guard refuses its connection, for ``req``."""

    def refuse(_: WireRequest, blocked: NetworkBlocked) -> BaseException:
        return aiohttp.ClientConnectorError(req.connection_key, blocked)

    return refuse


async def _send_for_real(
    req: ClientRequest, deferred: _Deferred, send: _Send, request: WireRequest
) -> WireResponse:
    """Send ``req`` as ``ClientSession._request`` would have: connect, set the response
    parameters (raw bodies: the ``httpx2`` response decodes them), send, start."""
    connect: _Connect = _originals[0].connect if _originals else BaseConnector.connect
    try:
        conn = await connect(
            deferred.connector, req, traces=deferred.traces, timeout=deferred.timeout
        )
    except TimeoutError as exc:
        raise aiohttp.ConnectionTimeoutError(f"Connection timeout to host {req.url}") from exc
    deferred.connection = conn
    protocol = conn.protocol
    assert protocol is not None  # a connection just made has one
    protocol.set_response_params(**{**deferred.protocol.params, "auto_decompress": False})
    try:
        resp = await send(req, conn)
        try:
            await resp.start(conn)
        except BaseException:
            resp.close()
            raise
    except BaseException:
        conn.close()
        raise
    return from_client_response(resp)


def install() -> None:
    """Patch aiohttp (an interceptor has started)."""
    if _originals:
        return
    _originals.append(_Originals(BaseConnector.connect, ClientRequest.send))
    BaseConnector.connect = _connect  # type: ignore[method-assign,assignment]
    ClientRequest.send = _send  # type: ignore[method-assign]


def uninstall() -> None:
    """Put aiohttp back as it was (the last interceptor has stopped)."""
    if not _originals:
        return
    originals = _originals.pop()
    BaseConnector.connect = originals.connect  # type: ignore[method-assign,assignment]
    ClientRequest.send = originals.send  # type: ignore[method-assign,assignment]
