"""An OpenAI-compatible chat completions server on 127.0.0.1 for end-to-end tests: it
answers ``"<version>: <last user message>"`` and keeps the questions it was asked.

Imported by file name (``from support.chat_server import ChatServer``), like the rest of
``tests/support``.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler
from typing import Any

from support.http_server import ServerThread, send_json
from support.wire import chat_completion


class ChatServer:
    """Answers ``"<version>: <last user message>"``; ``hits`` are the questions asked."""

    def __init__(self) -> None:
        self.version = "v1"
        self.hits: list[str] = []
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                question = json.loads(self.rfile.read(length))["messages"][-1]["content"]
                with owner._lock:
                    owner.hits.append(question)
                send_json(self, chat_completion(f"{owner.version}: {question}"))

        self._serving = ServerThread(Handler)
        self.url: str = self._serving.url
        self._serving.start()

    def stop(self) -> None:
        self._serving.stop()
