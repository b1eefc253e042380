"""Streamable HTTP answered in-process for a :class:`FakeMcp`: its :attr:`FakeMcp.url`
handled at the transport (the package's dispatch, as the fake model's calls are), so the
SDK's HTTP client reaches it without a socket.

A POST of a request gets its JSON answer (``application/json``), of a notification or a
response ``202 Accepted``; ``initialize`` opens a session whose ``Mcp-Session-Id`` the
other requests must carry (400 without it, 404 for one that is closed or unknown); DELETE
closes it; a GET (the standalone stream of server messages, which the fake never sends) is
answered ``405 Method Not Allowed``, which the SDK's client takes as "no stream".
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import json
from collections.abc import Awaitable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

from pytest_agentctx.traffic import transport
from pytest_agentctx.traffic.capture.exchange import Exchange
from pytest_agentctx.traffic.cassettes.body import Body
from pytest_agentctx.traffic.transport import Interceptor, WireRequest, WireResponse

if TYPE_CHECKING:
    from pytest_agentctx.doubles.fake_mcp.server import FakeMcp

SESSION_HEADER = "mcp-session-id"
_T = TypeVar("_T")


class McpHttpEndpoint:
    """The fake's URL answered at the transport while started."""

    def __init__(self, fake: FakeMcp) -> None:
        self.fake = fake
        self.interceptor = Interceptor(self.handle)
        self._sessions: set[str] = set()
        self._opened = 0

    def start(self) -> None:
        self.interceptor.start()

    def stop(self) -> None:
        self.interceptor.stop()

    def handle(self, request: WireRequest) -> WireResponse | Awaitable[WireResponse] | None:
        """Answer a request to the fake's host; ``None`` (pass) for any other."""
        if request.url.host != self.fake.host:
            return None
        # Answered as another tool would: the witnesses started before the fake (a
        # cassette's exchange log) see the exchange, no cassette records it.
        if transport.is_async_request():
            return self._witnessed(request)
        return transport.witnessed_sync(self.handle, request, _run(self._answer(request)))

    async def _witnessed(self, request: WireRequest) -> WireResponse:
        answer = await self._answer(request)
        return await transport.witnessed_async(self.handle, request, answer)

    async def _answer(self, request: WireRequest) -> WireResponse:
        url = str(request.url)
        method = request.method.upper()
        if request.url.path.rstrip("/") != "/mcp":
            return self._reply(method, url, None, 404, f"fake_mcp answers {self.fake.url} only")
        if method == "GET":
            return self._reply(method, url, None, 405, "no standalone stream", allow=True)
        if method == "DELETE":
            session = request.headers.get(SESSION_HEADER)
            if session not in self._sessions:
                return self._reply(method, url, None, 404, f"no session {session!r}")
            self._sessions.discard(session)
            return self._respond(method, url, None, 200, None)
        if method != "POST":
            return self._reply(method, url, None, 405, f"{method} is not answered", allow=True)
        try:
            message = json.loads(request.content)
        except ValueError:
            return self._respond(
                method,
                url,
                {"text": bytes(request.content).decode("utf-8", "replace")},
                400,
                _error_body(-32700, "Parse error: the body is not JSON"),
            )
        sent: Body = {"json": message}
        headers: dict[str, str] = {}
        if _is_initialize(message):
            self._opened += 1
            session = f"fake-mcp-session-{self._opened}"
            self._sessions.add(session)
            headers["mcp-session-id"] = session
        else:
            session = request.headers.get(SESSION_HEADER) or ""
            if not session:
                return self._reply(
                    method, url, sent, 400, f"Bad Request: no {SESSION_HEADER} header"
                )
            if session not in self._sessions:
                return self._reply(method, url, sent, 404, f"Session not found: {session}")
        replies = await self.fake.serve(message)
        if not replies:
            return self._respond(method, url, sent, 202, None)
        body = replies if isinstance(message, list) else replies[0]
        return self._respond(method, url, sent, 200, body, headers)

    def _reply(
        self,
        method: str,
        url: str,
        sent: Body,
        status: int,
        text: str,
        *,
        allow: bool = False,
    ) -> WireResponse:
        headers = {"allow": "POST, DELETE"} if allow else {}
        return self._respond(method, url, sent, status, _error_body(-32600, text), headers)

    def _respond(
        self,
        method: str,
        url: str,
        sent: Body,
        status: int,
        body: object,
        headers: dict[str, str] | None = None,
    ) -> WireResponse:
        reply: Body = None if body is None else {"json": body}
        self.fake._note(Exchange(method, url, status, sent, reply, "fake_mcp"))
        all_headers = dict(headers or {})
        if body is None:
            return transport.make_response(status, content=b"", headers=all_headers)
        all_headers["content-type"] = "application/json"
        content = json.dumps(body, ensure_ascii=False).encode()
        return transport.make_response(status, content=content, headers=all_headers)


def _is_initialize(message: Any) -> bool:
    if isinstance(message, list):
        return any(_is_initialize(item) for item in message)
    return isinstance(message, dict) and message.get("method") == "initialize"


def _error_body(code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}


def _run(coroutine: Coroutine[Any, Any, _T]) -> _T:
    """Run ``coroutine`` for a sync client, in a thread of its own (the caller's thread may
    be running an event loop already)."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        context = contextvars.copy_context()  # the request being handled, for its response
        return pool.submit(context.run, asyncio.run, coroutine).result()
