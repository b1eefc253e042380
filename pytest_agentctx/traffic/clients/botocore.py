"""Interception of ``botocore`` (and so ``boto3``) one level above urllib3.

The patch point is :meth:`botocore.httpsession.URLLib3Session.send`: the method that sends
one prepared request (signed, its retries and redirects botocore's own, above it) and
returns botocore's :class:`~botocore.awsrequest.AWSResponse`. The request, its body read,
is handed to :func:`~pytest_agentctx.traffic.transport.dispatch.dispatch_sync` as an
``httpx2`` request made as the urllib3 interceptor makes it
(:func:`pytest_agentctx.traffic.clients.urllib3.request_of`), so a cassette recorded
through either matches through the other.

An answered request never reaches urllib3: botocore gets an ``AWSResponse`` over a urllib3
:class:`~urllib3.response.HTTPResponse` whose bytes come from the handler's stream as they
are read (a recording cut short still fails where it stops), with the headers the urllib3
interceptor would give it (a stream without a length marked ``Transfer-Encoding:
chunked``). Without this patch, botocore's own session (its proxy settings, the pool's
look-up and ``urlopen``) and ``http.client``'s chunked reading cost more than the replay of
a Bedrock stream itself.

A request that goes on to the network (recording, or no handler answering) is sent by
botocore's own ``send``, with its body read; the urllib3 interceptor below lets it pass
(:func:`~pytest_agentctx.traffic.transport.dispatch.sent_below`), so it is one
interaction, recorded once. Its response is read from botocore's as it arrives.

Registered with the urllib3 interceptor (urllib3 2, which botocore sends through on the
Pythons this package supports), and only when botocore is installed; the patch is installed
as an interceptor starts, when botocore is imported by then (never importing it): a botocore
imported later sends through the urllib3 interceptor until the next start.

Replay is kept cheap, as a Bedrock stream replayed through botocore is compared with
botocore answered in ``before-send``: the ``httpx2`` request is built from the bytes already
read (:func:`request_of`), and a replayed stream whose chunks are all known is handed to
urllib3 as one in-memory body (botocore reads it at once anyway). A handler the dispatch
offers the request to may answer with the recording as it is
(:class:`~pytest_agentctx.traffic.transport.wire.Recorded`, see
:func:`~pytest_agentctx.traffic.transport.responses.recorded_response`): botocore's
response is made of it directly (:func:`recorded_aws`), the one it would get of the
``httpx2`` response.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any, TypeVar

import httpx2
from botocore.awsrequest import AWSPreparedRequest, AWSResponse, _HeaderKey
from botocore.exceptions import EndpointConnectionError
from botocore.httpsession import URLLib3Session
from urllib3.response import HTTPResponse

from pytest_agentctx.traffic.clients.urllib3 import (
    LiveStream,
    WireBody,
    body_bytes,
    chunked_pairs,
    client_of_agent,
    framed_pairs,
    parsed_url,
)
from pytest_agentctx.traffic.errors import NetworkBlocked
from pytest_agentctx.traffic.transport.dispatch import dispatch_sync, sent_below
from pytest_agentctx.traffic.transport.responses import as_httpx2, whole_body
from pytest_agentctx.traffic.transport.wire import (
    CLIENT_EXTENSION,
    Recorded,
    WireRequest,
    WireResponse,
    header_encoding,
    prebuilt_request_of_triples,
    raw_headers,
)

#: ``URLLib3Session.send``: (session, request) -> AWSResponse.
_Send = Callable[[URLLib3Session, AWSPreparedRequest], AWSResponse]

#: The ``send`` this module replaced, while installed.
_original: _Send | None = None


def install() -> None:
    """Patch botocore's HTTP session (done by the interceptor when its first handler
    starts)."""
    global _original
    if _original is None:
        _original = vars(URLLib3Session)["send"]
        setattr(URLLib3Session, "send", _send)  # noqa: B010


def uninstall() -> None:
    """Put botocore's own ``send`` back."""
    global _original
    if _original is not None:
        setattr(URLLib3Session, "send", _original)  # noqa: B010
        _original = None


def _send(session: URLLib3Session, request: AWSPreparedRequest) -> AWSResponse:
    """``URLLib3Session.send`` while an interceptor is active."""
    content = body_bytes(request.body)
    wire = request_of(request.method, request.url, request.headers, content)
    # (a call that looked the patch up just before uninstall() finds botocore's own there)
    original: _Send = _original or vars(URLLib3Session)["send"]
    live = False

    def send(_: WireRequest) -> WireResponse:
        nonlocal live
        live = True
        sent = AWSPreparedRequest(
            request.method,
            request.url,
            request.headers,
            content,
            request.stream_output,
            getattr(request, "context", None),
        )
        with sent_below():
            return _from_aws(original(session, sent), streamed=request.stream_output)

    def refuse(_: WireRequest, blocked: NetworkBlocked) -> BaseException:
        # what botocore raises when it cannot connect
        error: BaseException = EndpointConnectionError(endpoint_url=request.url, error=blocked)
        return error

    response = dispatch_sync(wire, send, refuse=refuse, takes_recorded=True)
    if type(response) is Recorded:  # a replay in one piece: no httpx2 response to convert
        answer = recorded_aws(response, method=request.method, url=request.url)
    else:
        answer = to_aws(as_httpx2(response), method=request.method, url=request.url, live=live)
    if not request.stream_output:
        answer.content  # noqa: B018  # read at once, as botocore's own send does
    return answer


def request_of(method: str, url: str, headers: Any, content: bytes | None) -> httpx2.Request:
    """The ``httpx2`` request of a botocore request to ``url`` whose body is ``content``:
    the request :func:`pytest_agentctx.traffic.clients.urllib3.request_of` makes of it,
    with the headers ``httpx2`` adds (``Host``, a ``Content-Length``) added here, so that
    ``httpx2`` neither encodes the body again nor scans the headers twice."""
    triples = _triples(headers)
    wire_url = parsed_url(url)
    method = method.upper()
    names = set()
    agent = None  # the first User-Agent's (client_of's)
    ascii = True  # whether httpx2 reads the headers as ASCII (see .wire.header_encoding)
    for name, lowered, value in triples:
        names.add(lowered)
        if agent is None and lowered == b"user-agent":
            agent = value
        if ascii and not (name.isascii() and value.isascii()):
            ascii = False
    framed = b"content-length" in names or b"transfer-encoding" in names
    if content and not framed:
        triples.append((b"Content-Length", b"content-length", str(len(content)).encode("ascii")))
        framed = True
    added: list[tuple[bytes, bytes, bytes]] = []
    if b"host" not in names and wire_url.host:
        added.append((b"Host", b"host", wire_url.netloc))
        ascii = ascii and wire_url.netloc.isascii()
    if not framed and method in _FRAMED_METHODS:
        added.append((b"Content-Length", b"content-length", b"0"))
    triples = added + triples if added else triples
    return prebuilt_request_of_triples(
        method,
        wire_url,
        triples,
        content or b"",
        encoding="ascii" if ascii else header_encoding((name, value) for name, _, value in triples),
        extensions={CLIENT_EXTENSION: client_of_agent(agent or b"")},
    )


#: The methods ``httpx2`` gives a ``Content-Length: 0`` when their request has no body.
_FRAMED_METHODS = ("POST", "PUT", "PATCH", "QUERY")


def _triples(headers: Any) -> list[tuple[bytes, bytes, bytes]]:
    """A botocore request's headers as the byte pairs of the wire (:func:`.wire.raw_headers`)
    with their lower-case names, as ``httpx2.Headers`` keeps them, read from the dictionary
    a ``HeadersDict`` keeps them in: its ``items()`` makes and hashes a case-insensitive key
    for each (a stored key's name is read as ``str()`` reads it, without the call)."""
    stored = getattr(headers, "_dict", None)
    if type(stored) is not dict:
        return [(name, name.lower(), value) for name, value in raw_headers(headers)]
    triples = []
    for key, value in stored.items():
        name = (key._key if type(key) is _HeaderKey else str(key)).encode("latin-1")
        raw = value if isinstance(value, bytes) else value.encode("latin-1")
        triples.append((name, name.lower(), raw))
    return triples


def _from_aws(response: AWSResponse, *, streamed: bool) -> httpx2.Response:
    """botocore's live response as an ``httpx2`` one whose body streams from it (or is its
    content, which botocore read already when the output is not ``streamed``)."""
    raw: Any = response.raw
    headers = [(name, value) for name, value in raw.headers.items()]
    version = b"HTTP/1.0" if getattr(raw, "version", None) == 10 else b"HTTP/1.1"
    extensions = {
        "reason_phrase": (getattr(raw, "reason", None) or "").encode("latin-1"),
        "http_version": version,
    }
    if streamed:
        return httpx2.Response(
            raw.status, headers=headers, stream=LiveStream(raw), extensions=extensions
        )
    return httpx2.Response(
        raw.status,
        headers=headers,
        stream=httpx2.ByteStream(response.content),
        extensions=extensions,
    )


def to_aws(response: httpx2.Response, *, method: str, url: str, live: bool) -> AWSResponse:
    """botocore's response of an ``httpx2`` response to ``method url``: its raw a urllib3
    response, unread and undecoded as botocore asks urllib3 for one, whose bytes are those
    of the ``httpx2`` stream."""
    whole = whole_body(response.stream)  # a replayed stream: botocore reads it all at once
    body = (
        io.BufferedReader(WireBody(response.stream, chunked=False))
        if whole is None
        else io.BytesIO(whole)
    )
    headers = _aws_headers(response, method=method, live=live)
    return _aws(
        body, headers, response.status_code, _version(response), _reason(response), method, url
    )


def recorded_aws(response: Recorded, *, method: str, url: str) -> AWSResponse:
    """:func:`to_aws` of the ``httpx2`` response :func:`.responses.recorded_response` makes
    when its client does not take a :class:`~.responses.Recorded` (the same status,
    headers, reason, version and bytes), made of the recorded one directly."""
    headers = _recorded_headers(response, method=method)
    status, reason = response.status_code, _status_reason(response.status_code)
    return _aws(io.BytesIO(response.body), headers, status, "HTTP/1.1", reason, method, url)


def _aws(
    body: io.IOBase,
    headers: object,
    status: int,
    version: str,
    reason: str,
    method: str,
    url: str,
) -> AWSResponse:
    """botocore's response over a urllib3 response of ``body``, unread and undecoded as
    botocore asks urllib3 for one."""
    raw = HTTPResponse(
        body=body,
        headers=headers,  # type: ignore[arg-type]
        status=status,
        version=10 if version == "HTTP/1.0" else 11,
        version_string=version,
        reason=reason,
        preload_content=False,
        decode_content=False,
        enforce_content_length=False,
        request_method=method,
        request_url=url,
    )
    return AWSResponse(url, status, raw.headers, raw)


def _recorded_headers(response: Recorded, *, method: str) -> dict[str, str] | list[tuple[str, str]]:
    """:func:`_aws_headers` of a recorded response (its ASCII pairs read as urllib3's are)."""
    key = (response.pairs, response.status_code, method.upper() == "HEAD")
    known = _RECORDED_HEADERS.get(key)
    if known is None:
        pairs, _ = framed_pairs(
            list(response.pairs), response.status_code, method=method, live=False
        )
        known = _kept(_RECORDED_HEADERS, key, pairs)
    return known


#: :func:`_recorded_headers`, by the recorded pairs, status and whether it answers a ``HEAD``.
_RECORDED_HEADERS: dict[
    tuple[tuple[tuple[str, str], ...], int, bool], dict[str, str] | list[tuple[str, str]]
] = {}


#: The headers urllib3 is given for a response, by its byte pairs, status, whether it
#: answers a ``HEAD`` and is live: a replayed response's are the same on every call, and
#: making them cost more than the rest of the response. Read only (urllib3 copies them);
#: emptied when full.
_HEADERS: dict[
    tuple[tuple[tuple[bytes, bytes], ...], int, bool, bool],
    dict[str, str] | list[tuple[str, str]],
] = {}
_HEADERS_KEPT = 256


def _aws_headers(
    response: httpx2.Response, *, method: str, live: bool
) -> dict[str, str] | list[tuple[str, str]]:
    """The headers of ``response`` as urllib3 is given them (see :func:`chunked_pairs`):
    a dict when no name repeats, which urllib3 reads faster than pairs."""
    key = (tuple(response.headers.raw), response.status_code, method.upper() == "HEAD", live)
    known = _HEADERS.get(key)
    if known is None:
        pairs, _ = chunked_pairs(response, method=method, live=live)
        known = _kept(_HEADERS, key, pairs)
    return known


_K = TypeVar("_K")


def _kept(
    kept: dict[_K, dict[str, str] | list[tuple[str, str]]], key: _K, pairs: list[tuple[str, str]]
) -> dict[str, str] | list[tuple[str, str]]:
    """The headers ``pairs`` as urllib3 is given them (a dict when no name repeats, which
    urllib3 reads faster than pairs), kept in ``kept`` under ``key`` (emptied when full)."""
    unique = len({name.lower() for name, _ in pairs}) == len(pairs)
    known: dict[str, str] | list[tuple[str, str]] = dict(pairs) if unique else pairs
    if len(kept) >= _HEADERS_KEPT:
        kept.clear()
    kept[key] = known
    return known


def _version(response: httpx2.Response) -> str:
    """``response.http_version``, read without the ``KeyError`` that property catches for
    a response made without one (every replayed response)."""
    extensions = response.extensions
    if "http_version" not in extensions:
        return "HTTP/1.1"
    version: bytes = extensions["http_version"]
    return version.decode("ascii", errors="ignore")


#: The reason phrase ``httpx2`` gives each status of a response that has none of its own.
_REASONS: dict[int, str] = {}


def _reason(response: httpx2.Response) -> str:
    """``response.reason_phrase``: the one it came with, else the status's, found once per
    status (``httpx2`` looks it up in its status enumeration for every response)."""
    if "reason_phrase" in response.extensions:
        return response.reason_phrase
    return _status_reason(response.status_code)


def _status_reason(status: int) -> str:
    """The reason phrase ``httpx2`` gives ``status`` (found once per status)."""
    known = _REASONS.get(status)
    if known is None:
        known = _REASONS[status] = httpx2.codes.get_reason_phrase(status)
    return known
