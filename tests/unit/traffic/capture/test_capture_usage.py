"""A scripted usage with cache and reasoning figures, served by the fake model to the real
SDKs (``openai``, ``anthropic``, ``google-genai``, ``boto3``) in each provider's own fields,
is captured back into the iteration's ``metadata["usage"]`` with the same breakdown."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import boto3
import openai
import pytest
from botocore.config import Config
from google import genai

from pytest_agentctx import FakeLLM, capture_contexts
from pytest_agentctx.doubles.errors import FakeLLMError
from pytest_agentctx.doubles.scripted_usage import USAGE_KEYS

BASE = {"input_tokens": 1000, "output_tokens": 300, "service_tier": "priority"}
#: The figures each format has fields for, scripted; the captured usage must equal them.
OPENAI = {**BASE, "cache_read_tokens": 900, "cache_write_tokens": 40, "reasoning_tokens": 250}
ANTHROPIC = {
    **BASE,
    "cache_read_tokens": 600,
    "cache_write_tokens": 300,
    "cache_write_1h_tokens": 100,
}
GEMINI = {**BASE, "cache_read_tokens": 900, "reasoning_tokens": 250}
QUESTION: list[Any] = [{"role": "user", "content": "Weather in Paris?"}]


def _expected(scripted: dict[str, Any]) -> dict[str, Any]:
    cached = scripted.get("cache_read_tokens", 0) + scripted.get("cache_write_tokens", 0)
    return {
        **scripted,
        "total_tokens": scripted["input_tokens"] + scripted["output_tokens"],
        "uncached_input_tokens": scripted["input_tokens"] - cached,
    }


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE", "GOOGLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GEMINI_API_KEY", "test-key")


@pytest.fixture
def fake(no_keys: None) -> Iterator[FakeLLM]:
    with FakeLLM() as started:
        yield started


def _openai() -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(api_key="sk-test", base_url="http://127.0.0.1:9/v1", max_retries=0)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_openai_chat_usage_round_trips_through_the_sdk(fake, stream):
    fake.reply("Sunny.", usage=OPENAI)
    with capture_contexts() as runs:
        async with _openai() as client:
            if stream:
                chunks = await client.chat.completions.create(
                    model="gpt-5",
                    messages=QUESTION,
                    stream=True,
                    stream_options={"include_usage": True},
                )
                async for _ in chunks:
                    pass
            else:
                reply = await client.chat.completions.create(model="gpt-5", messages=QUESTION)
                assert reply.usage is not None
                assert reply.usage.prompt_tokens_details is not None
                assert reply.usage.prompt_tokens_details.cached_tokens == 900
                assert reply.service_tier == "priority"

    assert runs.context.iterations[0].metadata["usage"] == _expected(OPENAI)


async def test_openai_responses_usage_round_trips_through_the_sdk(fake):
    fake.reply("Sunny.", usage=OPENAI)
    with capture_contexts() as runs:
        async with _openai() as client:
            reply = await client.responses.create(model="gpt-5", input="Weather in Paris?")
            assert reply.usage is not None
            assert reply.usage.output_tokens_details.reasoning_tokens == 250

    assert runs.context.iterations[0].metadata["usage"] == _expected(OPENAI)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_anthropic_usage_round_trips_through_the_sdk(fake, stream):
    fake.reply("Sunny.", usage=ANTHROPIC)
    message: Any
    with capture_contexts() as runs:
        async with anthropic.AsyncAnthropic(
            api_key="sk-ant-test", base_url="http://127.0.0.1:9", max_retries=0
        ) as client:
            if stream:
                async with client.messages.stream(
                    model="claude-haiku-4-5",
                    max_tokens=64,
                    messages=QUESTION,
                ) as events:
                    message = await events.get_final_message()
            else:
                message = await client.messages.create(
                    model="claude-haiku-4-5",
                    max_tokens=64,
                    messages=QUESTION,
                )
    assert (message.usage.input_tokens, message.usage.cache_read_input_tokens) == (100, 600)

    assert runs.context.iterations[0].metadata["usage"] == _expected(ANTHROPIC)


def test_gemini_usage_round_trips_through_the_sdk(fake):
    fake.reply("Sunny.", usage=GEMINI)
    client = genai.Client()
    with capture_contexts() as runs:
        response = client.models.generate_content(
            model="gemini-2.5-flash", contents="Weather in Paris?"
        )
    assert response.usage_metadata is not None
    assert response.usage_metadata.thoughts_token_count == 250

    assert runs.context.iterations[0].metadata["usage"] == _expected(GEMINI)


@pytest.mark.parametrize("stream", [False, True], ids=["converse", "converse-stream"])
def test_bedrock_usage_round_trips_through_boto3(fake, stream):
    fake.reply("Sunny.", usage=ANTHROPIC)
    client: Any = boto3.client(
        "bedrock-runtime", region_name="us-east-1", config=Config(retries={"total_max_attempts": 1})
    )
    messages = [{"role": "user", "content": [{"text": "Weather in Paris?"}]}]
    model = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    with capture_contexts() as runs:
        if stream:
            for _ in client.converse_stream(modelId=model, messages=messages)["stream"]:
                pass
        else:
            reply = client.converse(modelId=model, messages=messages)
            assert reply["usage"]["cacheWriteInputTokens"] == 300
            assert reply["serviceTier"] == {"type": "priority"}

    assert runs.context.iterations[0].metadata["usage"] == _expected(ANTHROPIC)


@pytest.mark.parametrize("stream", [False, True], ids=["invoke", "invoke-stream"])
def test_bedrock_invoke_model_with_an_anthropic_body_round_trips_as_anthropic(fake, stream):
    fake.reply("Sunny.", usage=ANTHROPIC)
    client: Any = boto3.client(
        "bedrock-runtime", region_name="us-east-1", config=Config(retries={"total_max_attempts": 1})
    )
    body = json.dumps(
        {"anthropic_version": "bedrock-2023-05-31", "max_tokens": 64, "messages": QUESTION}
    )
    model = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    with capture_contexts() as runs:
        if stream:
            answer = client.invoke_model_with_response_stream(modelId=model, body=body)
            for _ in answer["body"]:
                pass
        else:
            answer = client.invoke_model(modelId=model, body=body)
            reply = json.loads(answer["body"].read())
            assert reply["usage"]["cache_creation"]["ephemeral_1h_input_tokens"] == 100

    assert runs.context.iterations[0].metadata["usage"] == _expected(ANTHROPIC)


def test_a_scripted_usage_with_an_unknown_key_names_the_keys_it_takes():
    with pytest.raises(FakeLLMError) as raised:
        FakeLLM().reply("Hi.", usage={"input_tokens": 10, "cached_tokens": 5})

    message = str(raised.value)
    assert "unknown key(s) ['cached_tokens']" in message
    assert all(repr(key) in message for key in USAGE_KEYS)


def test_a_scripted_input_smaller_than_its_cache_figures_says_what_to_give_instead():
    with pytest.raises(FakeLLMError, match=r"Give uncached_input_tokens=100 instead"):
        FakeLLM().reply("Hi.", usage={"input_tokens": 100, "cache_read_tokens": 900})


def test_scripted_uncached_input_tokens_add_up_to_the_input_tokens():
    fake = FakeLLM().reply(
        "Hi.", usage={"uncached_input_tokens": 100, "cache_read_tokens": 900, "output_tokens": 5}
    )

    (reply,) = fake._script
    assert reply.usage is not None
    assert (reply.usage.input_tokens, reply.usage.uncached_input_tokens) == (1000, 100)


@pytest.mark.parametrize(
    ("usage", "problem"),
    [
        ({"input_tokens": -1}, r"input_tokens is -1; expected a token count"),
        ({"output_tokens": "5"}, r"output_tokens is '5'; expected a token count"),
        ({"service_tier": 1}, r"service_tier is 1; expected a string"),
        (
            {"cache_write_tokens": 10, "cache_write_1h_tokens": 20},
            r"cache_write_1h_tokens=20 is more than cache_write_tokens=10",
        ),
        (
            {"output_tokens": 10, "reasoning_tokens": 20},
            r"reasoning_tokens=20 is more than output_tokens=10",
        ),
        (
            {"input_tokens": 10, "output_tokens": 1, "total_tokens": 12},
            r"total_tokens=12 is not input_tokens \+ output_tokens \(11\)",
        ),
        (
            {"input_tokens": 1000, "uncached_input_tokens": 50, "cache_read_tokens": 900},
            r"uncached_input_tokens=50 plus the cache figures \(900\) is not input_tokens=1000",
        ),
    ],
)
def test_a_scripted_usage_that_does_not_add_up_is_refused(usage, problem):
    with pytest.raises(FakeLLMError, match=problem):
        FakeLLM().reply("Hi.", usage=usage)
