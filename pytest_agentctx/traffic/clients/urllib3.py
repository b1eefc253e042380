"""Interception of ``urllib3`` (and so of ``requests``, which sends through it).

The patch point is :meth:`urllib3.connectionpool.HTTPConnectionPool._make_request`: the one
method that sends one HTTP request on one connection and returns its response. Everything
urllib3 does around a request stays urllib3's own, in ``urlopen`` above it: retries (on
errors and on status, each retry a request of its own), redirects (``PoolManager`` follows
them, ``requests`` follows them itself), the pool's connections and their release. Each
request therefore becomes one interaction of the cassette, as it went on the wire.

The other candidates do worse:

* ``HTTPConnectionPool.urlopen`` sits above the retries and the redirects of a pool: an
  answered request would skip both, and a recorded interaction would stand for several
  requests (or none of a redirect's second hop).
* The connection classes (``HTTPConnection.request``/``getresponse``, where ``vcrpy``
  patches) sit below ``_make_request``, where an HTTPS connection is already opened
  (``_validate_conn`` connects before the request is known): answering there needs a
  connection that pretends to be connected, and vcrpy's stubs show how much of
  ``http.client`` that takes.

The request, its body read (a file or an iterable body is read once, from where it stands,
as urllib3 would send it), is handed to
:func:`~pytest_agentctx.traffic.transport.dispatch.dispatch_sync` as an ``httpx2`` request,
so the cassettes and the fake model handle it as any other. Going on to the network
(:func:`_send`) calls urllib3's own ``_make_request`` with the body read and takes the
response unread and undecoded: its raw bytes stream into an ``httpx2`` response, one HTTP
chunk at a time, where the cassette tees them.

The ``httpx2`` response a handler gives (:func:`to_urllib3`) becomes what
``conn.getresponse()`` makes: a :class:`urllib3.response.HTTPResponse` over a real
:class:`http.client.HTTPResponse`, whose bytes come from the ``httpx2`` stream as it is read.
So urllib3 (and requests above it) reads, decodes and releases it as a response from a
socket: ``preload_content=False`` and ``stream=True`` read it chunk by chunk
(``read_chunked``), ``Content-Encoding: gzip`` is undone by urllib3 as the real response
would be, ``_original_response.msg`` gives requests its cookies. A live response keeps its
status line, headers and framing as the server sent them. A replayed one comes from a
cassette, which stores bodies decoded and drops ``content-encoding``, ``content-length``
and ``transfer-encoding``: it is served decoded (the code reads the same text), with the
length of its body, and a stream (no length) as ``Transfer-Encoding: chunked``, one chunk
per recorded event, as the server sent it. Its reason phrase is the standard one of its
status (a cassette keeps no reason phrase).

Other tools: ``responses`` (and ``requests-mock``) answer in ``requests``' adapter, before
urllib3: their requests never reach the handlers. ``vcrpy`` (and pytest-recording) swaps the
connection classes below this patch: a request the cassette answers never reaches vcrpy;
one that goes on to the network (recording) passes through vcrpy's connection, which
records it (or replays it) too.

Needs urllib3 2 (the ``_make_request`` that returns urllib3's response):
:mod:`pytest_agentctx.traffic.clients` registers this patch only then.
"""

from __future__ import annotations

import http.client
import io
from collections.abc import AsyncIterable, Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

import httpx2
from urllib3.connection import HTTPConnection
from urllib3.connectionpool import HTTPConnectionPool
from urllib3.exceptions import NewConnectionError
from urllib3.response import BaseHTTPResponse, HTTPResponse
from urllib3.util.retry import Retry

from pytest_agentctx.traffic.errors import NetworkBlocked
from pytest_agentctx.traffic.transport.dispatch import dispatch_sync, dispatched_above
from pytest_agentctx.traffic.transport.responses import as_httpx2
from pytest_agentctx.traffic.transport.wire import (
    CLIENT_EXTENSION,
    ClientHeaders,
    WireRequest,
    WireResponse,
    raw_headers,
)

if TYPE_CHECKING:
    from urllib3._base_connection import BaseHTTPConnection

#: How much of a live response without chunks is read at once: what arrived, at most this.
_READ_SIZE = 64 * 1024
#: Statuses whose responses have no body (http.client reads none).
_NO_BODY = frozenset({204, 304})
_DEFAULT_PORTS = {"http": 80, "https": 443}
#: The libraries above urllib3 a request names as its client (in a miss message), by the
#: first word of their ``User-Agent``; any other request is urllib3's own.
_CLIENTS = {b"python-requests": "requests", b"Boto3": "botocore", b"Botocore": "botocore"}

#: The parameters of ``_make_request`` after ``headers``, in order.
_POSITIONAL = (
    "retries",
    "timeout",
    "chunked",
    "response_conn",
    "preload_content",
    "decode_content",
    "enforce_content_length",
)

#: ``HTTPConnectionPool._make_request``: (pool, conn, method, url, body=, headers=, ...).
_MakeRequest = Callable[..., BaseHTTPResponse]

#: The ``_make_request`` this module replaced, while installed.
_original: _MakeRequest | None = None


def install() -> None:
    """Patch urllib3's pools (done by the interceptor when its first handler starts)."""
    global _original
    if _original is None:
        _original = vars(HTTPConnectionPool)["_make_request"]
        setattr(HTTPConnectionPool, "_make_request", _make_request)  # noqa: B010


def uninstall() -> None:
    """Put urllib3's own ``_make_request`` back."""
    global _original
    if _original is not None:
        setattr(HTTPConnectionPool, "_make_request", _original)  # noqa: B010
        _original = None


def _make_request(
    pool: HTTPConnectionPool,
    conn: BaseHTTPConnection,
    method: str,
    url: str,
    body: object = None,
    headers: ClientHeaders | None = None,
    *rest: object,
    **options: Any,  # urllib3's own keyword arguments, passed on as they are
) -> HTTPResponse:
    """``HTTPConnectionPool._make_request`` while an interceptor is active."""
    options.update(zip(_POSITIONAL, rest, strict=False))
    # (a call that looked the patch up just before uninstall() finds urllib3's own there)
    original: _MakeRequest = _original or vars(HTTPConnectionPool)["_make_request"]
    if dispatched_above():  # botocore's interceptor handles it (see .botocore)
        below = original(pool, conn, method, url, body=body, headers=headers, **options)
        return below  # type: ignore[return-value]  # urllib3's own, an HTTPResponse
    content = body_bytes(body)
    request = request_of(pool, method, url, headers, content)
    live = False

    def send(_: WireRequest) -> WireResponse:
        nonlocal live
        live = True
        return _send(original, pool, conn, method, url, content, headers, options)

    def refuse(_: WireRequest, blocked: NetworkBlocked) -> BaseException:
        # what urllib3 raises when the guard refuses its connection (requests: ConnectionError)
        return NewConnectionError(conn, str(blocked))  # type: ignore[arg-type]

    response = as_httpx2(dispatch_sync(request, send, refuse=refuse))
    return to_urllib3(
        response,
        method=method,
        url=url,
        live=live,
        pool=pool,
        connection=options.get("response_conn"),
        retries=options.get("retries"),
        preload_content=options.get("preload_content", True),
        decode_content=options.get("decode_content", True),
        enforce_content_length=options.get("enforce_content_length", True),
    )


def body_bytes(body: object) -> bytes | None:
    """The request body as urllib3 would send it, in one piece (``None``: no body)."""
    if body is None:
        return None
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode("utf-8")
    read = getattr(body, "read", None)
    parts: Iterable[object]
    if read is not None:
        parts = iter(lambda: read(_READ_SIZE), b"" if _binary(body) else "")
    else:
        try:
            return bytes(memoryview(body))  # type: ignore[arg-type]  # TypeError if not a buffer
        except TypeError:
            parts = body  # type: ignore[assignment]  # an iterable of chunks, as urllib3 takes
    return b"".join(
        part.encode("utf-8") if isinstance(part, str) else bytes(part)  # type: ignore[call-overload]
        for part in parts
    )


def _binary(file: object) -> bool:
    return not isinstance(file, io.TextIOBase) and "b" in getattr(file, "mode", "b")


def request_of(
    pool: HTTPConnectionPool | None,
    method: str,
    url: str,
    headers: ClientHeaders | None,
    content: bytes | None,
) -> httpx2.Request:
    """The ``httpx2`` request of a request ``pool`` sends: ``url`` is its target (a path, or
    a whole URL through a proxy, or without a pool), ``content`` its body read."""
    if pool is not None and not url.startswith(("http://", "https://")):
        host = pool.host or ""
        if ":" in host:  # urllib3 keeps IPv6 addresses without their brackets
            host = f"[{host}]"
        port = pool.port
        if port is not None and port != _DEFAULT_PORTS.get(pool.scheme):
            host = f"{host}:{port}"
        url = f"{pool.scheme}://{host}{url if url.startswith('/') else '/' + url}"
    pairs = raw_headers(headers)  # botocore's names and values are bytes
    return httpx2.Request(
        method,
        parsed_url(url),
        headers=pairs,
        content=content,
        extensions={CLIENT_EXTENSION: client_of(pairs)},
    )


def client_of(pairs: list[tuple[bytes, bytes]]) -> str:
    """The client library that sends a request with the headers ``pairs``, by its
    ``User-Agent`` (``"urllib3"`` when none is known)."""
    return client_of_agent(next((v for k, v in pairs if k.lower() == b"user-agent"), b""))


def client_of_agent(agent: bytes) -> str:
    """The client library whose ``User-Agent`` is ``agent`` (``"urllib3"`` when it is not
    known)."""
    return _CLIENTS.get(agent.partition(b"/")[0], "urllib3")


#: URLs parsed, by their text: a client calls the same few again and again, and parsing one
#: costs more than the rest of building the request. Emptied when full.
_URLS: dict[str, httpx2.URL] = {}
_URLS_KEPT = 256


def parsed_url(text: str) -> httpx2.URL:
    """``text`` parsed (an ``httpx2.URL`` is immutable: one serves every request to it)."""
    url = _URLS.get(text)
    if url is None:
        if len(_URLS) >= _URLS_KEPT:
            _URLS.clear()
        url = _URLS[text] = httpx2.URL(text)
    return url


def _send(
    original: _MakeRequest,
    pool: HTTPConnectionPool,
    conn: BaseHTTPConnection,
    method: str,
    url: str,
    content: bytes | None,
    headers: ClientHeaders | None,
    options: dict[str, Any],
) -> httpx2.Response:
    """Send the request through urllib3's own ``_make_request``; its response, unread and
    undecoded, as an ``httpx2`` response whose body streams from it."""
    sent = {**options, "preload_content": False, "decode_content": False}
    real = original(pool, conn, method, url, body=content, headers=headers, **sent)
    # The response given to the caller releases the connection, once: not this one.
    real._connection = None  # type: ignore[attr-defined]  # urllib3's own HTTPResponse
    version = b"HTTP/1.0" if getattr(real, "version", None) == 10 else b"HTTP/1.1"
    return httpx2.Response(
        real.status,
        headers=[(name, value) for name, value in real.headers.items()],
        stream=LiveStream(real),
        extensions={
            "reason_phrase": (real.reason or "").encode("latin-1"),
            "http_version": version,
        },
    )


class LiveStream(httpx2.SyncByteStream):
    """The raw bytes of a live urllib3 response, one HTTP chunk (or what arrived) at a time.

    It is iterated once: a later iteration goes on where the last one stopped (the cassette
    reads the rest of a response the client never closed)."""

    def __init__(self, response: BaseHTTPResponse) -> None:
        self._response = response
        self._chunks: Iterator[bytes] | None = None

    def __iter__(self) -> Iterator[bytes]:
        if self._chunks is None:
            self._chunks = self._read()
        return self._chunks

    def _read(self) -> Iterator[bytes]:
        response = self._response
        if not isinstance(response, HTTPResponse):
            # what another tool's connection gave (vcrpy's, an http.client response)
            while chunk := response.read(_READ_SIZE):
                yield chunk
            return
        if response.chunked and response.supports_chunked_reads():
            for chunk in response.read_chunked(decode_content=False):
                if chunk:
                    yield chunk
            return
        while chunk := response.read1(_READ_SIZE, decode_content=False):
            yield chunk

    def close(self) -> None:
        self._response.close()


def to_urllib3(
    response: httpx2.Response,
    *,
    method: str,
    url: str,
    live: bool = False,
    pool: HTTPConnectionPool | None = None,
    connection: HTTPConnection | None = None,
    retries: Retry | None = None,
    preload_content: bool = True,
    decode_content: bool = True,
    enforce_content_length: bool = True,
) -> HTTPResponse:
    """The urllib3 response of an ``httpx2`` response to ``method url`` (see the module
    docstring): ``live`` when it comes from the network as the server framed it, else a
    stream without a length is framed in chunks, one per chunk of its ``httpx2`` stream."""
    pairs, chunked = chunked_pairs(response, method=method, live=live)
    status = response.status_code
    version = 10 if response.http_version == "HTTP/1.0" else 11
    reason = response.reason_phrase
    original = _httplib_response(
        io.BufferedReader(WireBody(response.stream, chunked=chunked)),
        method=method,
        status=status,
        reason=reason,
        version=version,
        pairs=pairs,
    )
    return HTTPResponse(
        body=original,
        headers=pairs,  # type: ignore[arg-type]  # HTTPHeaderDict takes pairs
        status=status,
        version=version,
        version_string=response.http_version,
        reason=reason,
        preload_content=preload_content,
        decode_content=decode_content,
        original_response=original,
        pool=pool,
        connection=connection,
        retries=retries,
        enforce_content_length=enforce_content_length,
        request_method=method,
        request_url=url,
    )


def chunked_pairs(
    response: httpx2.Response, *, method: str, live: bool
) -> tuple[list[tuple[str, str]], bool]:
    """The headers of ``response`` as a client gets them, and whether its body is framed in
    chunks: one that is not ``live``, a stream without a length, is marked
    ``Transfer-Encoding: chunked``, as the server sent it."""
    pairs = [
        (name.decode("latin-1"), value.decode("latin-1")) for name, value in response.headers.raw
    ]
    return framed_pairs(pairs, response.status_code, method=method, live=live)


def framed_pairs(
    pairs: list[tuple[str, str]], status: int, *, method: str, live: bool
) -> tuple[list[tuple[str, str]], bool]:
    """:func:`chunked_pairs` of a response of ``status`` whose headers are ``pairs`` (extended
    in place)."""
    names = {name.lower() for name, _ in pairs}
    chunked = "transfer-encoding" in names and any(
        name.lower() == "transfer-encoding" and "chunked" in value.lower() for name, value in pairs
    )
    if (
        not live
        and not chunked
        and "content-length" not in names
        and method.upper() != "HEAD"
        and status not in _NO_BODY
        and status >= 200
    ):
        pairs.append(("Transfer-Encoding", "chunked"))
        chunked = True
    return pairs, chunked


class _Socket:
    """What :class:`http.client.HTTPResponse` reads from: its file, already made."""

    def __init__(self, file: io.BufferedReader) -> None:
        self._file = file

    def makefile(self, *_: object, **__: object) -> io.BufferedReader:
        return self._file


def _httplib_response(
    file: io.BufferedReader,
    *,
    method: str,
    status: int,
    reason: str,
    version: int,
    pairs: list[tuple[str, str]],
) -> http.client.HTTPResponse:
    """An :class:`http.client.HTTPResponse` whose status line and headers are known (set as
    its ``begin()`` sets them from the wire) and whose body ``file`` gives."""
    original = http.client.HTTPResponse(_Socket(file), method=method)  # type: ignore[arg-type]
    message = http.client.HTTPMessage()
    for name, value in pairs:
        message[name] = value
    original.status = status
    original.code = status  # type: ignore[attr-defined]  # set by begin(), not declared
    original.reason = reason
    original.version = version
    original.headers = original.msg = message
    original.chunked = "chunked" in message.get("transfer-encoding", "").lower()
    original.chunk_left = None
    original.will_close = original._check_close()  # type: ignore[attr-defined]
    original.length = None
    length = message.get("content-length")
    if length and not original.chunked:
        try:
            original.length = max(int(length), 0)
        except ValueError:
            original.length = None
    if status in _NO_BODY or 100 <= status < 200 or method.upper() == "HEAD":
        original.length = 0
    if not original.will_close and not original.chunked and original.length is None:
        original.will_close = True
    return original


class WireBody(io.RawIOBase):
    """The body bytes of an ``httpx2`` stream as they come off the wire: in HTTP/1.1
    chunks (``chunked``) or as they are. Closing it closes the stream (a recording is
    stored then)."""

    def __init__(self, stream: Iterable[bytes] | AsyncIterable[bytes], *, chunked: bool) -> None:
        if not isinstance(stream, Iterable):
            raise TypeError(f"urllib3 cannot read the async stream {stream!r}")
        self._stream = stream
        self._chunks = iter(stream)
        self._chunked = chunked
        self._pending = b""
        self._at = 0
        self._ended = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        while self._at >= len(self._pending):
            if self._ended:
                return 0
            self._pending, self._at = self._next(), 0
        size = min(len(buffer), len(self._pending) - self._at)
        buffer[:size] = self._pending[self._at : self._at + size]
        self._at += size
        return size

    def _next(self) -> bytes:
        for chunk in self._chunks:
            if chunk:
                return b"%x\r\n%s\r\n" % (len(chunk), chunk) if self._chunked else bytes(chunk)
        self._ended = True
        return b"0\r\n\r\n" if self._chunked else b""

    def close(self) -> None:
        if not self.closed:
            try:
                close = getattr(self._stream, "close", None)
                if close is not None:
                    close()
            finally:
                super().close()
