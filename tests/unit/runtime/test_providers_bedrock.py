"""Unit tests of the runtime on Amazon Bedrock (models ``bedrock:...``, :class:`BedrockProvider`).

Runs go through the real ``boto3`` ``bedrock-runtime`` client: its default client answered
by :class:`FakeLLM` at the HTTP transport, or a client given ``endpoint_url`` of a
:class:`LoopbackProvider` on 127.0.0.1. The runtime has a :class:`StepClock` and
:class:`SequentialIds`.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config

from pytest_agentctx.context.clock import StepClock
from pytest_agentctx.doubles.fake_llm import FakeLLM
from pytest_agentctx.doubles.ids import SequentialIds
from pytest_agentctx.doubles.loopback import LoopbackProvider
from pytest_agentctx.runtime.agent import Agent
from pytest_agentctx.runtime.errors import ProviderError
from pytest_agentctx.runtime.loop import AgentRuntime
from pytest_agentctx.runtime.providers import BedrockProvider, default_provider
from pytest_agentctx.runtime.tools import tool

MODEL = "us.anthropic.claude-3-5-haiku-20241022-v1:0"
SYSTEM = "You answer weather questions."
QUESTION = "Weather in Paris?"
CALL = {"id": "tooluse_paris", "name": "get_weather", "arguments": {"city": "Paris"}}


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"18 degrees celsius in {city}"


def weather_agent(**options: Any) -> Agent:
    return Agent(
        name="weather",
        model=f"bedrock:{MODEL}",
        system_prompt=SYSTEM,
        tools=[get_weather],
        **options,
    )


def runtime(**options: Any) -> AgentRuntime:
    return AgentRuntime(clock=StepClock(), ids=SequentialIds(), **options)


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLM]:
    """The fake model, with no AWS credentials or region of the user's: the default client
    runs on the fake's placeholder credentials and the provider's default region."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE", "AWS_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/aws-config")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/aws-credentials")
    with FakeLLM() as started:
        yield script(started)


def script(fake: FakeLLM) -> FakeLLM:
    return fake.reply(tool_calls=[CALL]).reply(
        "Sunny, 18 degrees in Paris.", usage={"input_tokens": 80, "output_tokens": 8}
    )


async def test_a_bedrock_run_calls_the_tool_and_answers(fake):
    result = await runtime().run(weather_agent(), QUESTION)

    assert result.output == "Sunny, 18 degrees in Paris."
    first, second = result.context.iterations
    assert [(call.name, dict(call.arguments)) for call in first.tool_calls] == [
        ("get_weather", {"city": "Paris"})
    ]
    assert first.messages[-1].content == "18 degrees celsius in Paris"
    assert first.messages[-1].tool_call_id == first.tool_calls[0].id
    assert (first.metadata["provider"], first.metadata["stop_reason"]) == ("bedrock", "tool_use")
    assert second.metadata["usage"] == {"input_tokens": 80, "output_tokens": 8, "total_tokens": 88}
    fake.verify()


async def test_the_model_goes_in_the_url_and_the_rest_in_the_converse_body(fake):
    await runtime().run(weather_agent(), QUESTION)

    second = fake.calls[1]
    assert (second.path, second.request.model) == (f"/model/{MODEL}/converse", MODEL)
    assert "modelId" not in second.body
    assert second.body["system"] == [{"text": SYSTEM}]
    (spec,) = second.body["toolConfig"]["tools"]
    assert spec["toolSpec"]["name"] == "get_weather"


async def test_a_streamed_run_gives_the_same_context(fake):
    plain = await runtime().run(weather_agent(), QUESTION)
    script(fake)

    streamed = await runtime().run(weather_agent(stream=True), QUESTION)

    assert streamed.context == plain.context
    assert [call.path.rsplit("/", 1)[1] for call in fake.calls] == [
        "converse",
        "converse",
        "converse-stream",
        "converse-stream",
    ]


async def test_a_given_client_is_used_and_left_open():
    with LoopbackProvider() as server:
        server.reply("Sunny.")
        client = boto3.client(
            "bedrock-runtime",
            region_name="eu-west-1",
            endpoint_url=server.bedrock_endpoint_url,
            aws_access_key_id="AKIDLOOPBACK",
            aws_secret_access_key="loopback-secret",
            config=Config(retries={"total_max_attempts": 1}),
        )
        provider = BedrockProvider(client)

        result = await runtime(providers={"bedrock": provider}).run(weather_agent(), QUESTION)

        assert (result.output, provider.client) == ("Sunny.", client)
        assert server.exchanges[0].path.startswith("/model/us.anthropic.")
        server.verify()


def test_the_default_provider_of_bedrock_models_is_bedrock():
    assert isinstance(default_provider("bedrock"), BedrockProvider)


async def test_a_missing_sdk_names_the_extra_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "boto3", None)

    with pytest.raises(ProviderError, match=r"pip install 'pytest-agentctx\[bedrock\]'"):
        await BedrockProvider().send({"modelId": MODEL, "messages": []})


async def test_a_body_without_a_model_is_refused():
    with pytest.raises(ProviderError, match=r"has no 'modelId'.*encode_request\(model=\.\.\.\)"):
        await BedrockProvider(client=object()).send({"messages": []})
