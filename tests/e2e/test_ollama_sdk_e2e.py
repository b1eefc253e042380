"""End-to-end: an agent on the ``ollama`` SDK (Ollama's native ``/api/chat``) recorded with
``--agent-record`` against a server on 127.0.0.1 that this test starts, then replayed with
the server stopped, and its context rebuilt from the traffic both times.

The server answers as Ollama does: a tool call without an id (arguments as an object)
while the last message is the user's, the answer once the tool's result is there; a JSON
reply for ``"stream": false`` and an NDJSON stream (``application/x-ndjson``, one object
per line, flushed one by one, the last with ``done: true`` and the counts) otherwise
(Ollama's default; the SDK always says which it wants). The agent loops until the model
stops calling tools, sync and async, streamed and not.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import ollama  # noqa: F401  (imported here so the inner runs do not import it again)
import pytest
from support.http_server import ServerThread

MODEL = "llama3.1"


def _reply(request: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The message Ollama answers ``request`` with, and its pieces as streamed."""
    if request["messages"][-1]["role"] == "user":
        call = {"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
        message = {"role": "assistant", "content": "", "tool_calls": [call]}
        return message, [message]
    text = "Sunny in Paris, 21 °C."
    pieces = ["Sunny", " in", " Paris", ",", " 21", " °C", "."]
    assert "".join(pieces) == text
    return {"role": "assistant", "content": text}, [
        {"role": "assistant", "content": piece} for piece in pieces
    ]


def _done(request: dict[str, Any]) -> dict[str, Any]:
    calls = len(request["messages"])
    return {
        "done": True,
        "done_reason": "stop",
        "total_duration": 1_200_000,
        "load_duration": 40_000,
        "prompt_eval_count": 100 + 10 * calls,
        "prompt_eval_duration": 300_000,
        "eval_count": 7 + calls,
        "eval_duration": 800_000,
    }


class _Handler(BaseHTTPRequestHandler):
    """Ollama's ``/api/chat`` (``owner``: the server it belongs to)."""

    owner: OllamaServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        request = json.loads(self.rfile.read(length) or b"{}")
        with self.owner.lock:
            self.owner.requests.append(request)
        if self.path != "/api/chat":
            body = json.dumps({"error": f"404 page not found: {self.path}"}).encode()
            self.send_response(404)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        message, pieces = _reply(request)
        head = {"model": MODEL, "created_at": "2026-01-05T10:00:00.000000Z"}
        if request.get("stream", True) is False:
            body = json.dumps({**head, "message": message, **_done(request)}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json; charset=utf-8")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        lines = [{**head, "message": piece, "done": False} for piece in pieces]
        lines.append({**head, "message": {"role": "assistant", "content": ""}, **_done(request)})
        self.send_response(200)
        self.send_header("content-type", "application/x-ndjson")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for line in lines:
            data = json.dumps(line, ensure_ascii=False).encode() + b"\n"
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")


class OllamaServer:
    """An Ollama server on 127.0.0.1 that plays the weather tool loop."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self._serving = ServerThread(type("Handler", (_Handler,), {"owner": self}))
        self.url: str = self._serving.url
        self._serving.start()

    def stop(self) -> None:
        self._serving.stop()


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[OllamaServer]:
    serving = OllamaServer()
    monkeypatch.setenv("OLLAMA_TEST_HOST", serving.url)
    try:
        yield serving
    finally:
        serving.stop()


PROJECT = """
import os

import ollama
import pytest

from pytest_agentctx import Trajectory

HOST = os.environ["OLLAMA_TEST_HOST"]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]


def get_weather(city):
    return f"Sunny, 21 °C in {city}"


def answer(messages, calls):
    for call in calls:
        result = get_weather(**call.function.arguments)
        messages.append({"role": "tool", "content": result, "tool_name": call.function.name})


def agent(client, question):
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": question}]
    while True:
        reply = client.chat(model="llama3.1", messages=messages, tools=TOOLS, stream=False)
        messages.append(reply.message)
        if not reply.message.tool_calls:
            return reply.message.content
        answer(messages, reply.message.tool_calls)


def streaming_agent(client, question):
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": question}]
    while True:
        text, calls = "", []
        for chunk in client.chat(model="llama3.1", messages=messages, tools=TOOLS, stream=True):
            text += chunk.message.content or ""
            calls.extend(chunk.message.tool_calls or [])
        messages.append({"role": "assistant", "content": text, "tool_calls": calls})
        if not calls:
            return text
        answer(messages, calls)


async def async_streaming_agent(client, question):
    messages = [{"role": "user", "content": question}]
    while True:
        text, calls = "", []
        stream = await client.chat(model="llama3.1", messages=messages, tools=TOOLS, stream=True)
        async for chunk in stream:
            text += chunk.message.content or ""
            calls.extend(chunk.message.tool_calls or [])
        messages.append({"role": "assistant", "content": text, "tool_calls": calls})
        if not calls:
            return text
        answer(messages, calls)


def check(context, first_input_tokens):
    assert context == Trajectory([("get_weather", {"city": "Paris"})])
    first, second = context.iterations
    call = first.tool_calls[0]
    result = first.messages[-1]
    assert (result.role, result.tool_call_id, result.name) == ("tool", call.id, "get_weather")
    assert result.content == "Sunny, 21 °C in Paris"
    assert [it.metadata["provider"] for it in context.iterations] == ["ollama", "ollama"]
    assert first.metadata["model"] == "llama3.1"
    assert first.metadata["usage"]["input_tokens"] == first_input_tokens
    assert second.metadata["stop_reason"] == "stop"
    assert context.final_output == "Sunny in Paris, 21 °C."


@pytest.fixture
def client():
    sdk = ollama.Client(host=HOST)  # no __enter__ in ollama 0.6
    yield sdk
    sdk.close()


@pytest.fixture
async def aclient():
    sdk = ollama.AsyncClient(host=HOST)
    yield sdk
    await sdk.close()


@pytest.mark.agent
def test_sync_agent(client, agent_context):
    assert agent(client, "Weather in Paris?") == "Sunny in Paris, 21 °C."
    check(agent_context.context, first_input_tokens=120)


@pytest.mark.agent
def test_sync_streaming_agent(client, agent_context):
    assert streaming_agent(client, "Weather in Paris?") == "Sunny in Paris, 21 °C."
    check(agent_context.context, first_input_tokens=120)


@pytest.mark.agent
async def test_async_streaming_agent(aclient, agent_context):
    assert await async_streaming_agent(aclient, "Weather in Paris?") == "Sunny in Paris, 21 °C."
    check(agent_context.context, first_input_tokens=110)
"""


def test_an_ollama_agent_is_recorded_then_replayed_offline_with_its_context(
    agent_pytester: pytest.Pytester, server: OllamaServer
) -> None:
    agent_pytester.makepyfile(test_ollama_agent=PROJECT)

    agent_pytester.runpytest("-p", "no:cacheprovider", "--agent-record").assert_outcomes(passed=3)
    requests = list(server.requests)
    server.stop()
    replayed = agent_pytester.runpytest("-p", "no:cacheprovider")

    replayed.assert_outcomes(passed=3)
    assert server.requests == requests  # the replay reached no server
    assert [request.get("stream") for request in requests] == [False, False, True, True, True, True]


def test_the_cassette_keeps_the_ndjson_stream_as_its_text(
    agent_pytester: pytest.Pytester, server: OllamaServer
) -> None:
    agent_pytester.makepyfile(test_ollama_agent=PROJECT)
    agent_pytester.runpytest("-p", "no:cacheprovider", "--agent-record").assert_outcomes(passed=3)

    path = (
        agent_pytester.path / "cassettes" / "test_ollama_agent" / "test_sync_streaming_agent.json"
    )
    first, second = json.loads(path.read_text(encoding="utf-8"))["interactions"]

    assert first["request"]["url"].endswith("/api/chat")
    text = second["response"]["body"]["text"]
    assert [json.loads(line)["done"] for line in text.splitlines()] == [False] * 7 + [True]
