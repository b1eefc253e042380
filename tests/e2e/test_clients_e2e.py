"""End-to-end tests of the client libraries other than httpx: ``requests`` and ``urllib3``
record into the test's cassette and replay from it, as the SDKs' httpx2 calls do; one test
mixes httpx2, requests and aiohttp in one cassette.

The outer test starts ``ToolServer`` on 127.0.0.1 (a weather API and an OpenAI-compatible
chat completions endpoint) and hands its URL to the inner tests in ``TOOL_SERVER``. Each
case records with ``--agent-record``, then the server is stopped and the same tests replay:
a request the cassette did not answer would find no server.
"""

from __future__ import annotations

import gzip
import json
import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

import aiohttp  # noqa: F401  (imported here so the inner runs do not import it again)
import openai  # noqa: F401  (same)
import pytest
import requests  # noqa: F401  (same)
import responses  # noqa: F401  (same)
import urllib3  # noqa: F401  (same)
import vcr  # noqa: F401  (same)
from support.http_server import ServerThread
from support.wire import chat_completion

#: Server-sent events of /events, each written as one HTTP chunk.
EVENTS = [b'data: {"n":0}\n\n', b'data: {"n":1}\n\n', b"data: [DONE]\n\n"]


class Handler(BaseHTTPRequestHandler):
    """The routes of :class:`ToolServer`; each request's path goes to ``hits``."""

    hits: list[str]
    lock: threading.Lock

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        with self.lock:
            self.hits.append(self.path)
        parts = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        route = getattr(self, "route_" + parts.path.strip("/"), None)
        if route is None:
            self.send_json(404, {"error": "no such path"})
        else:
            route(query)

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        request = json.loads(self.rfile.read(length) or b"{}")
        with self.lock:
            self.hits.append(self.path)
        text = "asked: " + request["messages"][-1]["content"]
        self.send_json(200, chat_completion(text))

    def send_json(self, status: int, value: Any, **headers: str) -> None:
        body = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, header in headers.items():
            self.send_header(name.replace("_", "-"), header)
        self.end_headers()
        self.wfile.write(body)

    def send_chunks(self, content_type: str, chunks: list[bytes]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for chunk in chunks:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")

    def route_weather(self, query: dict[str, str]) -> None:
        self.send_json(200, {"city": query.get("city"), "temp": 21})

    def route_chunked(self, query: dict[str, str]) -> None:
        self.send_chunks("text/plain", [b"one ", b"two ", b"three"])

    def route_events(self, query: dict[str, str]) -> None:
        self.send_chunks("text/event-stream", EVENTS)

    def route_gzip(self, query: dict[str, str]) -> None:
        body = gzip.compress(json.dumps({"packed": True}).encode())
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def route_broken(self, query: dict[str, str]) -> None:
        self.send_json(500, {"error": "boom"})

    def route_old(self, query: dict[str, str]) -> None:
        self.send_response(302)
        self.send_header("Location", "/weather?city=Oslo")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def route_private(self, query: dict[str, str]) -> None:
        allowed = self.headers.get("Authorization") == "Bearer sk-header-secret-456"
        self.send_json(200 if allowed else 401, {"allowed": allowed})


class ToolServer:
    """A weather API and a chat completions endpoint on 127.0.0.1, speaking HTTP/1.1."""

    def __init__(self) -> None:
        self.hits: list[str] = []
        routes = type("Routes", (Handler,), {"hits": self.hits, "lock": threading.Lock()})
        self._serving = ServerThread(routes)
        self.url: str = self._serving.url
        self._serving.start()

    def stop(self) -> None:
        self._serving.stop()


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ToolServer]:
    serving = ToolServer()
    monkeypatch.setenv("TOOL_SERVER", serving.url)
    try:
        yield serving
    finally:
        serving.stop()


HEADER = """
import os

import pytest
import requests
import urllib3

BASE = os.environ["TOOL_SERVER"]
"""


def _interactions(tester: pytest.Pytester, relative: str) -> list[dict[str, Any]]:
    path = tester.path / "cassettes" / relative
    items: list[dict[str, Any]] = json.loads(path.read_text())["interactions"]
    return items


def _record_then_replay(tester: pytest.Pytester, server: ToolServer, body: str) -> None:
    """Record the inner test, stop the server, replay it: both pass."""
    tester.makepyfile(test_tool=HEADER + body)
    tester.runpytest("--agent-record").assert_outcomes(passed=1)
    hits = len(server.hits)
    assert hits, "the inner test sent nothing to the server while recording"
    server.stop()
    tester.runpytest().assert_outcomes(passed=1)
    assert len(server.hits) == hits


CASES = {
    "json": """
@pytest.mark.agent
def test_case():
    reply = requests.get(BASE + "/weather", params={"city": "Paris"}, timeout=5)
    assert (reply.status_code, reply.reason) == (200, "OK")
    assert reply.headers["content-type"] == "application/json"
    assert reply.json() == {"city": "Paris", "temp": 21}
""",
    "chunked": """
@pytest.mark.agent
def test_case():
    with requests.get(BASE + "/chunked", stream=True, timeout=5) as reply:
        assert b"".join(reply.iter_content(chunk_size=None)) == b"one two three"
""",
    "sse": """
@pytest.mark.agent
def test_case():
    with requests.get(BASE + "/events", stream=True, timeout=5) as reply:
        lines = [line for line in reply.iter_lines() if line]
    assert lines == [b'data: {"n":0}', b'data: {"n":1}', b"data: [DONE]"]
    with requests.get(BASE + "/events", stream=True, timeout=5) as reply:
        chunks = list(reply.iter_content(chunk_size=None))
    assert chunks == [b'data: {"n":0}\\n\\n', b'data: {"n":1}\\n\\n', b"data: [DONE]\\n\\n"]
""",
    "gzip": """
@pytest.mark.agent
def test_case():
    reply = requests.get(BASE + "/gzip", timeout=5)
    assert reply.json() == {"packed": True}
    direct = urllib3.PoolManager().request("GET", BASE + "/gzip")
    assert direct.json() == {"packed": True}
""",
    "error": """
@pytest.mark.agent
def test_case():
    reply = requests.get(BASE + "/broken", timeout=5)
    assert (reply.status_code, reply.reason) == (500, "Internal Server Error")
    assert reply.json() == {"error": "boom"}
    with pytest.raises(requests.HTTPError):
        reply.raise_for_status()
""",
    "redirect": """
@pytest.mark.agent
def test_case():
    reply = requests.get(BASE + "/old", timeout=5)
    assert [step.status_code for step in reply.history] == [302]
    assert reply.url == BASE + "/weather?city=Oslo"
    assert reply.json() == {"city": "Oslo", "temp": 21}
    direct = urllib3.PoolManager().request("GET", BASE + "/old")
    assert direct.json() == {"city": "Oslo", "temp": 21}
""",
    "urllib3": """
@pytest.mark.agent
def test_case():
    http = urllib3.PoolManager()
    reply = http.request("GET", BASE + "/weather", fields={"city": "Rome"})
    assert reply.status == 200
    assert reply.json() == {"city": "Rome", "temp": 21}
    stream = http.request("GET", BASE + "/events", preload_content=False)
    assert list(stream.stream(None)) == [
        b'data: {"n":0}\\n\\n', b'data: {"n":1}\\n\\n', b"data: [DONE]\\n\\n"
    ]
    stream.release_conn()
""",
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_tool_call_records_and_replays_offline(agent_pytester, server, case):
    _record_then_replay(agent_pytester, server, CASES[case])


def test_each_request_of_a_redirect_is_one_interaction(agent_pytester, server):
    _record_then_replay(agent_pytester, server, CASES["redirect"])

    recorded = _interactions(agent_pytester, "test_tool/test_case.json")
    assert [(i["response"]["status"], urlsplit(i["request"]["url"]).path) for i in recorded] == [
        (302, "/old"),
        (200, "/weather"),
        (302, "/old"),
        (200, "/weather"),
    ]


def test_a_gzip_response_is_stored_decoded(agent_pytester, server):
    _record_then_replay(agent_pytester, server, CASES["gzip"])

    first = _interactions(agent_pytester, "test_tool/test_case.json")[0]["response"]
    assert first["body"] == {"json": {"packed": True}}
    assert "content-encoding" not in first["headers"]


def test_secrets_in_headers_and_query_are_redacted(agent_pytester, server):
    secret_query = "sk-query-secret-123"
    _record_then_replay(
        agent_pytester,
        server,
        f"""
@pytest.mark.agent
def test_case():
    reply = requests.get(
        BASE + "/private",
        params={{"city": "Paris", "api_key": "{secret_query}"}},
        headers={{"Authorization": "Bearer sk-header-secret-456"}},
        timeout=5,
    )
    assert reply.json() == {{"allowed": True}}
""",
    )

    text = (agent_pytester.path / "cassettes" / "test_tool" / "test_case.json").read_text()
    assert secret_query not in text
    assert "sk-header-secret-456" not in text
    request = json.loads(text)["interactions"][0]["request"]
    assert request["headers"]["authorization"] == "REDACTED"
    assert "api_key=REDACTED" in request["url"]


def test_a_changed_query_parameter_is_a_miss_that_shows_the_change(agent_pytester, server):
    agent_pytester.makepyfile(test_tool=HEADER + CASES["json"])
    agent_pytester.runpytest("--agent-record").assert_outcomes(passed=1)
    server.stop()
    shutil.rmtree(agent_pytester.path / "__pycache__", ignore_errors=True)
    agent_pytester.makepyfile(test_tool=HEADER + CASES["json"].replace("Paris", "Lyon"))

    result = agent_pytester.runpytest()

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["E *CassetteMiss: *cannot answer GET *city=Lyon (sent through requests)*"]
    )
    result.stdout.fnmatch_lines(["*city=Paris*"])


MIXED = """
import openai


def chat(messages):
    with openai.OpenAI(base_url=BASE + "/v1", api_key="sk-e2e-key", max_retries=0) as client:
        reply = client.chat.completions.create(model="gpt-4o-mini", messages=messages)
    return reply.choices[0].message.content


@pytest.mark.agent
def test_case(agent_context):
    messages = [{"role": "user", "content": "weather?"}]
    messages.append({"role": "assistant", "content": chat(messages)})
    weather = requests.get(BASE + "/weather", params={"city": "Paris"}, timeout=5).json()
    messages.append({"role": "user", "content": f"it is {weather['temp']}"})
    assert chat(messages) == "asked: it is 21"

    assert [exchange.url.split("?")[0] for exchange in agent_context.non_llm] == [
        BASE + "/weather"
    ]
    assert len(agent_context.context.iterations) == 2
"""


def test_a_model_call_and_a_tool_call_share_one_cassette_in_order(agent_pytester, server):
    _record_then_replay(agent_pytester, server, MIXED)

    recorded = _interactions(agent_pytester, "test_tool/test_case.json")
    assert [(i["request"]["method"], urlsplit(i["request"]["url"]).path) for i in recorded] == [
        ("POST", "/v1/chat/completions"),
        ("GET", "/weather"),
        ("POST", "/v1/chat/completions"),
    ]


#: A model call through httpx2 (openai), a tool call through requests, another through
#: aiohttp, then a model call again: one cassette, in this order.
THREE_CLIENTS = """
import aiohttp
import openai


def chat(messages):
    with openai.OpenAI(base_url=BASE + "/v1", api_key="sk-e2e-key", max_retries=0) as client:
        reply = client.chat.completions.create(model="gpt-4o-mini", messages=messages)
    return reply.choices[0].message.content


async def forecast(city):
    async with aiohttp.ClientSession() as session:
        async with session.get(BASE + "/weather", params={"city": city}) as reply:
            return (await reply.json())["temp"]


@pytest.mark.agent
async def test_case(agent_context):
    messages = [{"role": "user", "content": "weather?"}]
    messages.append({"role": "assistant", "content": chat(messages)})
    now = requests.get(BASE + "/weather", params={"city": "Paris"}, timeout=5).json()["temp"]
    later = await forecast("CITY")
    messages.append({"role": "user", "content": f"it is {now}, then {later}"})
    assert chat(messages) == "asked: it is 21, then 21"
    assert len(agent_context.non_llm) == 2
"""


def test_httpx2_requests_and_aiohttp_share_one_cassette_in_order_and_drift_is_caught(
    agent_pytester, server
):
    _record_then_replay(agent_pytester, server, THREE_CLIENTS.replace("CITY", "Oslo"))
    recorded = _interactions(agent_pytester, "test_tool/test_case.json")
    shutil.rmtree(agent_pytester.path / "__pycache__", ignore_errors=True)
    agent_pytester.makepyfile(test_tool=HEADER + THREE_CLIENTS.replace("CITY", "Bergen"))

    drifted = agent_pytester.runpytest()

    assert [(i["request"]["method"], urlsplit(i["request"]["url"]).path) for i in recorded] == [
        ("POST", "/v1/chat/completions"),
        ("GET", "/weather"),
        ("GET", "/weather"),
        ("POST", "/v1/chat/completions"),
    ]
    assert "city=Oslo" in recorded[2]["request"]["url"]
    drifted.assert_outcomes(failed=1)
    drifted.stdout.fnmatch_lines(["E *CassetteMiss: *cannot answer GET *city=Bergen*"])


def test_responses_answers_before_the_cassette_in_the_same_test(agent_pytester, server):
    _record_then_replay(
        agent_pytester,
        server,
        """
import responses


@pytest.mark.agent
def test_case():
    with responses.RequestsMock() as mock:
        mock.get("http://mocked.example/forecast", json={"rain": False})
        assert requests.get("http://mocked.example/forecast", timeout=5).json() == {
            "rain": False
        }
    assert requests.get(BASE + "/weather", params={"city": "Nice"}, timeout=5).json()["temp"]
""",
    )

    recorded = _interactions(agent_pytester, "test_tool/test_case.json")
    assert [urlsplit(i["request"]["url"]).path for i in recorded] == ["/weather"]


def test_vcrpy_below_sees_what_the_cassette_sends_on(agent_pytester, server):
    """vcrpy patches urllib3's connections, below the cassette: recording, both cassettes
    record the request; replaying, the agent's cassette answers and vcrpy sees nothing."""
    _record_then_replay(
        agent_pytester,
        server,
        """
import vcr


@pytest.mark.agent
def test_case():
    with vcr.use_cassette("vcr_cassettes/weather.yaml", record_mode="once") as cassette:
        reply = requests.get(BASE + "/weather", params={"city": "Bern"}, timeout=5)
        assert reply.json() == {"city": "Bern", "temp": 21}
    print("vcrpy played", cassette.play_count)
""",
    )

    assert (agent_pytester.path / "vcr_cassettes" / "weather.yaml").exists()
    assert len(_interactions(agent_pytester, "test_tool/test_case.json")) == 1


def test_a_request_with_no_recording_is_a_miss_not_a_refusal(agent_pytester):
    agent_pytester.makepyfile(
        test_tool="""
import pytest
import requests

@pytest.mark.agent
def test_case():
    reply = requests.get("http://192.0.2.1/weather?city=Paris", timeout=2)
    assert reply.status_code == 599
"""
    )

    result = agent_pytester.runpytest()

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "E *CassetteMiss: Cassette *test_case.json cannot answer GET "
            "192.0.2.1/weather?city=Paris (sent through requests): there is no cassette.*"
        ]
    )
