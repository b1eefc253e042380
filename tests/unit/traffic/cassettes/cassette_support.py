"""Helpers of the cassette unit tests: a scripted loopback HTTP server and wire bodies.

The server listens on 127.0.0.1 (port 0), answers with HTTP/1.0 (one connection per
request, closed after the response, so shutting it down never waits on a kept-alive
connection) and records every request it receives. A test scripts its answers with
:meth:`Loopback.answer`; an answer's body is a list of parts, each written and flushed on
its own (a streamed response), and a :class:`threading.Event` among them makes the server
wait until the test sets it (proving a recording passes the stream through as it arrives).
"""

from __future__ import annotations

import contextlib
import gzip
import json
import ssl
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from support.http_server import ServerThread

from pytest_agentctx.traffic.cassettes import Cassette

#: One TLS context for every client: building one per client costs ~80 ms.
TLS = ssl.create_default_context()
#: Where the corpus of other tools' cassettes lives in CI (beside the checkout).
CORPUS = Path(__file__).parents[4] / ".." / "shared" / "corpus"
#: How long the server waits for a test's go-ahead before giving up on a streamed part.
GATE_TIMEOUT = 10.0

Part = bytes | threading.Event


@dataclass
class Answer:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    parts: Sequence[Part] = ()


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


class Loopback:
    """A scripted HTTP server on 127.0.0.1; answers are served in order, the last repeats."""

    def __init__(self) -> None:
        self.answers: list[Answer] = []
        self.seen: list[Seen] = []
        #: For each Event among the parts served: whether the test set it in time.
        self.gates: list[bool] = []
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _serve(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                headers = {k.lower(): v for k, v in self.headers.items()}
                answer = owner._next(Seen(self.command, self.path, headers, body))
                self.send_response(answer.status)
                for name, value in answer.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                for part in answer.parts:
                    if isinstance(part, threading.Event):
                        owner.gates.append(part.wait(GATE_TIMEOUT))
                        continue
                    self.wfile.write(part)
                    self.wfile.flush()

            do_GET = do_POST = _serve

        self._serving = ServerThread(Handler)
        self.url: str = self._serving.url

    def _next(self, seen: Seen) -> Answer:
        with self._lock:
            self.seen.append(seen)
            if not self.answers:
                return Answer(404, {"content-type": "text/plain"}, [b"nothing scripted"])
            return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]

    def answer(
        self, status: int = 200, headers: dict[str, str] | None = None, *parts: Part
    ) -> Loopback:
        self.answers.append(Answer(status, dict(headers or {}), parts))
        return self

    def answer_json(self, value: Any, *, gzipped: bool = False, status: int = 200) -> Loopback:
        raw = json.dumps(value).encode()
        headers = {"content-type": "application/json"}
        if gzipped:
            raw = gzip.compress(raw)
            headers["content-encoding"] = "gzip"
        headers["content-length"] = str(len(raw))
        return self.answer(status, headers, raw)

    def answer_sse(self, *parts: Part) -> Loopback:
        return self.answer(200, {"content-type": "text/event-stream"}, *parts)

    def start(self) -> None:
        self._serving.start()

    def stop(self) -> None:
        self._serving.stop()


def chat_completion(content: str) -> dict[str, Any]:
    """A minimal OpenAI chat completion whose assistant message says ``content``."""
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4o-mini",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def chat_chunk(content: str) -> bytes:
    """One server-sent event of a streamed OpenAI chat completion."""
    chunk = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": None}],
    }
    return f"data: {json.dumps(chunk)}\n\n".encode()


@contextlib.contextmanager
def active(cassette: Cassette) -> Iterator[Cassette]:
    """``cassette`` answering requests, and stopped after, whatever happened."""
    cassette.start()
    try:
        yield cassette
    finally:
        cassette.stop()
