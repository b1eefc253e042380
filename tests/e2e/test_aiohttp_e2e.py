"""End-to-end tests of aiohttp traffic in cassettes: recorded with ``--agent-record`` against
a server on 127.0.0.1 that the outer test starts, then replayed with the server stopped
(the socket guard refuses any connection a replay would try).

The inner tests talk to the server through ``aiohttp.ClientSession``: JSON, a chunked
body, server-sent events read line by line, a gzip body, an error status with
``raise_for_status``, a redirect that sets a cookie, secrets in a header and the query
string, and a model call through the ``openai`` SDK beside a tool call through aiohttp.
"""

from __future__ import annotations

import gzip
import json
import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import urlsplit

import aiohttp  # noqa: F401  (imported here so the inner runs do not import it again)
import openai  # noqa: F401  (same)
import pytest
import yaml  # noqa: F401  (same: a second import of its C loader breaks it)
from support.http_server import ServerThread
from support.wire import chat_completion

SECRET = "sk-aiohttp-e2e-secret-1234"


class _Handler(BaseHTTPRequestHandler):
    """The routes of :class:`Service` (``owner``: the service it serves)."""

    owner: Service

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, body: bytes, **headers: str) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _hit(self) -> str:
        path = urlsplit(self.path).path
        with self.owner._lock:
            self.owner.hits.append(path)
        return path

    def do_POST(self) -> None:
        path = self._hit()
        length = int(self.headers.get("content-length") or 0)
        request = json.loads(self.rfile.read(length) or b"{}")
        if path == "/v1/chat/completions":
            text = f"{self.owner.version}: {request['messages'][-1]['content']}"
            body = json.dumps(chat_completion(text)).encode()
        else:
            body = json.dumps({"got": request, "version": self.owner.version}).encode()
        self._send(200, body, content_type="application/json")

    def do_GET(self) -> None:
        path = self._hit()
        getattr(self, "get_" + path.strip("/"), self.get_secret)()

    def get_chunked(self) -> None:
        self.protocol_version = "HTTP/1.1"
        self.send_response(200)
        self.send_header("content-type", "text/plain")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("connection", "close")
        self.end_headers()
        for part in (b"one ", b"two ", b"three"):
            self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")

    def get_sse(self) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        for word in ("sunny", "in", "Paris"):
            self.wfile.write(b"data: " + json.dumps({"word": word}).encode() + b"\n\n")
            self.wfile.flush()

    def get_gzip(self) -> None:
        body = gzip.compress(json.dumps({"packed": self.owner.version}).encode())
        self._send(200, body, content_type="application/json", content_encoding="gzip")

    def get_error(self) -> None:
        self._send(503, b'{"error": "down"}', content_type="application/json")

    def get_moved(self) -> None:
        self._send(302, b"", location="/landing", set_cookie="hop=1; Path=/")

    def get_landing(self) -> None:
        cookie = self.headers.get("cookie", "")
        self._send(200, json.dumps({"cookie": cookie}).encode())

    def get_secret(self) -> None:
        body = json.dumps({"ok": True, "version": self.owner.version}).encode()
        self._send(200, body, content_type="application/json")


class Service:
    """A tool's HTTP service on 127.0.0.1 (one connection per request), and an
    OpenAI-compatible chat completions endpoint for the mixed test."""

    def __init__(self) -> None:
        self.version = "v1"
        self.hits: list[str] = []
        self._lock = threading.Lock()
        self._serving = ServerThread(type("Handler", (_Handler,), {"owner": self}))
        self.url: str = self._serving.url
        self._serving.start()

    def stop(self) -> None:
        self._serving.stop()


@pytest.fixture
def service(monkeypatch: pytest.MonkeyPatch) -> Iterator[Service]:
    server = Service()
    monkeypatch.setenv("AGENT_SERVER", server.url)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def tester(agent_pytester: pytest.Pytester, service: Service) -> pytest.Pytester:
    return agent_pytester


def _interactions(tester: pytest.Pytester, relative: str) -> list[dict[str, Any]]:
    data = json.loads((tester.path / "cassettes" / relative).read_text())
    interactions: list[dict[str, Any]] = data["interactions"]
    return interactions


def _record_then_replay(tester: pytest.Pytester, service: Service, passed: int) -> None:
    tester.runpytest("--agent-record").assert_outcomes(passed=passed)
    hits = list(service.hits)
    service.stop()

    tester.runpytest().assert_outcomes(passed=passed)

    assert service.hits == hits  # the replay reached no server


KINDS = f"""
import json
import os

import aiohttp
import pytest

BASE = os.environ["AGENT_SERVER"]
SECRET = {SECRET!r}

pytestmark = pytest.mark.agent


async def test_json():
    async with aiohttp.ClientSession() as session:
        async with session.post(BASE + "/echo", json={{"city": "Paris"}}) as response:
            assert response.status == 200
            assert response.reason == "OK"
            assert await response.json() == {{"got": {{"city": "Paris"}}, "version": "v1"}}


async def test_chunked():
    async with aiohttp.ClientSession() as session:
        async with session.get(BASE + "/chunked") as response:
            parts = [part async for part in response.content.iter_chunked(4)]
    assert b"".join(parts) == b"one two three"


async def test_sse_line_by_line():
    words = []
    async with aiohttp.ClientSession() as session:
        async with session.get(BASE + "/sse") as response:
            assert response.headers["content-type"] == "text/event-stream"
            while line := await response.content.readline():
                if line.startswith(b"data: "):
                    words.append(json.loads(line[6:])["word"])
    assert words == ["sunny", "in", "Paris"]


async def test_gzip():
    async with aiohttp.ClientSession() as session:
        async with session.get(BASE + "/gzip") as response:
            assert await response.json() == {{"packed": "v1"}}


async def test_error_status_raises():
    async with aiohttp.ClientSession(raise_for_status=True) as session:
        with pytest.raises(aiohttp.ClientResponseError) as raised:
            await session.get(BASE + "/error")
    assert (raised.value.status, raised.value.message) == (503, "Service Unavailable")


async def test_redirect_with_a_cookie():
    jar = aiohttp.CookieJar(unsafe=True)
    async with aiohttp.ClientSession(cookie_jar=jar) as session:
        async with session.get(BASE + "/moved") as response:
            assert (response.status, response.url.path) == (200, "/landing")
            assert [r.status for r in response.history] == [302]
            assert json.loads(await response.text()) == {{"cookie": "hop=1"}}


async def test_secrets():
    headers = {{"Authorization": "Bearer " + SECRET}}
    async with aiohttp.ClientSession(headers=headers) as session:
        async with session.get(BASE + "/secret", params={{"api_key": SECRET}}) as response:
            assert (await response.json())["ok"] is True
"""


def test_every_kind_of_response_records_then_replays_offline(tester, service):
    tester.makepyfile(test_aio=KINDS)

    _record_then_replay(tester, service, passed=7)

    assert service.hits == [
        "/echo",
        "/chunked",
        "/sse",
        "/gzip",
        "/error",
        "/moved",
        "/landing",
        "/secret",
    ]


def test_the_cassettes_hold_one_readable_interaction_per_request(tester, service):
    tester.makepyfile(test_aio=KINDS)
    tester.runpytest("--agent-record").assert_outcomes(passed=7)

    [sse] = _interactions(tester, "test_aio/test_sse_line_by_line.json")
    [packed] = _interactions(tester, "test_aio/test_gzip.json")
    moved, landing = _interactions(tester, "test_aio/test_redirect_with_a_cookie.json")
    [error] = _interactions(tester, "test_aio/test_error_status_raises.json")

    assert [event["data"]["word"] for event in sse["response"]["body"]["sse"]] == [
        "sunny",
        "in",
        "Paris",
    ]
    assert packed["response"]["body"] == {"json": {"packed": "v1"}}
    assert "content-encoding" not in packed["response"]["headers"]
    assert (moved["response"]["status"], moved["response"]["headers"]["location"]) == (
        302,
        "/landing",
    )
    assert landing["request"]["url"].endswith("/landing")
    assert error["response"]["status"] == 503


def test_secrets_in_the_header_and_the_query_never_reach_the_cassette(tester, service):
    tester.makepyfile(test_aio=KINDS)
    tester.runpytest("--agent-record", "-k", "secrets").assert_outcomes(passed=1, deselected=6)

    text = (tester.path / "cassettes" / "test_aio" / "test_secrets.json").read_text()
    [secret] = json.loads(text)["interactions"]

    assert SECRET not in text
    assert secret["request"]["headers"]["authorization"] == "REDACTED"
    assert "api_key=REDACTED" in secret["request"]["url"]


def test_a_changed_json_body_is_a_cassette_miss_that_shows_the_change(tester, service):
    tester.makepyfile(test_aio=KINDS)
    tester.runpytest("--agent-record", "-k", "test_json").assert_outcomes(passed=1, deselected=6)
    shutil.rmtree(tester.path / "__pycache__", ignore_errors=True)
    tester.makepyfile(test_aio=KINDS.replace('json={"city": "Paris"}', 'json={"city": "Rome"}'))

    result = tester.runpytest("-k", "test_json")

    result.assert_outcomes(failed=1, deselected=6)
    cassette = tester.path / "cassettes" / "test_aio" / "test_json.json"
    result.stdout.fnmatch_lines(
        [
            f"E *CassetteMiss: Cassette {cassette} cannot answer POST 127.0.0.1*"
            "/echo: the cassette has no such request.",
            "    Closest recorded request: interaction #0, POST 127.0.0.1*/echo;"
            " 1 field differs: city",
            '      city: recorded "Paris" != now "Rome"',
        ]
    )


MIXED = """
import os

import aiohttp
import openai
import pytest

BASE = os.environ["AGENT_SERVER"]


@pytest.mark.agent
async def test_model_then_tool_then_model():
    model = openai.AsyncOpenAI(base_url=BASE + "/v1", api_key="sk-e2e-test-key", max_retries=0)
    async with model, aiohttp.ClientSession() as tools:
        first = await model.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "weather?"}]
        )
        async with tools.post(BASE + "/weather", json={"city": "Paris"}) as response:
            weather = await response.json()
        second = await model.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": str(weather["got"])}]
        )
    assert first.choices[0].message.content == "v1: weather?"
    assert second.choices[0].message.content == "v1: {'city': 'Paris'}"
"""


def test_a_model_call_and_a_tool_call_share_one_cassette_in_order(tester, service):
    tester.makepyfile(test_mixed=MIXED)

    _record_then_replay(tester, service, passed=1)

    interactions = _interactions(tester, "test_mixed/test_model_then_tool_then_model.json")
    assert [urlsplit(item["request"]["url"]).path for item in interactions] == [
        "/v1/chat/completions",
        "/weather",
        "/v1/chat/completions",
    ]
