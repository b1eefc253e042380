"""Unit tests of pytest_agentctx.runtime.providers: model names, default providers, SDK round trips.

The SDK clients are injected and run over ``httpx2.MockTransport``: nothing leaves the
process, and the mock sees exactly what the SDK sent.
"""

from __future__ import annotations

import importlib
import json
import ssl
import threading
from collections.abc import Callable
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from pytest_agentctx.doubles.fake_llm import FakeLLM
from pytest_agentctx.runtime.errors import ProviderError
from pytest_agentctx.runtime.providers import (
    AnthropicMessagesProvider,
    OpenAIChatProvider,
    OpenAIResponsesProvider,
    Provider,
    default_provider,
    split_model,
)
from pytest_agentctx.traffic.codecs import anthropic_messages, openai_chat, openai_responses

_TLS = ssl.create_default_context()

CHAT_RESPONSE: dict[str, Any] = {
    "id": "chatcmpl-BWpGTZY785VsZipCO0bAvF7Z7tjdA",
    "object": "chat.completion",
    "created": 1747163257,
    "model": "gpt-4o-mini-2024-07-18",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "YES", "refusal": None, "annotations": []},
            "logprobs": None,
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 146, "completion_tokens": 3, "total_tokens": 149},
    "service_tier": "default",
    "system_fingerprint": "fp_0392822090",
}

# pydantic-ai recording of POST /v1/responses (trimmed of request echo fields).
RESPONSES_RESPONSE: dict[str, Any] = {
    "created_at": 1761323547,
    "error": None,
    "id": "resp_0e9950da9eac6a780068fbaa1bc030819da585a6f85ddad1e6",
    "incomplete_details": None,
    "model": "gpt-4o-2024-08-06",
    "object": "response",
    "output": [
        {
            "content": [
                {
                    "annotations": [],
                    "logprobs": [],
                    "text": "The capital of PotatoLand is Potato City.",
                    "type": "output_text",
                }
            ],
            "id": "msg_0e9950da9eac6a780068fbaa1c738c819d8bddf998e57232c3",
            "role": "assistant",
            "status": "completed",
            "type": "message",
        }
    ],
    "parallel_tool_calls": True,
    "status": "completed",
    "tool_choice": "auto",
    "tools": [],
    "usage": {
        "input_tokens": 67,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 11,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 78,
    },
}

CHAT_STREAM = (
    b'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":0,'
    b'"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"role":"assistant","content":"YES"},'
    b'"finish_reason":null}]}\n\n'
    b'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":0,'
    b'"model":"gpt-4o-mini","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    b"data: [DONE]\n\n"
)

MESSAGES_STREAM = (
    b"event: message_start\n"
    b'data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant",'
    b'"model":"claude-haiku-4-5","content":[],"stop_reason":null,"stop_sequence":null,'
    b'"usage":{"input_tokens":9,"output_tokens":1}}}\n\n'
    b"event: message_stop\n"
    b'data: {"type":"message_stop"}\n\n'
)

MESSAGES_RESPONSE: dict[str, Any] = {
    "model": "claude-haiku-4-5-20251001",
    "id": "msg_014zmtEjjH4Qx8ntiJdbk36e",
    "type": "message",
    "role": "assistant",
    "content": [{"type": "text", "text": "The weather in Tokyo is sunny."}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {
        "input_tokens": 701,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": 22,
    },
}


class Recorder:
    """An ``httpx2.MockTransport`` handler that answers with ``body`` and keeps requests.

    A ``bytes`` body is sent as a server-sent event stream.
    """

    def __init__(self, body: Any, status: int = 200) -> None:
        self.body = body
        self.status = status
        self.requests: list[httpx2.Request] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        if isinstance(self.body, bytes):
            return httpx2.Response(
                self.status, content=self.body, headers={"content-type": "text/event-stream"}
            )
        return httpx2.Response(self.status, json=self.body)

    def transport(self) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(transport=httpx2.MockTransport(self), verify=_TLS)


def _openai(recorder: Recorder) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(api_key="sk-test", http_client=recorder.transport(), max_retries=0)


def _anthropic(recorder: Recorder) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(
        api_key="sk-ant-test", http_client=recorder.transport(), max_retries=0
    )


def _without_module(monkeypatch: pytest.MonkeyPatch, missing: str) -> None:
    """Make ``importlib.import_module(missing)`` fail as if the package were not installed."""
    real: Callable[..., Any] = importlib.import_module

    def import_module(name: str, package: str | None = None) -> Any:
        if name == missing or name.startswith(f"{missing}."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return real(name, package)

    monkeypatch.setattr(importlib, "import_module", import_module)


# -- split_model ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "parts"),
    [
        ("openai:gpt-4o-mini", ("openai", "gpt-4o-mini")),
        ("anthropic:claude-haiku-4-5", ("anthropic", "claude-haiku-4-5")),
        ("openai:ft:gpt-4o-mini:acme::abc123", ("openai", "ft:gpt-4o-mini:acme::abc123")),
    ],
)
def test_split_model_splits_at_the_first_colon(model, parts):
    assert split_model(model) == parts


@pytest.mark.parametrize("model", ["gpt-4o-mini", ":gpt-4o-mini", "openai:", ":", ""])
def test_split_model_without_provider_or_model_says_what_is_expected(model):
    with pytest.raises(
        ProviderError,
        match=rf"^Model {model!r} does not name its provider; expected 'PROVIDER:MODEL', for "
        r"example 'openai:gpt-4o-mini'",
    ):
        split_model(model)


# -- default_provider ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("prefix", "kind", "codec"),
    [
        ("openai", OpenAIChatProvider, openai_chat),
        ("openai-responses", OpenAIResponsesProvider, openai_responses),
        ("anthropic", AnthropicMessagesProvider, anthropic_messages),
    ],
)
def test_default_provider_pairs_each_prefix_with_its_codec(prefix, kind, codec):
    provider = default_provider(prefix)

    assert type(provider) is kind
    assert provider.codec is codec


def test_default_provider_for_an_unknown_prefix_says_how_to_add_one():
    with pytest.raises(
        ProviderError,
        match=r"^No provider for models 'mistral:\.\.\.'; the built-in ones are "
        r"\['anthropic', 'bedrock', 'google', 'openai', 'openai-responses'\]\. "
        r"Pass AgentRuntime\(providers=\{'mistral': \.\.\.\}\)",
    ):
        default_provider("mistral")


@pytest.mark.parametrize(
    "kind", [OpenAIChatProvider, OpenAIResponsesProvider, AnthropicMessagesProvider]
)
def test_built_in_providers_satisfy_the_provider_protocol(kind):
    assert isinstance(kind(), Provider)


# -- OpenAIChatProvider --------------------------------------------------------------


async def test_openai_provider_returns_the_response_json_as_sent_on_the_wire():
    recorder = Recorder(CHAT_RESPONSE)
    provider = OpenAIChatProvider(client=_openai(recorder))

    answer = await provider.send(
        {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Dragons?"}]}
    )

    assert answer == CHAT_RESPONSE


async def test_openai_provider_posts_the_codec_body_to_chat_completions():
    recorder = Recorder(CHAT_RESPONSE)
    provider = OpenAIChatProvider(client=_openai(recorder))
    body = provider.codec.encode_request(
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": "Dragons?"}],
        max_tokens=64,
        temperature=0.0,
    )

    await provider.send(body)

    (request,) = recorder.requests
    assert (request.method, request.url.path) == ("POST", "/v1/chat/completions")
    assert json.loads(request.content) == body


async def test_openai_provider_lets_the_sdk_status_error_through():
    recorder = Recorder({"error": {"message": "Incorrect API key provided"}}, status=401)
    provider = OpenAIChatProvider(client=_openai(recorder))

    with pytest.raises(openai.AuthenticationError, match="Incorrect API key provided"):
        await provider.send({"model": "gpt-4o-mini", "messages": []})


async def test_openai_provider_rejects_json_that_is_not_an_object():
    provider = OpenAIChatProvider(client=_openai(Recorder(["not", "an", "object"])))

    with pytest.raises(
        ProviderError,
        match=r"^The provider answered with JSON that is not an object: \['not', 'an', 'object'\]",
    ):
        await provider.send({"model": "gpt-4o-mini", "messages": []})


def test_openai_provider_keeps_an_injected_client():
    client = _openai(Recorder(CHAT_RESPONSE))

    assert OpenAIChatProvider(client=client).client is client


def test_openai_provider_builds_one_default_client_from_the_environment(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    provider = OpenAIChatProvider()

    client = provider.client

    assert isinstance(client, openai.AsyncOpenAI)
    assert client.api_key == "sk-from-env"
    assert provider.client is client


def test_openai_provider_without_the_sdk_says_what_to_install(monkeypatch):
    provider = OpenAIChatProvider()
    _without_module(monkeypatch, "openai")

    with pytest.raises(
        ProviderError,
        match=r"^The 'openai' SDK is not installed, so models 'openai:\.\.\.' cannot be called\. "
        r"Run: pip install 'pytest-agentctx\[openai\]'$",
    ):
        provider.client  # noqa: B018


# -- AnthropicMessagesProvider -------------------------------------------------------


async def test_anthropic_provider_returns_the_response_json_as_sent_on_the_wire():
    recorder = Recorder(MESSAGES_RESPONSE)
    provider = AnthropicMessagesProvider(client=_anthropic(recorder))

    answer = await provider.send(
        {
            "model": "claude-haiku-4-5",
            "max_tokens": 1024,
            "messages": [{"role": "user", "content": "Weather in Tokyo?"}],
        }
    )

    assert answer == MESSAGES_RESPONSE


async def test_anthropic_provider_posts_the_codec_body_to_messages():
    recorder = Recorder(MESSAGES_RESPONSE)
    provider = AnthropicMessagesProvider(client=_anthropic(recorder))
    body = provider.codec.encode_request(
        model="claude-haiku-4-5",
        messages=[
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather in Tokyo?"},
        ],
    )

    await provider.send(body)

    (request,) = recorder.requests
    assert (request.method, request.url.path) == ("POST", "/v1/messages")
    assert json.loads(request.content) == body


async def test_anthropic_provider_lets_the_sdk_status_error_through():
    recorder = Recorder(
        {"type": "error", "error": {"type": "invalid_request_error", "message": "bad effort"}},
        status=400,
    )
    provider = AnthropicMessagesProvider(client=_anthropic(recorder))

    with pytest.raises(anthropic.BadRequestError, match="bad effort"):
        await provider.send({"model": "claude-haiku-4-5", "max_tokens": 10, "messages": []})


def test_anthropic_provider_builds_one_default_client_from_the_environment(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-from-env")
    provider = AnthropicMessagesProvider()

    client = provider.client

    assert isinstance(client, anthropic.AsyncAnthropic)
    assert client.api_key == "sk-ant-from-env"
    assert provider.client is client


def test_anthropic_provider_without_the_sdk_says_what_to_install(monkeypatch):
    provider = AnthropicMessagesProvider()
    _without_module(monkeypatch, "anthropic")

    with pytest.raises(
        ProviderError,
        match=r"^The 'anthropic' SDK is not installed, so models 'anthropic:\.\.\.' cannot be "
        r"called\. Run: pip install 'pytest-agentctx\[anthropic\]'$",
    ):
        provider.client  # noqa: B018


# -- OpenAIResponsesProvider ---------------------------------------------------------


async def test_openai_responses_provider_returns_the_response_json_as_sent_on_the_wire():
    recorder = Recorder(RESPONSES_RESPONSE)
    provider = OpenAIResponsesProvider(client=_openai(recorder))

    answer = await provider.send({"model": "gpt-4o", "input": "Capital of PotatoLand?"})

    assert answer == RESPONSES_RESPONSE


async def test_openai_responses_provider_posts_the_codec_body_to_responses():
    recorder = Recorder(RESPONSES_RESPONSE)
    provider = OpenAIResponsesProvider(client=_openai(recorder))
    body = provider.codec.encode_request(
        model="gpt-4o",
        messages=[
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Capital of PotatoLand?"},
        ],
    )

    await provider.send(body)

    (request,) = recorder.requests
    assert (request.method, request.url.path) == ("POST", "/v1/responses")
    assert json.loads(request.content) == body


def test_openai_responses_provider_builds_one_default_client_from_the_environment(
    monkeypatch,
):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    provider = OpenAIResponsesProvider()

    client = provider.client

    assert isinstance(client, openai.AsyncOpenAI)
    assert provider.client is client


def test_openai_responses_provider_without_the_sdk_names_its_own_model_prefix(
    monkeypatch,
):
    provider = OpenAIResponsesProvider()
    _without_module(monkeypatch, "openai")

    with pytest.raises(
        ProviderError,
        match=r"^The 'openai' SDK is not installed, so models 'openai-responses:\.\.\.' cannot "
        r"be called\. Run: pip install 'pytest-agentctx\[openai\]'$",
    ):
        provider.client  # noqa: B018


# -- send_stream ---------------------------------------------------------------------


async def test_openai_chat_send_stream_returns_the_raw_event_stream():
    recorder = Recorder(CHAT_STREAM)
    provider = OpenAIChatProvider(client=_openai(recorder))
    body = {
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": "Dragons?"}],
        "stream": True,
    }

    raw = await provider.send_stream(body)

    assert raw == CHAT_STREAM
    assert json.loads(recorder.requests[0].content) == body


async def test_anthropic_send_stream_returns_the_raw_event_stream():
    recorder = Recorder(MESSAGES_STREAM)
    provider = AnthropicMessagesProvider(client=_anthropic(recorder))

    raw = await provider.send_stream(
        {
            "model": "claude-haiku-4-5",
            "max_tokens": 1024,
            "messages": [{"role": "user", "content": "Hi"}],
            "stream": True,
        }
    )

    assert raw == MESSAGES_STREAM


async def test_openai_responses_send_stream_posts_to_responses():
    stream = b'event: response.completed\ndata: {"type":"response.completed"}\n\n'
    recorder = Recorder(stream)
    provider = OpenAIResponsesProvider(client=_openai(recorder))

    raw = await provider.send_stream({"model": "gpt-4o", "input": "Hi", "stream": True})

    assert (raw, recorder.requests[0].url.path) == (stream, "/v1/responses")


# -- aclose --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "variable"),
    [
        (OpenAIChatProvider, "OPENAI_API_KEY"),
        (OpenAIResponsesProvider, "OPENAI_API_KEY"),
        (AnthropicMessagesProvider, "ANTHROPIC_API_KEY"),
    ],
)
async def test_aclose_closes_a_client_the_provider_created_and_a_new_one_is_made_next(
    monkeypatch, kind, variable
):
    monkeypatch.setenv(variable, "sk-from-env")
    provider = kind()
    first = provider.client

    await provider.aclose()

    assert first.is_closed()
    assert provider.client is not first


async def test_aclose_leaves_a_given_client_open():
    client = _openai(Recorder(CHAT_RESPONSE))
    provider = OpenAIChatProvider(client=client)

    await provider.aclose()

    assert not client.is_closed()
    assert provider.client is client


async def test_aclose_before_any_client_was_made_does_nothing():
    provider = AnthropicMessagesProvider()

    await provider.aclose()

    assert provider._client is None


@pytest.mark.parametrize(
    ("kind", "variable", "model"),
    [
        (OpenAIChatProvider, "OPENAI_API_KEY", "gpt-4o-mini"),
        (OpenAIResponsesProvider, "OPENAI_API_KEY", "gpt-4o-mini"),
        (AnthropicMessagesProvider, "ANTHROPIC_API_KEY", "claude-haiku-4-5"),
    ],
)
async def test_a_default_client_makes_its_first_call_without_starting_a_thread(
    monkeypatch, kind, variable, model
):
    monkeypatch.setenv(variable, "sk-from-env")
    provider = kind()
    body = provider.codec.encode_request(
        model=model, messages=[{"role": "user", "content": "Hi"}], max_tokens=16
    )
    threads = threading.active_count()

    with FakeLLM() as fake:
        fake.reply("Hello.")
        await provider.send(body)
    await provider.aclose()

    assert threading.active_count() == threads
