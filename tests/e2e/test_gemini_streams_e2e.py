"""Gemini streams in both of their forms, recorded against the loopback provider and
replayed offline, with ``agent_context`` showing each tool loop's iterations joined.

``google-genai`` streams with ``alt=sse`` (``generate_content_stream``); without it,
``:streamGenerateContent`` answers one JSON array of chunks, which google-genai never asks
for but other clients (Vertex AI's REST transport, hand-written ``httpx`` clients) do: the
project below writes such a client. Its tool loop also gives the model's bare function
calls ids of its own, as some clients do.
"""

from __future__ import annotations

import pytest

PROJECT = """
import json
from pathlib import Path

import httpx
import pytest
from google import genai
from google.genai import types

from pytest_agentctx import LoopbackProvider, RecordMode, Trajectory

MODEL = "gemini-2.5-flash"
WEATHER = {
    "name": "get_weather",
    "description": "The weather in a city.",
    "parametersJsonSchema": {"type": "object", "properties": {"city": {"type": "string"}}},
}


@pytest.fixture
def model_server(agent_cassette):
    with LoopbackProvider() as server:
        yield server
        if agent_cassette.mode is RecordMode.NONE:
            assert server.exchanges == []
        else:
            server.verify()


def script(server):
    server.reply_tool_call("get_weather", city="Paris").reply("Sunny in Paris.")


def check(context):
    assert context == Trajectory([("get_weather", {"city": "Paris"})])
    first, second = context.iterations
    assert [m.role for m in first.messages] == ["user", "assistant", "tool"]
    assert first.messages[-1].tool_call_id == first.tool_calls[0].id
    assert first.messages[-1].content == "Sunny"
    assert [m.role for m in second.messages] == ["assistant"]
    assert context.final_output == "Sunny in Paris."
    return first.tool_calls[0].id


@pytest.mark.agent
def test_sdk_stream_with_alt_sse(model_server, agent_context):
    script(model_server)
    options = types.HttpOptions(base_url=model_server.gemini_base_url, api_version="v1beta")
    config = types.GenerateContentConfig(
        tools=[types.Tool(function_declarations=[types.FunctionDeclaration(
            name="get_weather",
            description="The weather in a city.",
            parameters_json_schema=WEATHER["parametersJsonSchema"],
        )])]
    )
    contents = [types.Content(role="user", parts=[types.Part(text="Weather in Paris?")])]
    with genai.Client(api_key="test-key", http_options=options) as client:
        while True:
            parts, calls = [], []
            for chunk in client.models.generate_content_stream(
                model=MODEL, contents=contents, config=config
            ):
                parts.extend(chunk.candidates[0].content.parts or [])
                calls.extend(chunk.function_calls or [])
            contents.append(types.Content(role="model", parts=parts))
            if not calls:
                break
            contents.append(types.Content(role="user", parts=[
                types.Part.from_function_response(name=c.name, response={"result": "Sunny"})
                for c in calls
            ]))
    assert "".join(part.text or "" for part in parts) == "Sunny in Paris."
    check(agent_context.context)


def array_agent(base_url, question):
    # A client of its own: streamGenerateContent without alt=sse answers one JSON array;
    # the client numbers the model's function calls itself.
    url = f"{base_url}/v1beta/models/{MODEL}:streamGenerateContent"
    contents = [{"role": "user", "parts": [{"text": question}]}]
    bodies = []
    with httpx.Client() as http:
        for turn in range(5):
            body = {"contents": contents, "tools": [{"functionDeclarations": [WEATHER]}]}
            response = http.post(url, json=body, headers={"x-goog-api-key": "test-key"})
            assert response.headers["content-type"].startswith("application/json")
            bodies.append(response.content)
            chunks = json.loads(response.content)
            parts = [p for c in chunks for p in c["candidates"][0]["content"]["parts"]]
            calls = [p["functionCall"] for p in parts if "functionCall" in p]
            for number, call in enumerate(calls):
                call["id"] = f"client-{turn}-{number}"
            contents.append({"role": "model", "parts": parts})
            if not calls:
                return "".join(p.get("text", "") for p in parts), bodies
            contents.append({"role": "user", "parts": [
                {"functionResponse": {
                    "name": c["name"], "id": c["id"], "response": {"result": "Sunny"}
                }}
                for c in calls
            ]})
    raise AssertionError("the agent did not finish")


@pytest.mark.agent
def test_json_array_stream_with_client_ids(model_server, agent_context, agent_cassette):
    script(model_server)
    answer, bodies = array_agent(model_server.base_url, "Weather in Paris?")
    assert answer == "Sunny in Paris."
    assert bodies[0].startswith(b"[{")
    assert check(agent_context.context) == "client-0-0"
    # Replay serves the bytes the provider sent, byte for byte.
    kept = Path("array-stream-bodies.json")
    if agent_cassette.mode is RecordMode.NONE:
        assert [b.decode() for b in bodies] == json.loads(kept.read_text())
    else:
        kept.write_text(json.dumps([b.decode() for b in bodies]))
"""


def test_gemini_streams_in_both_forms_are_recorded_and_replayed_offline(
    agent_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    agent_pytester.makepyfile(test_gemini_streams=PROJECT)

    recorded = agent_pytester.runpytest("-p", "no:cacheprovider", "--agent-record")
    recorded.assert_outcomes(passed=2)
    cassettes = sorted((agent_pytester.path / "cassettes").rglob("*.json"))
    text = "\n".join(path.read_text(encoding="utf-8") for path in cassettes)
    assert ":streamGenerateContent?alt=sse" in text
    assert ':streamGenerateContent"' in text
    assert "test-key" not in text

    replayed = agent_pytester.runpytest("-p", "no:cacheprovider")
    replayed.assert_outcomes(passed=2)
