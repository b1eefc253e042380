"""MCP over HTTP in a cassette: streamable HTTP and the legacy SSE transport, replayed in
the order they were recorded.

Both transports are plain HTTP, which the cassette records and replays as it does any
other (:mod:`pytest_agentctx.traffic.cassettes.session`); what they add is streams whose
events answer the client's later requests:

- streamable HTTP answers a ``POST`` with a JSON body or a stream of events (progress
  notifications, a server-initiated ``sampling/createMessage`` whose answer the client
  ``POST`` s before the stream goes on, then the response), takes notifications and
  answers with ``202``, and keeps a standalone ``GET`` stream open for as long as the
  session (``Mcp-Session-Id``) lives, until its ``DELETE``;
- the legacy SSE transport opens ``GET /sse`` first: its first event (``endpoint``) names
  where to ``POST`` (``/messages/?session_id=...``), every ``POST`` is answered ``202``,
  and the answers come as events of that one stream.

Replaying such a stream whole, at once, hands the client answers to requests it has not
sent yet (which it drops), then ends a stream that should stay open (the SDK reconnects a
second later, or reports "Connection closed"). So :class:`McpHttp`, one per cassette:

- while recording, notes each message the client sends to a server (:meth:`McpHttp.sent`)
  and, for each event of a stream from it, how many the client had sent since the
  stream's own request when the event arrived; the interaction keeps them
  (``mcp_stream``, :class:`~pytest_agentctx.traffic.cassettes.fileformat.McpStream`), with
  whether the client closed the stream while it was still open;
- while replaying, releases each event of such a stream only once the client has sent as
  many messages to that server again (so server-initiated messages come in their recorded
  order, one not yet due holding back the server's later ones), an event that answers a
  request (its response, a progress notification about it) once that request was
  replayed and followed by as many of the client's other messages (answers to the
  server's requests, notifications) as at recording, so that requests sent now in another
  order still get their own answers, and no answer comes before the sampling answer it
  waited for; keeps a ``GET`` stream recorded open open after its last event until its
  session ends (the ``DELETE`` of its ``Mcp-Session-Id``, the client closing it, or the
  test's end); and gives JSON-RPC responses (and progress notifications) the live
  request's id (and progress token) where the recorded one differs.

A server is an origin (scheme, host and port); messages of another MCP session of the same
server (another ``Mcp-Session-Id``, another ``session_id``) do not count for a stream whose
session is known. Nothing here opens a socket or waits on a clock: a replayed event waits
only for the client's own messages. A stdio server's messages (``mcp+stdio`` URLs) are left
to :mod:`.stdio`.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import Any

import httpx2

from pytest_agentctx.traffic.cassettes.body import format_sse_event
from pytest_agentctx.traffic.cassettes.fileformat import Interaction, McpStream
from pytest_agentctx.traffic.mcp.httpwire import (
    JSONRPC_MARK,
    SESSION_HEADER,
    Ids,
    Sent,
    Waiter,
    Where,
    answer_of,
    endpoint_session,
    event_ends,
    is_http,
    json_body,
    library_stream,
    noted_stream,
    origin_of,
    requests_in,
    session_of,
)
from pytest_agentctx.traffic.mcp.wire import is_mcp, with_recorded
from pytest_agentctx.traffic.transport import make_response
from pytest_agentctx.traffic.transport.dispatch import current_handling
from pytest_agentctx.traffic.transport.wire import Answer, WireRequest, WireResponse


class McpHttp:
    """The MCP traffic over HTTP of one cassette (see the module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        #: (origin, session, whether it is a request) of each message the client sent, in
        #: order.
        self._messages: list[Sent] = []
        #: Sessions whose ``DELETE`` was sent.
        self._ended: set[Where] = set()
        #: The live ids of each session's replayed requests.
        self._ids: dict[Where, Ids] = {}
        #: How to wake the async streams waiting for a message.
        self._wakers: set[Callable[[], None]] = set()
        self._closed = False

    # -- what the client sends -----------------------------------------------------------

    def sent(self, request: WireRequest) -> None:
        """Note a request the cassette is offered, replayed or recorded: a JSON-RPC message
        the client sends, or the ``DELETE`` that ends an MCP session."""
        method = request.method.upper()
        if method == "POST" and JSONRPC_MARK not in request.content:
            return  # no JSON-RPC message (a model's request): nothing to note
        if not is_http(request):
            return  # stdio's session keeps its own order (see .stdio)
        if method == "DELETE":
            session = request.headers.get(SESSION_HEADER)
            if session:
                self._note(ended=(origin_of(str(request.url)), session))
        elif method == "POST":
            body = json_body(request.content)
            if body is not None:
                origin, session = origin_of(str(request.url)), session_of(request)
                self._note(message=(origin, session, requests_in(body)))

    def _note(self, *, message: Sent | None = None, ended: Where | None = None) -> None:
        with self._lock:
            if message is not None:
                self._messages.append(message)
            if ended is not None:
                self._ended.add(ended)
            self._changed.notify_all()
            wakers = list(self._wakers)
        for wake in wakers:
            wake()

    def close(self) -> None:
        """The test has ended: every stream held open ends, every waiting one stops."""
        self._note()
        with self._lock:
            self._closed = True
            self._changed.notify_all()
            wakers = list(self._wakers)
        for wake in wakers:
            wake()

    def _count(
        self, where: Where, start: int, end: int | None = None, *, requests: bool = True
    ) -> int:
        """How many of the messages from ``start`` to ``end`` went to ``where``, requests
        left out unless ``requests`` (the caller holds the lock)."""
        origin, session = where
        return sum(
            1
            for to, of, asked in self._messages[start:end]
            if to == origin
            and (session is None or of is None or of == session)
            and (requests or not asked)
        )

    # -- recording -----------------------------------------------------------------------

    def watch(self, request: WireRequest) -> Watch | None:
        """What notes when the events of ``request``'s response arrive while it is
        recorded: for an MCP request (a JSON-RPC ``POST``, a ``GET`` stream), else
        ``None``."""
        if not is_http(request):
            return None
        method = request.method.upper()
        if method == "GET":
            if "text/event-stream" not in request.headers.get("accept", ""):
                return None
        elif method != "POST" or json_body(request.content) is None:
            return None
        with self._lock:
            start = len(self._messages)
        return Watch(self, origin_of(str(request.url)), session_of(request), start, method)

    def _stamps(
        self,
        where: Where,
        start: int,
        raw: bytes,
        notes: list[tuple[int, int]],
        events: list[Any],
    ) -> list[int] | None:
        """For each event of ``raw`` (stored as ``events``): the client's messages to
        ``where`` since ``start`` when it arrived, but its requests for an event that
        answers one (which waits for its own request instead); ``notes``: bytes read and
        messages sent as each chunk came. ``None`` when ``raw`` does not hold ``events``."""
        ends = event_ends(raw)
        if len(ends) != len(events):
            return None
        stamps = []
        at = 0
        with self._lock:
            now = len(self._messages)
            for end, event in zip(ends, events, strict=True):
                while at < len(notes) and notes[at][0] < end:
                    at += 1
                sent = notes[at][1] if at < len(notes) else now
                data = event.get("data") if isinstance(event, Mapping) else None
                answered = answer_of(data)
                if answered is None:
                    stamps.append(self._count(where, start, sent))
                else:  # the other messages since its request's
                    since = self._asked(where, answered, sent)
                    stamps.append(self._count(where, since, sent, requests=False))
        return stamps

    def _asked(self, where: Where, answered: tuple[str, str], before: int) -> int:
        """Where, after the last message before ``before`` that holds the request
        ``answered`` (:func:`answer_of`) of ``where``, the client's messages go on (the
        caller holds the lock); ``before`` when none does."""
        origin, session = where
        for position in range(before - 1, -1, -1):
            to, of, asked = self._messages[position]
            mine = to == origin and (session is None or of is None or of == session)
            if mine and answered in asked:
                return position + 1
        return before

    # -- replaying -----------------------------------------------------------------------

    def replay(self, request: WireRequest, interaction: Interaction) -> Answer | None:
        """The answer to ``request`` from the MCP recording ``interaction``: its events in
        their recorded order, with the live ids; ``None`` when the cassette replays it as
        any other (no MCP stream, no id to change)."""
        if interaction.mcp_stream is None and (
            request.method.upper() != "POST" or JSONRPC_MARK not in request.content
        ):
            return None  # no MCP recording, no JSON-RPC message: replayed as any other
        if not is_http(request):
            return None
        order = interaction.mcp_stream
        live = json_body(request.content) if request.method.upper() == "POST" else None
        if live is None and order is None:
            return None  # no MCP request: replayed as any other
        origin = origin_of(str(request.url))
        session = session_of(request)
        own = Ids()
        if live is not None:
            recorded = (interaction.request_body or {}).get("json")
            with self._lock:  # sent() noted it last
                position = len(self._messages)
            own.learn(recorded, live, position)
            if own.replayed:
                with self._lock:
                    known = self._ids.setdefault((origin, session), Ids())
                    known.ids.update(own.ids)
                    known.tokens.update(own.tokens)
                    known.replayed.update(own.replayed)
                    known.replayed_tokens.update(own.replayed_tokens)
                self._note()  # the answers to these requests may come now
        body = interaction.response_body
        if body is not None and "sse" in body:
            return self._stream(request, interaction, body["sse"], own, (origin, session))
        if body is not None and "json" in body and own:
            content = json.dumps(own.rewritten(body["json"]), ensure_ascii=False).encode()
            headers = dict(interaction.response_headers)
            headers["content-length"] = str(len(content))
            answer = make_response(interaction.status, headers=headers, content=content)
            return with_recorded(answer, interaction)
        return None

    def _stream(
        self,
        request: WireRequest,
        interaction: Interaction,
        events: list[Any],
        own: Ids,
        where: Where,
    ) -> WireResponse:
        order = interaction.mcp_stream or {"after": []}
        if where[1] is None:
            where = (where[0], endpoint_session(events))
        with self._lock:
            start = len(self._messages)
        hold = bool(order.get("open") or interaction.partial) and request.method.upper() == "GET"
        gated = _Gated(self, where, start, events, order["after"], hold=hold, own=own)
        current = current_handling()
        module = current.library if current is not None else httpx2
        response: WireResponse = module.Response(
            interaction.status,
            headers=list(interaction.response_headers.items()),
            stream=library_stream(module)(gated),
        )
        return with_recorded(response, interaction)


class Watch:
    """The events of one recorded MCP response, as they arrive (see :meth:`McpHttp.watch`)."""

    def __init__(
        self, owner: McpHttp, origin: str, session: str | None, start: int, method: str
    ) -> None:
        self._owner = owner
        self._origin = origin
        self._session = session
        self._start = start
        self._method = method
        self._read = 0
        #: (bytes read, messages sent) as each chunk came.
        self._notes: list[tuple[int, int]] = []

    def note(self, size: int) -> None:
        """A chunk of ``size`` bytes of the response has come to the client."""
        owner = self._owner
        with owner._lock:
            self._read += size
            self._notes.append((self._read, len(owner._messages)))

    def response(self, response: WireResponse) -> WireResponse:
        """``response`` (a live one being recorded), its chunks noted as they come."""
        current = current_handling()
        if current is None:
            return response
        wrapped: WireResponse = current.library.Response(
            response.status_code,
            headers=response.headers.raw,
            stream=noted_stream(current.library)(response.stream, self.note),
            extensions=response.extensions,
        )
        return wrapped

    def stored(self, interaction: Interaction, raw: bytes, complete: bool) -> Interaction:
        """``interaction`` as recorded from ``raw`` (its response's bytes), with when each
        of its events came when it is an MCP stream."""
        body = interaction.response_body
        if body is None or "sse" not in body or "content-encoding" in interaction.response_headers:
            return interaction
        events = body["sse"]
        session = self._session or endpoint_session(events)
        stamps = self._owner._stamps((self._origin, session), self._start, raw, self._notes, events)
        if stamps is None or not is_mcp(interaction):
            return interaction
        stream: McpStream = {"after": stamps}
        if self._method == "GET" and not complete:
            stream["open"] = True
        return dataclasses.replace(interaction, mcp_stream=stream)


class _Gated:
    """A replayed MCP stream: each event once the client has sent the messages that came
    before it at recording, then, held open, nothing until the session ends."""

    def __init__(
        self,
        owner: McpHttp,
        where: Where,
        start: int,
        events: list[Any],
        after: list[int],
        *,
        hold: bool,
        own: Ids,
    ) -> None:
        self._owner = owner
        self._where = where
        self._start = start
        self._events = events
        self._after = after
        self._hold = hold
        self._own = own
        self._closed = False
        #: The events not released yet, in the recorded order.
        self._left = list(range(len(events)))

    def _due(self, index: int) -> bool:
        """Whether event ``index`` may be released (the caller holds the lock): the client
        has sent as many messages as when it came, and when it answers a request, that
        request (whose answer the client would drop before it)."""
        event = self._events[index]
        data = event.get("data") if isinstance(event, Mapping) else None
        answered = answer_of(data)
        need = self._after[index] if index < len(self._after) else 0
        if answered is None:
            return need == 0 or self._owner._count(self._where, self._start) >= need
        since = self._answered(answered)
        if since is None:
            return False
        return need == 0 or self._owner._count(self._where, since, requests=False) >= need

    def _answered(self, answered: tuple[str, str]) -> int | None:
        """Where, after the request an event answers (:func:`answer_of`) was replayed, in
        this stream's session or before it had one, the client's messages go on; ``None``
        when it was not replayed (the caller holds the lock)."""
        kind, key = answered
        known = self._owner._ids
        origin = self._where[0]
        for ids in (self._own, known.get(self._where), known.get((origin, None))):
            if ids is None:
                continue
            position = (ids.replayed if kind == "id" else ids.replayed_tokens).get(key)
            if position is not None:
                return position
        return None

    def _over(self) -> bool:
        """Whether the stream ends now (the caller holds the lock)."""
        owner = self._owner
        return self._closed or owner._closed or self._where in owner._ended

    def _chunk(self, event: object) -> bytes:
        if not isinstance(event, Mapping):
            return format_sse_event({})
        data = event.get("data")
        if isinstance(data, dict | list):
            ids = self._ids()
            if ids:
                return format_sse_event({**event, "data": ids.rewritten(data)})
        return format_sse_event(event)

    def _ids(self) -> Ids:
        with self._owner._lock:
            known = self._owner._ids.get(self._where)
        if known is None:
            return self._own
        merged = Ids({**known.ids, **self._own.ids}, {**known.tokens, **self._own.tokens})
        return merged

    def _next(self) -> int | bool | None:
        """The event to release now (the caller holds the lock): the first one left that is
        due, in the recorded order. The server's own messages (its requests and
        notifications) keep their order: one that is not due holds back those after it. An
        answer to a request waits only for that request and its count (the client may send
        its requests in another order now). ``False`` to wait for the client, ``None`` when
        the stream ends."""
        held = False
        for index in self._left:
            answers = self._answers(index)
            if held and not answers:
                continue
            if self._due(index):
                return index
            held = held or not answers
        if self._over() or not (self._left or self._hold):
            return None
        return False

    def _answers(self, index: int) -> bool:
        """Whether event ``index`` answers a request of the client (:func:`answer_of`)."""
        event = self._events[index]
        return answer_of(event.get("data") if isinstance(event, Mapping) else None) is not None

    def __iter__(self) -> Iterator[bytes]:
        owner = self._owner
        while True:
            with owner._lock:
                step = self._next()
                while step is False:
                    owner._changed.wait()
                    step = self._next()
                if step is None or step is True:
                    return
                self._left.remove(step)
            yield self._chunk(self._events[step])

    async def __aiter__(self) -> AsyncIterator[bytes]:
        owner = self._owner
        while True:
            waiter = Waiter()
            with owner._lock:
                step = self._next()
                if step is False:
                    owner._wakers.add(waiter.wake)
                elif step is not None and step is not True:
                    self._left.remove(step)
            if step is None or step is True:
                return
            if step is False:
                try:
                    await waiter.wait()
                finally:
                    with owner._lock:
                        owner._wakers.discard(waiter.wake)
                continue
            yield self._chunk(self._events[step])

    def close(self) -> None:
        self._closed = True
        self._owner._note()

    async def aclose(self) -> None:
        self.close()
