"""MCP over HTTP on the wire, for :mod:`.http`: which server and session a request
belongs to, where a stream's events end, what a server's event answers, the live ids of
replayed requests, and the streams of the HTTP libraries :mod:`.http`'s are served in.
"""

from __future__ import annotations

import dataclasses
import json
import re
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from typing import Any
from urllib.parse import parse_qs, urlsplit

from pytest_agentctx.traffic.mcp.jsonrpc import is_jsonrpc_value, progress_token, with_id
from pytest_agentctx.traffic.transport.wire import WireRequest

#: The request header of a streamable HTTP session.
SESSION_HEADER = "mcp-session-id"
#: The query parameters of a legacy SSE session (``session_id``; ``sessionId`` in some
#: servers).
SESSION_PARAMETERS = ("session_id", "sessionId")

#: The end of a server-sent event: two line ends in a row (``\n``, ``\r\n`` or ``\r``).
_EVENT_END = re.compile(rb"(?:\r\n|\r(?!\n)|\n)(?:\r\n|\r(?!\n)|\n)")

#: (origin, session) of a message or a stream.
Where = tuple[str, str | None]


def is_http(request: WireRequest) -> bool:
    """Whether ``request`` goes over HTTP (not to a stdio server's ``mcp+stdio`` URL): read
    from its URL's scheme when it has one (``httpx2``'s, lower-case), which the URL's text
    starts with and is cheaper to get."""
    url = request.url
    scheme = getattr(url, "scheme", None)
    text = scheme if isinstance(scheme, str) and scheme else str(url)
    return text[:4].lower() == "http"


def origin_of(url: str) -> str:
    """The server a URL names: its scheme, host and port."""
    parts = urlsplit(url)
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}"


def session_of(request: WireRequest) -> str | None:
    """The MCP session a request belongs to: its ``Mcp-Session-Id``, or the legacy SSE
    transport's ``session_id`` query parameter; ``None`` when it names none."""
    header = request.headers.get(SESSION_HEADER)
    if header:
        return header
    return _query_session(str(request.url))


def _query_session(url: str) -> str | None:
    query = parse_qs(urlsplit(url).query)
    for name in SESSION_PARAMETERS:
        values = query.get(name)
        if values and values[0]:
            return values[0]
    return None


def endpoint_session(events: Iterable[object]) -> str | None:
    """The session a legacy SSE stream's ``endpoint`` event names, if it has one."""
    for event in events:
        if isinstance(event, Mapping) and event.get("event") == "endpoint":
            data = event.get("data")
            return _query_session(data) if isinstance(data, str) else None
    return None


#: What every JSON-RPC message's text holds: a body without it is no MCP request.
JSONRPC_MARK = b'"jsonrpc"'


def json_body(content: bytes) -> object:
    """A request's body as JSON when it is a JSON-RPC message or batch, else ``None``."""
    if JSONRPC_MARK not in content:  # cheap: a model's request is never parsed again
        return None
    try:
        body = json.loads(content)
    except ValueError:
        return None
    return body if is_jsonrpc_value(body) else None


def messages_in(value: object) -> list[dict[str, Any]]:
    items = value if isinstance(value, list) else [value]
    return [item for item in items if isinstance(item, dict)]


def _with_token(message: Mapping[str, Any], token: object) -> dict[str, Any]:
    params = dict(message.get("params") or {})
    params["progressToken"] = token
    return {**message, "params": params}


def event_ends(raw: bytes) -> list[int]:
    """Where each server-sent event of ``raw`` ends (blank blocks are no event, as the
    cassette stores them): offsets in ``raw``, the last one ``len(raw)`` when the stream
    ended inside an event."""
    ends: list[int] = []
    start = 0
    for match in _EVENT_END.finditer(raw):
        if raw[start : match.start()].strip():
            ends.append(match.end())
        start = match.end()
    if raw[start:].strip():
        ends.append(len(raw))
    return ends


@dataclasses.dataclass
class Ids:
    """The ids (and progress tokens) of a session's replayed requests: recorded -> live,
    where they differ, and every recorded id replayed."""

    ids: dict[str, object] = dataclasses.field(default_factory=dict)
    tokens: dict[str, object] = dataclasses.field(default_factory=dict)
    #: Where in the client's messages each recorded id (and token) was replayed.
    replayed: dict[str, int] = dataclasses.field(default_factory=dict)
    replayed_tokens: dict[str, int] = dataclasses.field(default_factory=dict)

    def learn(self, recorded: object, live: object, position: int) -> None:
        """Note the live requests of ``live`` (the client's message at ``position``) that
        stand for those of ``recorded``."""
        for old, new in zip(messages_in(recorded), messages_in(live), strict=False):
            if "method" not in old or "id" not in old or "id" not in new:
                continue  # a notification, or the client's answer to a server's request
            self.replayed[key_of(old["id"])] = position
            if old["id"] != new["id"]:
                self.ids[key_of(old["id"])] = new["id"]
            old_token, new_token = progress_token(old), progress_token(new)
            if old_token is not None:
                self.replayed_tokens[key_of(old_token)] = position
            if old_token is not None and new_token is not None and old_token != new_token:
                self.tokens[key_of(old_token)] = new_token

    def __bool__(self) -> bool:
        return bool(self.ids or self.tokens)

    def rewritten(self, data: object) -> object:
        """``data`` (a server's message or batch) with the live ids and tokens."""
        if not self:
            return data
        if isinstance(data, list):
            return [self._message(item) for item in data]
        return self._message(data)

    def _message(self, message: object) -> object:
        if not isinstance(message, dict):
            return message
        if "method" not in message and "id" in message:  # a response to the client
            live = self.ids.get(key_of(message["id"]), _MISSING)
            return message if live is _MISSING else with_id(message, live)
        if message.get("method") == "notifications/progress":
            token = (message.get("params") or {}).get("progressToken")
            live = self.tokens.get(key_of(token), _MISSING)
            return message if live is _MISSING else _with_token(message, live)
        return message


_MISSING = object()


def answer_of(data: object) -> tuple[str, str] | None:
    """What request of the client a server's event data answers: ``("id", key)`` for the
    response to a request, ``("token", key)`` for a progress notification about one;
    ``None`` for any other message (the server's own requests and notifications)."""
    if not isinstance(data, dict):
        return None
    if (
        "method" not in data
        and data.get("id") is not None
        and ("result" in data or "error" in data)
    ):
        return "id", key_of(data["id"])
    if data.get("method") == "notifications/progress":
        params = data.get("params")
        token = params.get("progressToken") if isinstance(params, dict) else None
        if token is not None:
            return "token", key_of(token)
    return None


#: A message the client sent: its server (origin), session, and the keys of the ids and
#: progress tokens of the requests it holds (none: answers to the server, notifications).
Sent = tuple[str, str | None, tuple[tuple[str, str], ...]]


def requests_in(body: object) -> tuple[tuple[str, str], ...]:
    """The requests of the client's JSON-RPC message (or batch), as :func:`answer_of`
    names what answers them: ``("id", key)`` and ``("token", key)``."""
    found: list[tuple[str, str]] = []
    for item in messages_in(body):
        if "method" in item and "id" in item:
            found.append(("id", key_of(item["id"])))
            token = progress_token(item)
            if token is not None:
                found.append(("token", key_of(token)))
    return tuple(found)


def key_of(value: object) -> str:
    return json.dumps(value, sort_keys=True)


class Waiter:
    """An async stream waiting for the client's next message, woken from any thread."""

    def __init__(self) -> None:
        import asyncio

        import anyio

        self._event = anyio.Event()
        self._thread = threading.get_ident()
        try:
            self._loop: Any = asyncio.get_running_loop()
        except RuntimeError:  # another event loop (trio): woken from its own thread only
            self._loop = None

    def wake(self) -> None:
        if self._loop is not None and threading.get_ident() != self._thread:
            self._loop.call_soon_threadsafe(self._event.set)
        else:
            self._event.set()

    async def wait(self) -> None:
        await self._event.wait()


class Noted:
    """A live stream passed through, each chunk's size told to ``note`` as it comes."""

    def __init__(self, inner: Any, note: Callable[[int], None]) -> None:
        self._inner = inner
        self._note = note

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._inner:
            self._note(len(chunk))
            yield chunk

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            self._note(len(chunk))
            yield chunk

    def close(self) -> None:
        self._inner.close()

    async def aclose(self) -> None:
        await self._inner.aclose()


class Through:
    """A stream of the HTTP library over a :class:`_Gated` or a :class:`Noted` one."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __iter__(self) -> Iterator[bytes]:
        return iter(self._inner)

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._inner.__aiter__()  # type: ignore[no-any-return]

    def close(self) -> None:
        self._inner.close()

    async def aclose(self) -> None:
        await self._inner.aclose()


#: The stream classes of each HTTP library, built once.
_classes: dict[object, type[Through]] = {}


def library_stream(module: Any) -> type[Through]:
    built = _classes.get(module)
    if built is None:

        class Stream(Through, module.SyncByteStream, module.AsyncByteStream):  # type: ignore[misc]
            """A stream of this library over one of :mod:`.http`'s."""

        built = _classes[module] = Stream
    return built


def noted_stream(module: Any) -> Callable[[Any, Callable[[int], None]], Any]:
    stream_class = library_stream(module)

    def make(inner: Any, note: Callable[[int], None]) -> Any:
        return stream_class(Noted(inner, note))

    return make
