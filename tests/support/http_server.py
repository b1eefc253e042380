"""A test's HTTP server on 127.0.0.1, served from a thread and stopped without delay.

``socketserver``'s ``serve_forever`` looks at its shutdown flag once per poll interval (0.5 s
by default), so every ``shutdown()`` waits up to half a second. :class:`ServerThread` serves
with a short poll interval, so stopping it takes a few milliseconds, and it is a context
manager that always shuts the server down, closes its socket and joins its thread, also
when the test fails::

    with ServerThread(Handler) as server:
        url = server.url

The test suite imports it by file name (``from support.http_server import ServerThread``):
pytest puts ``tests/`` on ``sys.path`` for ``tests/conftest.py``.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType


def send_json(handler: BaseHTTPRequestHandler, value: object, status: int = 200) -> None:
    """Answer ``handler``'s request with ``value`` as a JSON body, its length given."""
    body = json.dumps(value).encode()
    handler.send_response(status)
    handler.send_header("content-type", "application/json")
    handler.send_header("content-length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


#: How often the serving thread looks whether it is to stop, in seconds.
POLL_INTERVAL = 0.01


class ServerThread:
    """A ``ThreadingHTTPServer`` on 127.0.0.1 (a free port) and the thread serving it.

    The server listens from construction on (its ``url`` is known at once); it answers from
    :meth:`start` on. :meth:`stop` may be called more than once.
    """

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.port: int = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(
            target=self.server.serve_forever,
            kwargs={"poll_interval": POLL_INTERVAL},
            name=f"test-http-server-{self.port}",
            daemon=True,
        )
        self._started = False
        self._stopped = False

    def start(self) -> ServerThread:
        """Serve from a daemon thread (once)."""
        if not self._started:
            self._started = True
            self._thread.start()
        return self

    def stop(self) -> None:
        """Shut the server down, close its socket and join its thread (once)."""
        if self._stopped:
            return
        self._stopped = True
        if self._started:
            self.server.shutdown()
            self._thread.join()
        self.server.server_close()

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()
