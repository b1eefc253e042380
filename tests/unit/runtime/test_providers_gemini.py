"""Unit tests of the runtime on Google Gemini (models ``google:...``, :class:`GeminiProvider`).

Runs go through the real ``google-genai`` SDK, answered by :class:`FakeLLM` at the HTTP
transport; the runtime has a :class:`StepClock` and :class:`SequentialIds`.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx2
import pytest
from google import genai
from google.genai import types

from pytest_agentctx import Completion
from pytest_agentctx.context.clock import StepClock
from pytest_agentctx.context.model import AgentContext, Iteration, Message, ToolCall
from pytest_agentctx.doubles.fake_llm import FakeLLM
from pytest_agentctx.doubles.ids import SequentialIds
from pytest_agentctx.runtime.agent import Agent
from pytest_agentctx.runtime.errors import ProviderError
from pytest_agentctx.runtime.loop import AgentRuntime
from pytest_agentctx.runtime.providers import GeminiProvider, default_provider
from pytest_agentctx.runtime.tools import tool
from pytest_agentctx.traffic.codecs import gemini

T0 = datetime(2025, 1, 1, tzinfo=UTC)
SYSTEM = "You answer weather questions."
QUESTION = "Weather in Paris?"
MODEL = "gemini-2.5-flash"


def at(seconds: int) -> datetime:
    return T0 + timedelta(seconds=seconds)


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"18 degrees celsius in {city}"


def weather_agent(**options: Any) -> Agent:
    return Agent(
        name="weather",
        model=f"google:{MODEL}",
        system_prompt=SYSTEM,
        tools=[get_weather],
        **options,
    )


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GEMINI_API_KEY", "test-key")


@pytest.fixture
def fake(keys: None) -> Iterator[FakeLLM]:
    with FakeLLM() as started:
        started.reply_tool_call("get_weather", city="Paris").reply(
            "Sunny, 18 degrees in Paris.", usage={"input_tokens": 80, "output_tokens": 8}
        )
        yield started


def runtime() -> AgentRuntime:
    return AgentRuntime(clock=StepClock(), ids=SequentialIds())


CALL = ToolCall(
    id=gemini.synthetic_call_id("get_weather", {"city": "Paris"}, 0),
    name="get_weather",
    arguments={"city": "Paris"},
)


async def test_a_gemini_run_gives_the_whole_context(fake):
    result = await runtime().run(weather_agent(), QUESTION)

    usage = fake.calls[0].response["usageMetadata"] if fake.calls[0].response else {}
    assert result.context == AgentContext(
        iterations=[
            Iteration(
                number=1,
                messages=[
                    Message(role="system", content=SYSTEM),
                    Message(role="user", content=QUESTION),
                    Message(role="assistant", content=None, tool_calls=[CALL]),
                    Message(
                        role="tool",
                        content="18 degrees celsius in Paris",
                        tool_call_id=CALL.id,
                        name="get_weather",
                    ),
                ],
                tool_calls=[CALL],
                started_at=at(0),
                completed_at=at(2),
                metadata={
                    "model": MODEL,
                    "provider": "google",
                    "stop_reason": "STOP",
                    "usage": {
                        "input_tokens": usage["promptTokenCount"],
                        "output_tokens": usage["candidatesTokenCount"],
                        "total_tokens": usage["totalTokenCount"],
                    },
                },
            ),
            Iteration(
                number=2,
                messages=[Message(role="assistant", content="Sunny, 18 degrees in Paris.")],
                tool_calls=[],
                started_at=at(2),
                completed_at=at(3),
                metadata={
                    "model": MODEL,
                    "provider": "google",
                    "stop_reason": "STOP",
                    "usage": {"input_tokens": 80, "output_tokens": 8, "total_tokens": 88},
                },
            ),
        ],
        current_iteration=2,
        created_at=at(0),
        updated_at=at(3),
    )
    fake.verify()


async def test_a_streamed_run_gives_the_same_context(fake):
    plain = await runtime().run(weather_agent(), QUESTION)
    fake.reply_tool_call("get_weather", city="Paris").reply(
        "Sunny, 18 degrees in Paris.", usage={"input_tokens": 80, "output_tokens": 8}
    )

    streamed = await runtime().run(weather_agent(stream=True), QUESTION)

    assert streamed.context == plain.context
    assert [call.path.rsplit(":", 1)[1] for call in fake.calls] == [
        "generateContent",
        "generateContent",
        "streamGenerateContent",
        "streamGenerateContent",
    ]


async def test_the_model_goes_in_the_url_and_the_rest_in_the_body(fake):
    await runtime().run(weather_agent(max_tokens=256, temperature=0.5), QUESTION)

    second = fake.calls[1]
    assert second.path == f"/v1/models/{MODEL}:generateContent"
    assert "model" not in second.body
    assert second.body["systemInstruction"]["parts"] == [{"text": SYSTEM}]
    assert second.body["generationConfig"] == {"temperature": 0.5, "maxOutputTokens": 256}
    assert second.body["contents"][2] == {
        "parts": [
            {
                "functionResponse": {
                    "name": "get_weather",
                    "response": {"result": "18 degrees celsius in Paris"},
                }
            }
        ],
        "role": "user",
    }
    (declaration,) = second.body["tools"][0]["functionDeclarations"]
    assert declaration["name"] == "get_weather"


def test_the_default_provider_of_google_models_is_gemini():
    assert isinstance(default_provider("google"), GeminiProvider)


async def test_a_run_without_a_key_says_which_variables_to_set(monkeypatch):
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"):
        monkeypatch.delenv(name, raising=False)

    with pytest.raises(ProviderError, match=r"neither GEMINI_API_KEY nor GOOGLE_API_KEY is set"):
        await runtime().run(weather_agent(), QUESTION)


async def test_a_missing_sdk_names_the_extra_to_install(monkeypatch, keys):
    monkeypatch.setitem(sys.modules, "google.genai", None)

    with pytest.raises(ProviderError, match=r"pip install 'pytest-agentctx\[gemini\]'"):
        await GeminiProvider().send({"model": MODEL, "contents": []})


async def test_a_body_without_a_model_is_refused(keys):
    with pytest.raises(ProviderError, match=r"has no 'model'.*encode_request\(model=\.\.\.\)"):
        await GeminiProvider().send({"contents": []})


def mock_client(answer: dict[str, Any], sent: list[httpx2.Request]) -> genai.Client:
    def handler(request: httpx2.Request) -> httpx2.Response:
        sent.append(request)
        return httpx2.Response(200, json=answer)

    transport = httpx2.MockTransport(handler)
    options = types.HttpOptions(
        base_url="https://gateway.example/",
        httpx_async_client=httpx2.AsyncClient(transport=transport),
    )
    return genai.Client(api_key="given-key", http_options=options)


async def test_a_given_client_is_used_and_left_open(keys):
    sent: list[httpx2.Request] = []
    reply = gemini.encode_response(Completion(content="Hi."), response_id="r1")
    client = mock_client(reply, sent)
    provider = GeminiProvider(client=client)
    body = gemini.encode_request(model=MODEL, messages=[{"role": "user", "content": "Hi"}])

    assert await provider.send(body) == reply
    await provider.aclose()

    assert provider.client is client
    assert str(sent[0].url) == f"https://gateway.example/v1/models/{MODEL}:generateContent"
    assert sent[0].headers["x-goog-api-key"] == "given-key"
    assert json.loads(sent[0].content)["contents"] == [{"parts": [{"text": "Hi"}], "role": "user"}]


async def test_an_owned_client_is_closed_and_made_again(fake):
    provider = GeminiProvider()
    body = gemini.encode_request(model=MODEL, messages=[{"role": "user", "content": "Hi"}])
    await provider.send(body)
    first = provider.client
    assert provider._http is not None
    http = list(provider._http)

    await provider.aclose()

    assert [client.is_closed for client in http] == [True, True]
    assert provider.client is not first
    await provider.send(body)
    await provider.aclose()


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_the_same_call_in_two_turns_gets_two_ids(keys, stream):
    with FakeLLM() as fake:
        fake.reply_tool_call("get_weather", city="Paris")
        fake.reply_tool_call("get_weather", city="Paris")
        fake.reply("Sunny twice.")

        result = await runtime().run(weather_agent(stream=stream), QUESTION)

    first, second = (it.tool_calls[0].id for it in result.context.iterations[:2])
    assert first != second
    assert [
        m.tool_call_id for it in result.context.iterations for m in it.messages if m.tool_call_id
    ] == [first, second]
