"""The wire request and response every handler sees, as :class:`typing.Protocol` s, and the
type of a handler.

Every client library's request reaches the handlers as an ``httpx2`` request (``httpx``'s
own for ``httpx``): the clients of :mod:`pytest_agentctx.traffic.clients` convert theirs.
:class:`WireRequest` and :class:`WireResponse` name what the handlers, the transport and
capture use of them, which both libraries' objects have.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from itertools import chain
from typing import TYPE_CHECKING, Protocol, TypeAlias, overload

if TYPE_CHECKING:
    import httpx2

#: Header names and values as clients give them: ``str`` or ``bytes`` (botocore sends its
#: ``User-Agent`` and every other value as ``bytes``).
HeaderValue: TypeAlias = str | bytes
#: A client's request headers: a mapping, or pairs (``None``: no headers).
ClientHeaders: TypeAlias = (
    Mapping[str, HeaderValue]
    | Mapping[bytes, HeaderValue]
    | Mapping[HeaderValue, HeaderValue]
    | Iterable[tuple[HeaderValue, HeaderValue]]
)

#: The request extension naming the client library a request came through (``"requests"``),
#: which a cassette's miss message shows.
CLIENT_EXTENSION = "agentctx_client"


class WireURL(Protocol):
    """The URL of a request (``httpx2.URL``); ``str()`` gives it whole."""

    @property
    def path(self) -> str: ...

    @property
    def host(self) -> str: ...


class WireHeaders(Protocol):
    """The headers of a request or a response (``httpx2.Headers``), names case-insensitive."""

    @property
    def raw(self) -> list[tuple[bytes, bytes]]: ...

    @overload
    def get(self, key: str, /) -> str | None: ...

    @overload
    def get(self, key: str, default: str, /) -> str: ...

    def items(self) -> Iterable[tuple[str, str]]: ...

    def values(self) -> Iterable[str]: ...


class WireRequest(Protocol):
    """A request offered to the handlers, its body read (``httpx2.Request``)."""

    @property
    def method(self) -> str: ...

    @property
    def url(self) -> WireURL: ...

    @property
    def headers(self) -> WireHeaders: ...

    @property
    def content(self) -> bytes: ...

    @property
    def extensions(self) -> Mapping[str, object]: ...


class WireResponse(Protocol):
    """A response a handler gives (``httpx2.Response``): its body in ``stream``."""

    @property
    def status_code(self) -> int: ...

    @property
    def headers(self) -> WireHeaders: ...

    @property
    def stream(self) -> Iterable[bytes] | AsyncIterable[bytes]: ...

    @property
    def extensions(self) -> Mapping[str, object]: ...


def header_bytes(value: HeaderValue, encoding: str = "latin-1") -> bytes:
    """A header name or value as it goes on the wire: ``bytes`` as they are, ``str``
    encoded as the client library encodes it (``http.client``, and so urllib3, in
    latin-1; aiohttp in UTF-8)."""
    return value if isinstance(value, bytes) else value.encode(encoding)


def header_text(value: HeaderValue) -> str:
    """A header name or value as text: ``bytes`` decoded as latin-1, as the HTTP libraries
    read header bytes (every byte is one character: nothing is lost or refused)."""
    return value.decode("latin-1") if isinstance(value, bytes) else value


def raw_headers(
    headers: ClientHeaders | None, encoding: str = "latin-1"
) -> list[tuple[bytes, bytes]]:
    """A client's request headers as the byte pairs of the wire (see :func:`header_bytes`),
    in order: what an ``httpx2`` request is built with, whichever type each name and value
    had (an ``httpx2`` request encodes ``str`` values as ASCII only)."""
    if not headers:
        return []
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    return [(header_bytes(name, encoding), header_bytes(value, encoding)) for name, value in pairs]


def header_encoding(pairs: Iterable[tuple[bytes, bytes]]) -> str:
    """The encoding ``httpx2.Headers`` reads byte ``pairs`` in (as it finds it on its first
    look-up): ASCII, UTF-8 when every name and value decodes in it, else latin-1."""
    pairs = list(pairs)
    if b"".join(chain.from_iterable(pairs)).isascii():
        return "ascii"
    try:
        for name, value in pairs:
            name.decode("utf-8")
            value.decode("utf-8")
    except UnicodeDecodeError:
        return "iso-8859-1"
    return "utf-8"


def prebuilt_request(
    method: str,
    url: httpx2.URL,
    pairs: list[tuple[bytes, bytes]],
    content: bytes,
    *,
    encoding: str | None = None,
    extensions: dict[str, object] | None = None,
) -> httpx2.Request:
    """The ``httpx2`` request of ``method`` to ``url`` with the headers ``pairs`` and the
    body ``content``, read: what ``httpx2.Request(method, url, headers=..., content=...)``
    makes when ``pairs`` already hold what it adds (``Host``, ``Content-Length``), without
    parsing the URL, encoding the body or scanning the headers again. ``encoding`` is the
    headers' (:func:`header_encoding`), when the caller knows it already.

    The headers' list is the one ``httpx2.Headers`` keeps for byte pairs (name, lower-case
    name, value: it checks nothing else of bytes), and the body is set as ``read()`` sets
    it: both made here in one step, as a request is built on every call a client makes,
    and so are the request and its headers (the attributes ``httpx2.Request(method, url,
    stream=...)`` and ``httpx2.Headers(encoding=...)`` set, without their checks of what
    they are given). The request's URL is ``url`` itself, not a copy."""
    triples = [(name, name.lower(), value) for name, value in pairs]
    encoding = encoding or header_encoding(pairs)
    return prebuilt_request_of_triples(
        method, url, triples, content, encoding=encoding, extensions=extensions
    )


def prebuilt_request_of_triples(
    method: str,
    url: httpx2.URL,
    triples: list[tuple[bytes, bytes, bytes]],
    content: bytes,
    *,
    encoding: str,
    extensions: dict[str, object] | None = None,
) -> httpx2.Request:
    """:func:`prebuilt_request` of the headers' (name, lower-case name, value) ``triples``,
    as ``httpx2.Headers`` keeps them (the list itself becomes theirs), whose ``encoding``
    the caller found."""
    from httpx2 import ByteStream, Headers, Request

    headers = Headers.__new__(Headers)
    headers._list = triples
    headers._encoding = encoding
    request = Request.__new__(Request)
    request.method = method.upper()
    request.url = url  # the caller's (immutable) URL itself: one serves every request to it
    request.headers = headers
    request.extensions = {} if extensions is None else dict(extensions)
    request.stream = ByteStream(content)
    request._content = content
    return request


@dataclass(slots=True)
class Recorded:
    """A recorded response in one piece, as stored: what
    :func:`~.responses.recorded_response` gives a client that reads it so (botocore's, which
    reads a response whole), in place of the ``httpx2`` response it would convert. A
    :class:`WireResponse` all the same: its headers and stream are made when asked for."""

    status_code: int
    pairs: tuple[tuple[str, str], ...]
    body: bytes
    extensions: dict[str, object] = field(default_factory=dict)

    @property
    def headers(self) -> httpx2.Headers:
        import httpx2

        return httpx2.Headers(list(self.pairs))

    @property
    def stream(self) -> httpx2.ByteStream:
        import httpx2

        return httpx2.ByteStream(self.body)


#: What a handler gives for a request: a response, or ``None`` to let it pass; one offered
#: requests of async clients may return an awaitable of either.
Answer: TypeAlias = WireResponse | Awaitable[WireResponse | None] | None
#: A handler answers a request (see :data:`Answer`).
Handler = Callable[[WireRequest], Answer]
