"""End-to-end tests of the ignored hosts (``agent_ignore_hosts``, the ``agent`` marker's and
``agent_cassette_config``'s ``ignore_hosts``), for every client the cassettes record:
an ignored request is never recorded nor replayed, reaches loopback (and the allowed hosts)
while a test replays, gets the client's connection error for any other host without
failing the test (and is listed), and is never refused as late when a background thread
makes it after its test ended.

The outer test starts a server on 127.0.0.1 (``/weather`` stands for what a cassette
records, ``/ping`` for the ignored request, ``agent_ignore_hosts = 127.0.0.1/ping``) and
stops it when it ends; its URL reaches the inner tests in ``TOOL_SERVER``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

import aiohttp  # noqa: F401  (imported here so the inner runs do not import it again)
import httpx  # noqa: F401  (same)
import pytest
import requests  # noqa: F401  (same)
import urllib3  # noqa: F401  (same)
from support.http_server import ServerThread


class Handler(BaseHTTPRequestHandler):
    """``/weather?city=X`` and ``/ping``; each request's path goes to ``hits``."""

    hits: list[str]
    lock: threading.Lock

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        with self.lock:
            self.hits.append(self.path)
        parts = urlsplit(self.path)
        if parts.path == "/ping":
            value: object = {"pong": True}
        else:
            value = {"city": parse_qs(parts.query).get("city", [""])[0], "temp": 21}
        body = json.dumps(value).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def hits(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The paths the server on 127.0.0.1 got, while it serves (for the test's duration)."""
    seen: list[str] = []
    routes = type("Routes", (Handler,), {"hits": seen, "lock": threading.Lock()})
    with ServerThread(routes) as server:
        monkeypatch.setenv("TOOL_SERVER", server.url)
        yield seen


#: ``get(url)``: the JSON a GET gives, through each client; ``CONNECTION_ERROR``: what the
#: client raises when it cannot connect.
CLIENTS = {
    "httpx2": """
import httpx2

CONNECTION_ERROR = httpx2.ConnectError


def get(url):
    with httpx2.Client() as client:
        return client.get(url, timeout=10).json()
""",
    "httpx": """
import httpx

CONNECTION_ERROR = httpx.ConnectError


def get(url):
    with httpx.Client() as client:
        return client.get(url, timeout=10).json()
""",
    "requests": """
import requests

CONNECTION_ERROR = requests.ConnectionError


def get(url):
    return requests.get(url, timeout=10).json()
""",
    "urllib3": """
import urllib3

CONNECTION_ERROR = urllib3.exceptions.NewConnectionError


def get(url):
    with urllib3.PoolManager(retries=False) as pool:
        return pool.request("GET", url, timeout=10).json()
""",
    "aiohttp": """
import asyncio

import aiohttp

CONNECTION_ERROR = aiohttp.ClientConnectorError


async def _get(url):
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        return await response.json()


def get(url):
    return asyncio.run(_get(url))
""",
}

HEADER = """
import os
import threading

import pytest

BASE = os.environ.get("TOOL_SERVER", "")
"""

#: A test that asks the weather (recorded) and pings (ignored).
WEATHER_AND_PING = """

@pytest.mark.agent
def test_case():
    assert get(BASE + "/weather?city=Paris") == {"city": "Paris", "temp": 21}
    assert get(BASE + "/ping") == {"pong": True}
"""


def _project(tester: pytest.Pytester, client: str, body: str, ignore: str) -> None:
    tester.makepyfile(test_tool=HEADER + CLIENTS[client] + body)
    if ignore:
        ini = tester.path.joinpath("tox.ini").read_text()
        tester.makeini(f"{ini}\nagent_ignore_hosts =\n    {ignore}\n")


def _recorded_paths(tester: pytest.Pytester) -> list[str]:
    cassette = tester.path / "cassettes" / "test_tool" / "test_case.json"
    interactions = json.loads(cassette.read_text())["interactions"]
    return [urlsplit(i["request"]["url"]).path for i in interactions]


@pytest.mark.parametrize("client", list(CLIENTS))
def test_an_ignored_request_is_sent_and_not_recorded(
    agent_pytester: pytest.Pytester, hits: list[str], client: str
) -> None:
    _project(agent_pytester, client, WEATHER_AND_PING, "127.0.0.1/ping")

    agent_pytester.runpytest("--agent-record").assert_outcomes(passed=1)

    assert (hits, _recorded_paths(agent_pytester)) == (
        ["/weather?city=Paris", "/ping"],
        ["/weather"],
    )


@pytest.mark.parametrize("client", list(CLIENTS))
def test_an_ignored_loopback_request_is_answered_live_while_the_test_replays(
    agent_pytester: pytest.Pytester, hits: list[str], client: str
) -> None:
    _project(agent_pytester, client, WEATHER_AND_PING, "127.0.0.1/ping")
    agent_pytester.runpytest("--agent-record").assert_outcomes(passed=1)
    cassette = agent_pytester.path / "cassettes" / "test_tool" / "test_case.json"
    recorded = cassette.read_bytes()
    hits.clear()

    agent_pytester.runpytest().assert_outcomes(passed=1)

    assert (hits, cassette.read_bytes()) == (["/ping"], recorded)


#: A test whose tokenizer download fails: the host is ignored, not allowed.
TOKENIZER = """

@pytest.mark.agent
def test_case():
    with pytest.raises(CONNECTION_ERROR):
        get("https://tokenizer.example/v1/vocab.json")
"""


@pytest.mark.parametrize("client", list(CLIENTS))
def test_an_ignored_host_not_allowed_gets_a_connection_error_and_is_listed(
    agent_pytester: pytest.Pytester, client: str
) -> None:
    _project(agent_pytester, client, TOKENIZER, "tokenizer.example")

    result = agent_pytester.runpytest("-v")

    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "*agentctx: ignored requests not sent*",
            "test_tool.py::test_case: GET https://tokenizer.example/v1/vocab.json (ignored by "
            "'tokenizer.example' of agent_ignore_hosts)",
            "1 ignored request(s) not sent:*",
        ]
    )


def test_without_v_the_requests_not_sent_are_counted(agent_pytester: pytest.Pytester) -> None:
    _project(agent_pytester, "httpx2", TOKENIZER, "tokenizer.example")

    result = agent_pytester.runpytest()

    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["1 ignored request(s) not sent:*pytest -v lists them."])
    assert "vocab.json" not in result.stdout.str()


#: A framework's background thread (a tokenizer download, a model-info call) that pings
#: while the first test runs, while the second runs after the first ended, and while a
#: test that is no agent test runs.
BACKGROUND = """

STEPS = [threading.Event() for _ in range(3)]
DONE = [threading.Event() for _ in range(3)]
ANSWERS = []
THREADS = []


def background():
    for step, done in zip(STEPS, DONE):
        step.wait(30)
        try:
            ANSWERS.append(get(BASE + "/ping"))
        except Exception as exc:
            ANSWERS.append(repr(exc))
        done.set()


def ping(step):
    STEPS[step].set()
    DONE[step].wait(30)
    return ANSWERS[step]


@pytest.mark.agent
def test_first():
    THREADS.append(threading.Thread(target=background, daemon=True))
    THREADS[0].start()
    assert ping(0) == {"pong": True}


@pytest.mark.agent
def test_second():
    assert ping(1) == {"pong": True}


def test_third():
    assert ping(2) == {"pong": True}
    THREADS[0].join(30)
"""


@pytest.mark.parametrize("client", list(CLIENTS))
def test_a_background_thread_calling_an_ignored_host_fails_nothing(
    agent_pytester: pytest.Pytester, hits: list[str], client: str
) -> None:
    _project(agent_pytester, client, BACKGROUND, "127.0.0.1/ping")

    result = agent_pytester.runpytest()

    result.assert_outcomes(passed=3)
    assert (result.ret, hits) == (0, ["/ping"] * 3)


#: The test's own ignore_hosts, in its marker or its agent_cassette_config.
MARKER = """

@pytest.mark.agent(ignore_hosts=["127.0.0.1/ping"])
def test_case():
    assert get(BASE + "/weather?city=Paris") == {"city": "Paris", "temp": 21}
    assert get(BASE + "/ping") == {"pong": True}
"""

CONFIG = (
    """

@pytest.fixture
def agent_cassette_config():
    return {"ignore_hosts": ["127.0.0.1/ping"]}
"""
    + WEATHER_AND_PING
)


@pytest.mark.parametrize("body", [MARKER, CONFIG], ids=["marker", "agent_cassette_config"])
def test_a_tests_own_ignored_hosts_are_not_recorded(
    agent_pytester: pytest.Pytester, hits: list[str], body: str
) -> None:
    _project(agent_pytester, "httpx2", body, "")

    agent_pytester.runpytest("--agent-record").assert_outcomes(passed=1)

    assert (hits, _recorded_paths(agent_pytester)) == (
        ["/weather?city=Paris", "/ping"],
        ["/weather"],
    )


def test_a_wrong_ini_entry_is_a_usage_error_naming_it(agent_pytester: pytest.Pytester) -> None:
    _project(agent_pytester, "httpx2", WEATHER_AND_PING, "https://huggingface.co/api")

    result = agent_pytester.runpytest()

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*agent_ignore_hosts: 'https://huggingface.co/api' is a URL: give the host and a "
            "path without the scheme, e.g. 'huggingface.co/api'; expected one entry per line*"
        ]
    )


def test_a_wrong_marker_entry_fails_the_test_naming_it(agent_pytester: pytest.Pytester) -> None:
    body = """

@pytest.mark.agent(ignore_hosts=["localhost:8080"])
def test_case():
    pass
"""
    _project(agent_pytester, "httpx2", body, "")

    result = agent_pytester.runpytest()

    result.assert_outcomes(errors=1)
    assert (
        "@pytest.mark.agent(ignore_hosts=['localhost:8080']) holds 'localhost:8080', which has "
        "a port: ports are not compared, give the host alone, e.g. 'localhost'"
    ) in result.stdout.str()


def test_a_fake_llm_tests_own_ignored_host_is_sent_past_the_fake_model(
    agent_pytester: pytest.Pytester, hits: list[str]
) -> None:
    body = """

@pytest.mark.agent(ignore_hosts=["127.0.0.1/ping"])
def test_case(fake_llm):
    assert get(BASE + "/ping") == {"pong": True}
"""
    _project(agent_pytester, "httpx2", body, "")

    agent_pytester.runpytest().assert_outcomes(passed=1)

    assert hits == ["/ping"]


def test_under_xdist_the_controller_lists_what_the_workers_did_not_send(
    agent_pytester: pytest.Pytester,
) -> None:
    body = """

@pytest.mark.agent
@pytest.mark.parametrize("n", [1, 2])
def test_case(n):
    with pytest.raises(CONNECTION_ERROR):
        get(f"https://tokenizer.example/v{n}/vocab.json")
"""
    _project(agent_pytester, "httpx2", body, "tokenizer.example")

    result = agent_pytester.runpytest_subprocess("-n", "2", "-v")

    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines_random(
        [
            "test_tool.py::test_case?1?: GET https://tokenizer.example/v1/vocab.json*",
            "test_tool.py::test_case?2?: GET https://tokenizer.example/v2/vocab.json*",
            "2 ignored request(s) not sent:*",
        ]
    )
