"""Recording a test's live exchanges: each request sent on, its response stored when read.

A request the cassette does not replay is sent on (:meth:`Recorder.record`); its response
streams through to the agent, a copy teed aside, and the interaction is kept, scrubbed of
secrets, once the agent read the response to its end or closed it. A request another
tool in the test answers (a respx route) is witnessed the same way
(:meth:`Recorder.witness`), for the exchange log only, never saved.

A response the agent stops reading without closing (``break`` out of ``for chunk in stream``) is
finished when the test ends (:meth:`Recorder.finish_streams`): a sync stream is read on to
its end (within :data:`STREAM_FINISH_SECONDS` and :data:`STREAM_FINISH_BYTES`), so the
cassette holds the whole response; an async stream, whose event loop has ended by then, a
sync one whose client was closed before the rest arrived, or one that does not end within
those bounds, keeps what was read, up to its last whole event, marked ``partial``. Replay
serves a partial recording's events, and fails with
:class:`~pytest_agentctx.traffic.errors.PartialRecording` if the agent reads past them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import cast

from pytest_agentctx.traffic.cassettes.body import (
    Body,
    BodyTooLarge,
    UndecodableBody,
    decode_recorded,
    decompress,
    encode_body,
    kept_whole,
    whole_events,
)
from pytest_agentctx.traffic.cassettes.eventbody import whole_messages
from pytest_agentctx.traffic.cassettes.fileformat import Interaction
from pytest_agentctx.traffic.cassettes.keys import RequestKeys
from pytest_agentctx.traffic.cassettes.matcher import NO_JSON
from pytest_agentctx.traffic.cassettes.multipart import stored_multipart
from pytest_agentctx.traffic.cassettes.redact import Redactor
from pytest_agentctx.traffic.cassettes.saving import Scrubs
from pytest_agentctx.traffic.cassettes.unstored import (
    unstored_request_header,
    unstored_response_header,
)
from pytest_agentctx.traffic.cassettes.wire import LiveStream
from pytest_agentctx.traffic.mcp.http import McpHttp, Watch
from pytest_agentctx.traffic.roles import current_role
from pytest_agentctx.traffic.transport import (
    forward_async,
    forward_sync,
    is_async_request,
    tee_response,
)
from pytest_agentctx.traffic.transport.wire import Answer, WireRequest, WireResponse

#: How long a recorded stream the agent never closed is read on when the test ends.
STREAM_FINISH_SECONDS = 30.0
#: How much of it, in bytes, at most.
STREAM_FINISH_BYTES = 64 * 1024 * 1024


class Recorder:
    """Records the live exchanges of one test (see the module docstring).

    It shares the cassette's ``lock`` and ``log`` (every exchange in request order:
    ``(True, slot)`` for a recording); ``test_id`` is written with each recording (``""``
    but in a shared cassette); ``on_unscrubbable(error, request, url, sent)`` is told of a
    response whose body cannot be scrubbed of secrets, which is not recorded.
    """

    def __init__(
        self,
        *,
        redactor: Redactor,
        keys: RequestKeys,
        lock: threading.Lock,
        log: list[tuple[bool, int]],
        test_id: str,
        on_unscrubbable: Callable[[UndecodableBody, WireRequest, str, bool], object],
        mcp: McpHttp | None = None,
    ) -> None:
        self.redactor = redactor
        self.test_id = test_id
        self._keys = keys
        self._lock = lock
        self._log = log
        self._on_unscrubbable = on_unscrubbable
        #: MCP over HTTP: when each event of its streams came (see :mod:`..mcp.http`).
        self._mcp = mcp
        #: The recordings, by slot (``None`` until the response was read to its end).
        self.recorded: list[Interaction | None] = []
        #: (position in the log it came before, interaction) of each request another tool
        #: answered: what the test saw, never written to the cassette.
        self.witnessed: list[tuple[int, Interaction | None]] = []
        #: Which secrets each recording was scrubbed of (to scrub it again when saved).
        self.scrubs = Scrubs(redactor)
        #: Live responses not closed yet, by (recorded?, slot), for :meth:`finish_streams`.
        self._open: dict[tuple[bool, int], LiveStream] = {}
        #: Slots of the recordings :meth:`finish_streams` finished (partial unless whole).
        self._cut_short: set[int] = set()

    def _track(self, response: WireResponse, key: tuple[bool, int]) -> WireResponse:
        """Note the live ``response`` (a :func:`tee_response`, whose stream can be finished),
        for :meth:`finish_streams` to finish if the agent never closes it."""
        stream = response.stream
        assert callable(getattr(stream, "finish", None)), "not a teed response"
        with self._lock:
            self._open[key] = cast(LiveStream, stream)
        return response

    def record(self, request: WireRequest, url: str, body_json: object, raw: bytes) -> Answer:
        """Send ``request`` on and record its exchange (``url``, ``body_json`` and ``raw``:
        its redacted URL, JSON body or :data:`~.matcher.NO_JSON`, and raw body), kept once
        its response was read to the end, with the role it was made under."""
        role = current_role()  # the response may be read in another context
        with self._lock:
            slot = len(self.recorded)
            self.scrubs.request(slot, raw)
            self.recorded.append(None)
            self._log.append((True, slot))
        request_body: Body
        if body_json is not NO_JSON:
            request_body = {"json": body_json}
        else:
            request_body = request_body_of(raw, request.headers.get("content-type"))
        request_headers = dict(
            self.redactor.header_items(
                (name.lower(), value)
                for name, value in request.headers.items()
                if not unstored_request_header(name, value)
            )
        )
        watch = self._mcp.watch(request) if self._mcp is not None else None

        def store(raw_body: bytes, complete: bool, response: WireResponse) -> None:
            headers = {name.lower(): value for name, value in response.headers.items()}
            with self._lock:
                self._open.pop((True, slot), None)
                partial = not complete and slot in self._cut_short
            try:  # opaque bytes cannot be scrubbed of secrets: never stored (see check)
                decoded = decode_recorded(raw_body, headers.get("content-encoding"))
                if not complete:  # cut short: up to the end of its last whole event
                    decoded = whole_events(decoded, headers.get("content-type"))
                    decoded = whole_messages(decoded, headers.get("content-type"))
                stored = encode_body(decoded, headers.get("content-type"))
                stored = kept_whole(url, stored, decoded)
                body = self.scrubs.response(slot, stored, decoded)
            except UndecodableBody as exc:
                self._on_unscrubbable(exc, request, url, False)
                return
            kept = [
                (k, v)
                for k, v in headers.items()
                if not unstored_response_header(k, request.method)
            ]
            interaction = Interaction(
                method=request.method.upper(),
                url=url,
                request_headers=request_headers,
                request_body=request_body,
                status=response.status_code,
                response_headers=dict(self.redactor.response_header_items(kept)),
                response_body=body,
                origin=f"recorded#{slot}",
                test_id=self.test_id,
                partial=partial,
                role=role,
            )
            if watch is not None:
                interaction = watch.stored(interaction, raw_body, complete)
            with self._lock:
                self.recorded[slot] = interaction

        return self._forward(request, store, (True, slot), watch)

    def witness(self, request: WireRequest) -> Answer:
        """Pass on a request another tool in the test answers (a respx route), keeping a
        redacted copy of the exchange for the cassette's exchange log only."""
        url, body_json, raw = self._keys.redacted_request(request)
        request_body: Body = (
            {"json": body_json}
            if body_json is not NO_JSON
            else request_body_of(raw, request.headers.get("content-type"))
        )
        method = request.method.upper()
        with self._lock:
            slot = len(self.witnessed)
            self.witnessed.append((len(self._log), None))

        def store(raw_body: bytes, complete: bool, response: WireResponse) -> None:
            with self._lock:
                self._open.pop((False, slot), None)
            try:
                decoded, ok = decompress(raw_body, response.headers.get("content-encoding"))
            except BodyTooLarge:  # kept for the exchange log only: left out
                decoded, ok = b"", False
            body = encode_body(decoded, response.headers.get("content-type")) if ok else None
            interaction = Interaction(
                method=method,
                url=url,
                request_headers={},
                request_body=request_body,
                status=response.status_code,
                response_headers={},
                response_body=self.redactor.body(body),
                origin=f"other-tool#{slot}",
            )
            with self._lock:
                self.witnessed[slot] = (self.witnessed[slot][0], interaction)

        return self._forward(request, store, (False, slot))

    def _forward(
        self,
        request: WireRequest,
        store: Callable[[bytes, bool, WireResponse], None],
        key: tuple[bool, int],
        watch: Watch | None = None,
    ) -> Answer:
        """Send ``request`` on (awaitable when the caller is async), its response body teed
        to ``store`` as it is read, and the response tracked under ``key`` until closed
        (its chunks noted as they come by ``watch``, for an MCP request)."""
        if is_async_request():

            async def forward() -> WireResponse:
                response: WireResponse = await forward_async(request)
                teed = tee_response(response, lambda data, done: store(data, done, response))
                tracked = self._track(teed, key)
                return watch.response(tracked) if watch is not None else tracked

            return forward()
        response: WireResponse = forward_sync(request)
        teed = tee_response(response, lambda data, done: store(data, done, response))
        tracked = self._track(teed, key)
        return watch.response(tracked) if watch is not None else tracked

    def finish_streams(self) -> None:
        """Finish the recorded responses the agent never closed (see
        :mod:`.session`): the test has ended, so the agent reads no more of them."""
        with self._lock:
            still_open, self._open = self._open, {}
            self._cut_short.update(slot for recorded, slot in still_open if recorded)
        for stream in still_open.values():
            stream.finish(seconds=STREAM_FINISH_SECONDS, max_bytes=STREAM_FINISH_BYTES)


def request_body_of(raw: bytes, content_type: str | None) -> Body:
    """The stored form of a request body that is not JSON (already redacted): a multipart
    upload part by part when its parts give back its bytes (:mod:`.multipart`), other
    bodies as :func:`~.body.encode_body` stores them."""
    stored = stored_multipart(raw, content_type)
    return {"multipart": stored} if stored is not None else encode_body(raw, content_type)


def missed_interaction(
    request: WireRequest, url: str, body_json: object, raw: bytes, content: bytes, origin: str
) -> Interaction:
    """A missed request (its ``url``, ``body_json`` and ``raw`` body redacted) with the error
    ``content`` it was answered (status 599), kept for a test's seen log, never saved."""
    request_body: Body = (
        {"json": body_json}
        if body_json is not NO_JSON
        else encode_body(raw, request.headers.get("content-type"))
    )
    return Interaction(
        method=request.method.upper(),
        url=url,
        request_headers={},
        request_body=request_body,
        status=599,
        response_headers={"content-type": "application/json"},
        response_body=encode_body(content, "application/json"),
        origin=origin,
    )
