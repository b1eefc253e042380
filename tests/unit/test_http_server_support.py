"""Unit tests of the test suite's own HTTP server helper (tests/support/http_server.py)."""

from __future__ import annotations

import time
import urllib.request
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
from support.http_server import ServerThread


class Hello(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        body = b"hello"
        self.send_response(200)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_the_server_answers_and_stops_without_waiting_for_a_poll():
    with ServerThread(Hello) as server:
        with urllib.request.urlopen(f"{server.url}/", timeout=5) as response:
            assert response.read() == b"hello"
        started = time.perf_counter()
        server.stop()
        stopped_in = time.perf_counter() - started

    assert stopped_in < 0.25
    assert not server._thread.is_alive()


def test_the_server_is_stopped_and_its_thread_joined_when_the_test_fails():
    with pytest.raises(ZeroDivisionError), ServerThread(Hello) as server:
        1 / 0  # noqa: B018

    assert not server._thread.is_alive()
    assert server.server.socket.fileno() == -1


def test_a_server_never_started_is_closed_without_waiting():
    server = ServerThread(Hello)

    server.stop()
    server.stop()

    assert server.server.socket.fileno() == -1
