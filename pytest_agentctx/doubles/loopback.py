"""A scripted model provider on a real socket: OpenAI, Anthropic, Gemini and Bedrock formats.

:class:`LoopbackProvider` is an HTTP/1.1 server on ``127.0.0.1`` (a free port, a
background thread) that answers the official SDKs as the real APIs do:
``POST /v1/chat/completions`` in the OpenAI chat completions format, ``POST /v1/responses``
in the OpenAI Responses format, ``POST /v1/messages`` in the Anthropic Messages format and
``POST /{version}/models/{model}:generateContent`` (``:streamGenerateContent?alt=sse``) in
the Google Gemini format, and Amazon Bedrock's ``POST /model/{model id}/converse``
(``/converse-stream``, ``/invoke``, ``/invoke-with-response-stream``: InvokeModel with an
Anthropic Messages body), as one JSON response or, when the request asks
(``"stream": true``, or Gemini's and Bedrock's streaming URLs), as server-sent events or,
for Bedrock, AWS event-stream messages, flushed one by one (Gemini's
``:streamGenerateContent`` without ``alt=sse``: one JSON array of chunks, flushed chunk by
chunk, as the API answers it). Bedrock's SigV4 signature is not checked: any credentials do.
Its replies come from the same script as :class:`~pytest_agentctx.doubles.fake_llm.FakeLLM`'s
(``reply``, ``reply_tool_call``, ``fail``), encoded by the same codecs.

Where :class:`FakeLLM` answers inside the process, at the HTTP transport, the loopback
provider sits behind a real connection: what the SDK sends and receives crosses a socket,
so recording (``--agent-record``), gzip, streaming and connection handling are exercised
as against the real service, without the internet.

It binds ``127.0.0.1`` only, never another interface.
"""

from __future__ import annotations

import contextlib
import gzip as gzip_module
import json
import math
import selectors
import socket
import sys
import threading
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from socketserver import TCPServer
from typing import Self
from urllib.parse import urlsplit

from pytest_agentctx.doubles.errors import LoopbackError
from pytest_agentctx.doubles.ids import IdFactory
from pytest_agentctx.doubles.scripted_model import ScriptedModel, bedrock_error_type, wire_error
from pytest_agentctx.traffic.codecs import bedrock, gemini
from pytest_agentctx.traffic.codecs.eventstream import EventMessage, encode_message
from pytest_agentctx.traffic.codecs.sse import SSEEvent, format_sse
from pytest_agentctx.traffic.scopes import serving

#: The only address the server ever binds.
HOST = "127.0.0.1"

#: What socketserver hands a server per request (a TCP server: the connection's socket).
_Request = socket.socket | tuple[bytes, socket.socket]

# The model endpoints. ``/chat/completions`` and ``/responses`` serve an OpenAI client
# whose base URL has no ``/v1``, so one base URL (``provider.base_url``) works for both SDKs.
_MODEL_PATHS = (
    "/v1/chat/completions",
    "/chat/completions",
    "/v1/responses",
    "/responses",
    "/v1/messages",
)


@dataclass(frozen=True)
class LoopbackExchange:
    """One HTTP request the server received, and how it answered.

    ``headers`` has lower-case names; ``body`` is the request body as sent.
    """

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    status: int
    streamed: bool
    gzipped: bool


class _Stopped(Exception):
    """The provider is stopping: abandon the response being streamed."""


class _BadRequest(Exception):
    """A request whose framing cannot be read (a bad ``content-length`` or chunk size)."""


class LoopbackProvider(ScriptedModel):
    """A scripted model provider served over HTTP on ``127.0.0.1``, for the real SDKs.

    Use it as a context manager (or :meth:`start` / :meth:`stop`) and point an SDK client
    at :attr:`base_url`::

        with LoopbackProvider() as provider:
            provider.reply_tool_call("get_weather", city="Paris").reply("Sunny in Paris.")
            client = openai.OpenAI(base_url=provider.base_url, api_key="sk-test")
            ...
            provider.verify()

    ``gzip=True`` compresses responses for clients that accept gzip (the SDKs do);
    ``event_delay`` is waited before each streamed event, to measure time to first event;
    ``port`` picks a fixed port instead of a free one; ``ids`` makes the ids of responses,
    tool calls and ``x-request-id`` headers (``SequentialIds()`` by default).
    """

    _name = "loopback"

    def __init__(
        self,
        *,
        ids: IdFactory | None = None,
        gzip: bool = False,
        event_delay: float = 0.0,
        port: int = 0,
    ) -> None:
        super().__init__(ids=ids)
        if (
            isinstance(event_delay, bool)
            or not isinstance(event_delay, (int, float))
            or not math.isfinite(event_delay)
            or event_delay < 0
        ):
            raise LoopbackError(
                f"LoopbackProvider(event_delay={event_delay!r}): expected a number of seconds "
                "of at least 0, for example event_delay=0.01."
            )
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
            raise LoopbackError(
                f"LoopbackProvider(port={port!r}): expected a TCP port from 0 to 65535; leave "
                "it at 0 to get a free port."
            )
        self.gzip = gzip
        self.event_delay = float(event_delay)
        self._requested_port = port
        self.exchanges: list[LoopbackExchange] = []
        self.errors: list[str] = []
        self._state = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._wake: tuple[socket.socket, socket.socket] | None = None
        self._stopping = threading.Event()

    # -- addresses -------------------------------------------------------------------

    @property
    def running(self) -> bool:
        """Whether the server is listening."""
        return self._server is not None

    @property
    def address(self) -> tuple[str, int]:
        """The ``(host, port)`` the server's socket is bound to (only while it runs)."""
        server = self._server
        if server is None:
            raise LoopbackError(
                "The loopback provider is not running, so it has no address. Start it "
                "first: `with LoopbackProvider() as provider:` or provider.start()."
            )
        host, port = server.socket.getsockname()[:2]
        return str(host), int(port)

    @property
    def port(self) -> int:
        """The port the server listens on (only while it runs)."""
        return self.address[1]

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT``: the base URL for either SDK.

        The Anthropic SDK appends ``/v1/messages``; the OpenAI SDK appends
        ``/chat/completions`` or ``/responses``, which the server also answers. Use
        :attr:`openai_base_url` for request URLs shaped like OpenAI's own
        (``.../v1/chat/completions``).
        """
        return f"http://{HOST}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``, as OpenAI's own base URL ends in ``/v1``."""
        return f"{self.base_url}/v1"

    @property
    def gemini_base_url(self) -> str:
        """``http://127.0.0.1:PORT``: the ``google-genai`` SDK appends
        ``/v1beta/models/<model>:generateContent`` (or ``/v1/...``) itself; give it as
        ``HttpOptions(base_url=...)``."""
        return self.base_url

    @property
    def bedrock_endpoint_url(self) -> str:
        """``http://127.0.0.1:PORT``: for boto3's
        ``boto3.client("bedrock-runtime", endpoint_url=...)``, which appends
        ``/model/<model id>/converse`` (or ``converse-stream``, ``invoke``...) itself."""
        return self.base_url

    @property
    def anthropic_base_url(self) -> str:
        """``http://127.0.0.1:PORT``: the Anthropic SDK appends ``/v1/messages`` itself."""
        return self.base_url

    # -- life cycle ------------------------------------------------------------------

    def start(self) -> None:
        """Listen on ``127.0.0.1`` and serve from a background thread (no-op if running)."""
        with self._state:
            if self._server is not None:
                return
            try:
                server = _Server(self, self._requested_port)
            except OSError as exc:
                raise LoopbackError(
                    f"The loopback provider could not listen on {HOST}:{self._requested_port}"
                    f" ({exc}). Leave port=0 to get a free port, or free that one."
                ) from None
            wake = socket.socketpair()
            self._stopping.clear()
            thread = serving(
                threading.Thread(
                    target=_accept_loop,
                    args=(server, wake[0]),
                    name=f"loopback-{server.server_address[1]}",
                )
            )
            thread.start()
            self._server, self._thread, self._wake = server, thread, wake

    def stop(self) -> None:
        """Stop serving, close every connection and release the port (no-op if stopped).

        Responses still streaming are cut off; every server thread has ended on return.
        """
        with self._state:
            server, thread, wake = self._server, self._thread, self._wake
            if server is None or thread is None or wake is None:
                return
            self._server = self._thread = self._wake = None
            self._stopping.set()
            wake[1].send(b"x")
            thread.join()
            server.close_connections()
            server.server_close()  # joins the connection threads
            for end in wake:
                end.close()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def verify(self) -> None:
        """Raise if the server failed a request, or the script was not followed.

        :class:`LoopbackError` for a server failure; otherwise as :meth:`FakeLLM.verify`:
        :class:`UnexpectedModelCall` or :class:`UnusedScriptedReplies`.
        """
        if self.errors:
            raise LoopbackError(
                f"loopback: the server failed {len(self.errors)} request(s); the first: "
                f"{self.errors[0]}. The client got a 500 response. This is a bug in "
                "pytest-agentctx: please report it with this message."
            )
        super().verify()

    def __repr__(self) -> str:
        where = self.base_url if self.running else "stopped"
        return f"LoopbackProvider({where}, {len(self._script)} scripted, {len(self.calls)} served)"

    # -- serving (called from the server's threads) ----------------------------------

    def _wait(self) -> None:
        if self.event_delay and self._stopping.wait(self.event_delay):
            raise _Stopped


def _accept_loop(server: _Server, wake: socket.socket) -> None:
    """Accept connections until ``wake`` is readable (the provider is stopping)."""
    with selectors.DefaultSelector() as selector:
        selector.register(server.socket, selectors.EVENT_READ)
        selector.register(wake, selectors.EVENT_READ)
        while True:
            for key, _ in selector.select():
                if key.fileobj is wake:
                    return
                server.handle_request()


class _Server(ThreadingHTTPServer):
    """One thread per connection; ``server_close`` joins them all."""

    daemon_threads = False
    block_on_close = True

    def __init__(self, provider: LoopbackProvider, port: int) -> None:
        self.provider = provider
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        super().__init__((HOST, port), _Handler)
        # A client that resets its connection before it is accepted must not leave the
        # accept loop blocked in accept(): it would never see the provider stop.
        self.socket.setblocking(False)

    def server_bind(self) -> None:
        # HTTPServer.server_bind looks the host name up (getfqdn); a loopback server
        # has no use for it, and must not wait on DNS.
        TCPServer.server_bind(self)
        self.server_name = HOST
        self.server_port = self.server_address[1]

    def process_request(self, request: _Request, client_address: object) -> None:
        if isinstance(request, socket.socket):  # a TCP server's requests are its connections
            with self._connections_lock:
                self._connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: _Request) -> None:
        if isinstance(request, socket.socket):
            with self._connections_lock:
                self._connections.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request: _Request, client_address: object) -> None:
        # A client that goes away (closes or resets its keep-alive connection, stops
        # reading a stream) is what clients do: no traceback on the test's stderr for it.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)

    def close_connections(self) -> None:
        """End every open connection, so idle keep-alive threads return."""
        with self._connections_lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):  # already closed by its own thread
                connection.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # each streamed event leaves at once
    timeout = 60  # an idle keep-alive connection is closed after a minute
    server: _Server

    def log_message(self, format: str, *args: object) -> None:
        """Silence the per-request log on stderr."""

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    # -- one request -----------------------------------------------------------------

    def _serve(self) -> None:
        provider = self.server.provider
        self._started = False
        try:
            self._respond(provider)
        except (_Stopped, ConnectionError, TimeoutError):
            self.close_connection = True
        except _BadRequest as exc:
            self.close_connection = True
            message = f"pytest-agentctx loopback could not read the request body: {exc}"
            self._send_json(400, wire_error("openai", 400, message), provider, False, False)
        except Exception as exc:
            provider.errors.append(f"{self.command} {self.path}: {type(exc).__name__}: {exc}")
            self.close_connection = True
            if not self._started:
                message = f"pytest-agentctx loopback failed: {type(exc).__name__}: {exc}"
                self._send_json(500, wire_error("openai", 500, message), provider, False, False)

    def _respond(self, provider: LoopbackProvider) -> None:
        body = self._read_body()
        headers = {name.lower(): value for name, value in self.headers.items()}
        gzipped = provider.gzip and _accepts_gzip(headers.get("accept-encoding", ""))
        path = urlsplit(self.path).path.rstrip("/")

        def log(status: int, streamed: bool = False) -> None:
            provider.exchanges.append(
                LoopbackExchange(self.command, self.path, headers, body, status, streamed, gzipped)
            )

        wire = _wire_of(path)
        if wire is None:
            log(404)
            message = (
                f"pytest-agentctx loopback has no endpoint {self.command} {self.path}; it "
                "serves POST /v1/chat/completions, /v1/responses (also without /v1), "
                "/v1/messages, /<version>/models/<model>:generateContent (or "
                ":streamGenerateContent) and Bedrock's /model/<model id>/converse (or "
                "/converse-stream, /invoke, /invoke-with-response-stream)."
            )
            self._send_json(404, wire_error("openai", 404, message), provider, gzipped, False)
            return
        anthropic = wire == "anthropic"
        if self.command != "POST":
            log(405)
            message = f"pytest-agentctx loopback: {path} takes POST, not {self.command}."
            self._send_json(405, wire_error(wire, 405, message), provider, gzipped, anthropic, wire)
            return
        # Model calls are logged (and their codec found) by their canonical /v1 path;
        # Gemini's and Bedrock's paths name the model (and Gemini's its version), and are kept.
        if wire not in ("gemini", "bedrock") and not path.startswith("/v1/"):
            path = f"/v1{path}"
        answer = provider.answer(path, body)
        if answer is None:
            raise LoopbackError(f"no codec answers {path}, which the server routes to a model")
        if answer.status != 200 or answer.completion is None:
            log(answer.status)
            error = wire_error(wire, answer.status, answer.error or "scripted failure")
            self._send_json(answer.status, error, provider, gzipped, anthropic, wire)
            return
        if answer.eventstream:
            log(200, streamed=True)
            self._send_eventstream(answer.event_messages(), provider)
            return
        if answer.request is not None and answer.request.stream:
            log(200, streamed=True)
            if wire == "gemini" and gemini.is_array_stream(self.path):
                self._send_chunks(
                    gemini.array_chunks(answer.stream_events()),
                    "application/json; charset=UTF-8",
                    provider,
                    gzipped,
                )
                return
            self._send_stream(answer.stream_events(), provider, gzipped, anthropic)
            return
        log(200)
        self._send_json(200, answer.response, provider, gzipped, anthropic)

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("transfer-encoding", "").lower():
            parts: list[bytes] = []
            while True:
                line = self.rfile.readline()
                try:
                    size = int(line.split(b";")[0].strip(), 16)
                except ValueError:
                    raise _BadRequest(f"chunk size {line[:20]!r} is not hexadecimal") from None
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        raw = self.headers.get("content-length") or "0"
        try:
            length = int(raw)
        except ValueError:
            raise _BadRequest(f"content-length {raw!r} is not a number") from None
        return self.rfile.read(length) if length > 0 else b""

    # -- writing ---------------------------------------------------------------------

    def _head(
        self,
        status: int,
        headers: Iterable[tuple[str, str]],
        provider: LoopbackProvider,
        anthropic: bool,
    ) -> None:
        """The status line and headers, with a request id as the provider sends it."""
        request_id = provider._ids("req")
        self.send_response_only(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("x-request-id", request_id)
        if anthropic:
            self.send_header("request-id", request_id)
        self.end_headers()
        self._started = True

    def _send_json(
        self,
        status: int,
        data: object,
        provider: LoopbackProvider,
        gzipped: bool,
        anthropic: bool,
        wire: str = "",
    ) -> None:
        payload = json.dumps(data, ensure_ascii=False).encode()
        headers = [("content-type", "application/json")]
        if status != 200:
            headers.append(("x-should-retry", "false"))
            if wire == "bedrock":
                # botocore reads the error's code from this header (its ClientError's code).
                headers.append(("x-amzn-errortype", bedrock_error_type(status)))
        if gzipped:
            payload = gzip_module.compress(payload, mtime=0)
            headers.append(("content-encoding", "gzip"))
        headers.append(("content-length", str(len(payload))))
        self._head(status, headers, provider, anthropic)
        self.wfile.write(payload)

    def _send_stream(
        self,
        events: list[SSEEvent],
        provider: LoopbackProvider,
        gzipped: bool,
        anthropic: bool,
    ) -> None:
        chunks = [format_sse([event]) for event in events]
        self._send_chunks(chunks, "text/event-stream; charset=utf-8", provider, gzipped, anthropic)

    def _send_chunks(
        self,
        chunks: list[bytes],
        content_type: str,
        provider: LoopbackProvider,
        gzipped: bool,
        anthropic: bool = False,
    ) -> None:
        """A streamed response: ``chunks`` (events, or the pieces of Gemini's JSON array)
        flushed one by one."""
        headers = [
            ("content-type", content_type),
            ("cache-control", "no-cache"),
            ("transfer-encoding", "chunked"),
        ]
        if gzipped:
            headers.append(("content-encoding", "gzip"))
        self._head(200, headers, provider, anthropic)
        compressor = zlib.compressobj(wbits=31) if gzipped else None  # 31: gzip framing
        for data in chunks:
            provider._wait()
            if compressor is not None:
                data = compressor.compress(data) + compressor.flush(zlib.Z_SYNC_FLUSH)
            self._write_chunk(data)
        if compressor is not None:
            self._write_chunk(compressor.flush())
        self.wfile.write(b"0\r\n\r\n")

    def _send_eventstream(self, messages: list[EventMessage], provider: LoopbackProvider) -> None:
        """Bedrock's stream: AWS event-stream messages, one chunk each (never gzipped:
        Bedrock does not compress its streams)."""
        headers = [
            ("content-type", "application/vnd.amazon.eventstream"),
            ("transfer-encoding", "chunked"),
        ]
        self._head(200, headers, provider, False)
        for message in messages:
            provider._wait()
            self._write_chunk(encode_message(message))
        self.wfile.write(b"0\r\n\r\n")

    def _write_chunk(self, data: bytes) -> None:
        if data:
            self.wfile.write(b"%x\r\n%b\r\n" % (len(data), data))


def _accepts_gzip(accept_encoding: str) -> bool:
    for item in accept_encoding.split(","):
        coding, _, params = item.partition(";")
        if coding.strip().lower() == "gzip":
            return params.replace(" ", "") not in ("q=0", "q=0.0", "q=0.00", "q=0.000")
    return False


def _wire_of(path: str) -> str | None:
    """Which API a model endpoint's path belongs to (``None``: no model endpoint)."""
    if path in _MODEL_PATHS:
        return "anthropic" if path.endswith("/messages") else "openai"
    if gemini.model_of_path(path) and path.endswith((":generateContent", ":streamGenerateContent")):
        return "gemini"
    if bedrock.model_of_path(path):
        return "bedrock"
    return None
