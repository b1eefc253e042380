"""Unit tests of the fakes (doubles.fake_llm, .scripted_model, .fake_tools): FakeLLM through
the real SDKs, and FakeTools."""

from __future__ import annotations

import asyncio
import json
import os
import re
import ssl
import types
from collections.abc import AsyncIterator
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from pytest_agentctx.context.model import ToolCall
from pytest_agentctx.doubles.errors import (
    FakeLLMError,
    FakeToolsError,
    UnexpectedModelCall,
    UnusedScriptedReplies,
)
from pytest_agentctx.doubles.fake_llm import PLACEHOLDER_KEYS, FakeLLM, missing_keys
from pytest_agentctx.doubles.fake_tools import FakeToolCall, FakeTools
from pytest_agentctx.doubles.scripted_model import (
    FakeModelCall,
    ScriptedAnswer,
    ScriptedModel,
    ScriptedReply,
    estimate_tokens,
)
from pytest_agentctx.traffic.codecs import anthropic_messages, openai_chat
from pytest_agentctx.traffic.codecs.base import Completion, DecodedRequest, NeutralMessage, Usage
from pytest_agentctx.traffic.transport import Interceptor, WireRequest

OPENAI_MODEL = "gpt-4o-mini"
ANTHROPIC_MODEL = "claude-haiku-4-5"
QUESTION: list[NeutralMessage] = [{"role": "user", "content": "Weather in Paris?"}]
_TLS = ssl.create_default_context()
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


@pytest.fixture
async def openai_client() -> AsyncIterator[openai.AsyncOpenAI]:
    async with openai.AsyncOpenAI(api_key="sk-test", http_client=_http_client()) as client:
        yield client


@pytest.fixture
async def anthropic_client() -> AsyncIterator[anthropic.AsyncAnthropic]:
    async with anthropic.AsyncAnthropic(
        api_key="sk-ant-test", http_client=_http_client()
    ) as client:
        yield client


def _http_client() -> httpx2.AsyncClient:
    """An httpx2 client with the default transport (the one the SDKs use), sharing one TLS
    context: building a context per client costs ~80 ms, most of a test's time."""
    return httpx2.AsyncClient(verify=_TLS)


@pytest.fixture
async def loopback_url() -> AsyncIterator[str]:
    """A one-line HTTP server on 127.0.0.1 that answers every request with 'from the server'."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(
            b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 15\r\n\r\nfrom the server"
        )
        await writer.drain()
        writer.close()
        await writer.wait_closed()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        yield f"http://127.0.0.1:{port}"


async def _ask_openai(client: openai.AsyncOpenAI, content: str = "Weather in Paris?"):
    return await client.chat.completions.create(
        model=OPENAI_MODEL, messages=[{"role": "user", "content": content}]
    )


async def _ask_anthropic(client: anthropic.AsyncAnthropic, content: str = "Weather in Paris?"):
    return await client.messages.create(
        model=ANTHROPIC_MODEL, max_tokens=1024, messages=[{"role": "user", "content": content}]
    )


# -- serving through the real SDKs ---------------------------------------------------


async def test_openai_sdk_parses_a_scripted_text_reply(fake, openai_client):
    fake.reply("Sunny in Paris.")

    completion = await _ask_openai(openai_client)

    assert completion.choices[0].message.content == "Sunny in Paris."
    assert completion.choices[0].finish_reason == "stop"
    assert completion.model == OPENAI_MODEL


async def test_anthropic_sdk_parses_a_scripted_text_reply(fake, anthropic_client):
    fake.reply("Sunny in Paris.")

    message = await _ask_anthropic(anthropic_client)

    assert [block.model_dump(exclude_none=True) for block in message.content] == [
        {"type": "text", "text": "Sunny in Paris."}
    ]
    assert message.stop_reason == "end_turn"
    assert message.model == ANTHROPIC_MODEL


async def test_one_script_serves_both_sdks_each_in_its_own_wire_format(
    fake, openai_client, anthropic_client
):
    fake.reply_tool_call("get_weather", city="Paris").reply("Sunny in Paris.")

    completion = await _ask_openai(openai_client)
    message = await _ask_anthropic(anthropic_client)

    tool_call = (completion.choices[0].message.tool_calls or [])[0]
    assert (tool_call.function.name, tool_call.function.arguments) == (
        "get_weather",
        '{"city":"Paris"}',
    )
    assert message.content[0].text == "Sunny in Paris."
    assert [call.wire_format for call in fake.calls] == ["openai_chat", "anthropic_messages"]


async def test_sdk_clients_built_with_their_defaults_are_served(fake):
    fake.reply("Sunny in Paris.").reply("Sunny in Paris.")

    async with (
        openai.AsyncOpenAI(api_key="sk-test") as openai_client,
        anthropic.AsyncAnthropic(api_key="sk-ant-test") as anthropic_client,
    ):
        completion = await _ask_openai(openai_client)
        message = await _ask_anthropic(anthropic_client)

    assert completion.choices[0].message.content == "Sunny in Paris."
    assert message.content[0].text == "Sunny in Paris."


async def test_anthropic_beta_messages_endpoint_is_served(fake, anthropic_client):
    fake.reply("Sunny in Paris.")

    message = await anthropic_client.beta.messages.create(
        model=ANTHROPIC_MODEL, max_tokens=1024, messages=QUESTION
    )

    assert message.content[0].text == "Sunny in Paris."


async def test_openai_tool_call_ids_count_call_1_call_2_across_replies(fake, openai_client):
    fake.reply(tool_calls=[("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Lyon"})])
    fake.reply_tool_call("get_weather", city="Nice")

    first = await _ask_openai(openai_client)
    second = await _ask_openai(openai_client)

    ids = [
        call.id
        for completion in (first, second)
        for call in completion.choices[0].message.tool_calls or []
    ]
    assert ids == ["call_1", "call_2", "call_3"]
    assert [first.id, second.id] == ["chatcmpl_1", "chatcmpl_2"]


async def test_anthropic_tool_use_ids_count_toolu_1_toolu_2(fake, anthropic_client):
    fake.reply(tool_calls=[("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Lyon"})])

    message = await _ask_anthropic(anthropic_client)

    match [block.model_dump(exclude_none=True) for block in message.content]:
        case [
            {"type": "tool_use", "id": "toolu_1", "input": {"city": "Paris"}},
            {"type": "tool_use", "id": "toolu_2", "input": {"city": "Lyon"}},
        ]:
            pass
        case blocks:
            pytest.fail(f"unexpected tool_use blocks: {blocks}")
    assert message.id == "msg_1"


async def test_a_scripted_tool_call_id_is_served_as_given(fake, openai_client):
    fake.reply(
        tool_calls=[ToolCall(id="call_abc", name="get_weather", arguments={"city": "Paris"})]
    )

    completion = await _ask_openai(openai_client)

    assert [call.id for call in completion.choices[0].message.tool_calls or []] == ["call_abc"]


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param(
            ToolCall(id="", name="get_weather", arguments={"city": "Paris"}), id="ToolCall"
        ),
        pytest.param(("get_weather", {"city": "Paris"}), id="pair"),
        pytest.param({"name": "get_weather", "arguments": {"city": "Paris"}}, id="mapping"),
    ],
)
def test_reply_reads_every_form_of_tool_call(spec):
    fake = FakeLLM().reply(tool_calls=[spec])

    match fake.remaining:
        case [ScriptedReply(content=None, tool_calls=(call,))]:
            assert (call.name, call.arguments, call.id) == ("get_weather", {"city": "Paris"}, None)
        case _:
            pytest.fail(f"unexpected script: {fake.remaining}")


async def test_usage_is_estimated_from_the_request_messages_and_the_reply(fake, openai_client):
    fake.reply("Sunny in Paris.")

    completion = await _ask_openai(openai_client)

    sent = fake.calls[0].body["messages"]
    assert completion.usage is not None
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (
        estimate_tokens(json.dumps(sent, sort_keys=True)),
        estimate_tokens("Sunny in Paris."),
    )


async def test_usage_estimate_counts_anthropics_separate_system_prompt(fake, anthropic_client):
    fake.reply("Sunny.").reply("Sunny.")
    question = [{"role": "user", "content": "Weather in Paris?"}]
    long_system = "You are a careful weather assistant. " * 40

    plain = await anthropic_client.messages.create(
        model="claude-haiku-4-5", max_tokens=50, messages=question
    )
    with_system = await anthropic_client.messages.create(
        model="claude-haiku-4-5", max_tokens=50, messages=question, system=long_system
    )

    assert with_system.usage.input_tokens > plain.usage.input_tokens + 300


async def test_usage_estimate_of_a_responses_call_counts_its_input(fake, openai_client):
    fake.reply("Sunny.")
    question = "Weather in Paris? " * 50

    response = await openai_client.responses.create(model="gpt-4o-mini", input=question)

    assert response.usage is not None
    assert response.usage.input_tokens > 100


async def test_the_same_script_and_request_give_the_same_response_every_time(openai_client):
    responses = []
    for _ in range(2):
        with FakeLLM() as fake:
            fake.reply(tool_calls=[("get_weather", {"city": "Paris"})]).reply("Sunny.")
            await _ask_openai(openai_client)
            await _ask_openai(openai_client)
        responses.append([call.response for call in fake.calls])

    assert responses[0] == responses[1]


@pytest.mark.parametrize(
    "usage",
    [
        pytest.param(Usage(input_tokens=1200, output_tokens=35), id="Usage"),
        pytest.param({"input_tokens": 1200, "output_tokens": 35}, id="mapping"),
    ],
)
async def test_explicit_usage_is_served_as_scripted(fake, anthropic_client, usage):
    fake.reply("Sunny.", usage=usage)

    message = await _ask_anthropic(anthropic_client)

    assert (message.usage.input_tokens, message.usage.output_tokens) == (1200, 35)


async def test_a_scripted_model_name_replaces_the_requested_one(fake, openai_client):
    fake.reply("Sunny.", model="gpt-4o-mini-2024-07-18")

    completion = await _ask_openai(openai_client)

    assert completion.model == "gpt-4o-mini-2024-07-18"


# -- streaming (stream: true) ---------------------------------------------------------


async def test_a_streaming_openai_request_gets_the_reply_as_chunks(fake, openai_client):
    fake.reply("Sunny in Paris.")

    stream = await openai_client.chat.completions.create(
        model=OPENAI_MODEL, messages=QUESTION, stream=True
    )
    chunks = [chunk async for chunk in stream]

    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == (
        "Sunny in Paris."
    )
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"


async def test_the_openai_stream_helper_rebuilds_scripted_tool_calls(fake, openai_client):
    fake.reply(tool_calls=[("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Lyon"})])

    async with openai_client.chat.completions.stream(
        model=OPENAI_MODEL, messages=QUESTION
    ) as stream:
        completion = await stream.get_final_completion()

    assert [
        (call.id, call.function.name, call.function.arguments)
        for call in completion.choices[0].message.tool_calls or []
    ] == [
        ("call_1", "get_weather", '{"city":"Paris"}'),
        ("call_2", "get_weather", '{"city":"Lyon"}'),
    ]


async def test_a_streaming_openai_request_asking_for_usage_gets_it_last(fake, openai_client):
    fake.reply("Sunny.", usage={"input_tokens": 30, "output_tokens": 2})

    stream = await openai_client.chat.completions.create(
        model=OPENAI_MODEL,
        messages=QUESTION,
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = [chunk async for chunk in stream]

    assert chunks[-1].usage is not None
    assert (chunks[-1].usage.prompt_tokens, chunks[-1].usage.completion_tokens) == (30, 2)


async def test_the_anthropic_stream_helper_rebuilds_the_scripted_message(fake, anthropic_client):
    fake.reply("Looking it up.", tool_calls=[("get_weather", {"city": "Paris"})])

    async with anthropic_client.messages.stream(
        model=ANTHROPIC_MODEL, max_tokens=1024, messages=QUESTION
    ) as stream:
        message = await stream.get_final_message()

    assert [block.model_dump(exclude_none=True) for block in message.content] == [
        {"type": "text", "text": "Looking it up."},
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
    ]
    assert message.stop_reason == "tool_use"


async def test_a_streamed_call_is_recorded_as_a_streaming_request(fake, anthropic_client):
    fake.reply("Sunny.")

    stream = await anthropic_client.messages.create(
        model=ANTHROPIC_MODEL, max_tokens=1024, messages=QUESTION, stream=True
    )
    async for _ in stream:
        pass

    assert [call.request.stream for call in fake.calls] == [True]


async def test_openai_responses_sdk_parses_a_scripted_text_reply(fake, openai_client):
    fake.reply("Sunny in Paris.")

    response = await openai_client.responses.create(model="gpt-4.1-mini", input="Weather?")

    assert (response.output_text, response.id) == ("Sunny in Paris.", "resp_1")


async def test_openai_responses_sdk_gets_scripted_tool_calls_as_function_calls(fake, openai_client):
    fake.reply_tool_call("get_weather", city="Paris")

    response = await openai_client.responses.create(model="gpt-4.1-mini", input="Weather?")

    assert [(item.type, item.call_id, item.name, item.arguments) for item in response.output] == [
        ("function_call", "call_1", "get_weather", '{"city":"Paris"}')
    ]


async def test_a_streaming_openai_responses_request_gets_responses_events(fake, openai_client):
    fake.reply("Sunny in Paris.")

    async with openai_client.responses.stream(model="gpt-4.1-mini", input="Weather?") as stream:
        types = [event.type async for event in stream]
        response = await stream.get_final_response()

    assert (types[0], types[-1]) == ("response.created", "response.completed")
    assert response.output_text == "Sunny in Paris."


def test_stream_events_of_an_error_answer_is_an_error():
    answer = ScriptedModel().fail(503).answer("/v1/messages", b'{"messages": []}')

    assert answer is not None
    with pytest.raises(FakeLLMError, match=r"^a 503 answer has no reply to stream$"):
        answer.stream_events()


def test_stream_events_of_a_wire_format_without_a_stream_encoder_is_an_error():
    codec: Any = types.SimpleNamespace(name="custom_format")
    answer = ScriptedAnswer(200, codec, {}, None, completion=Completion(content="hi"))

    with pytest.raises(
        FakeLLMError, match=r"^the custom_format wire format has no stream encoder$"
    ):
        answer.stream_events()


# -- ScriptedModel.answer (the transport-free core) ----------------------------------


def test_answer_gives_the_next_reply_in_the_wire_format_of_the_path():
    model = ScriptedModel().reply("Sunny.", usage={"input_tokens": 5, "output_tokens": 1})
    body = {"model": OPENAI_MODEL, "messages": QUESTION}

    answer = model.answer("/v1/chat/completions", json.dumps(body).encode())

    assert answer == ScriptedAnswer(
        status=200,
        codec=openai_chat,
        body=body,
        request=DecodedRequest(model=OPENAI_MODEL, messages=QUESTION),
        completion=Completion(
            content="Sunny.", model=OPENAI_MODEL, usage=Usage(5, 1), response_id="chatcmpl_1"
        ),
        response=openai_chat.encode_response(
            Completion(content="Sunny.", model=OPENAI_MODEL, usage=Usage(5, 1)),
            response_id="chatcmpl_1",
        ),
    )


def test_answer_for_another_endpoint_is_none():
    model = ScriptedModel().reply("Sunny.")

    assert model.answer("/v1/embeddings", b'{"input": "hi"}') is None


def test_answer_to_an_unreadable_body_is_a_400_without_request():
    answer = ScriptedModel().reply("Sunny.").answer("/v1/messages", b"{not json")

    match answer:
        case ScriptedAnswer(status=400, codec=codec, body=None, request=None, error=str(error)):
            assert codec is anthropic_messages
            assert error.startswith("pytest-agentctx model could not read the request: ")
        case _:
            pytest.fail(f"unexpected answer: {answer!r}")


def test_answer_beyond_the_script_is_a_400_logged_as_unexpected():
    model = ScriptedModel()
    body = {"model": ANTHROPIC_MODEL, "max_tokens": 10, "messages": QUESTION}

    answer = model.answer("/v1/messages", json.dumps(body).encode())

    assert answer is not None
    assert (answer.status, answer.error) == (
        400,
        "pytest-agentctx model: model call #1 was not scripted (only 0 replies were). "
        "Script another reply with model.reply(...).",
    )
    assert [call.body for call in model.unexpected] == [body]


def test_answer_to_a_scripted_failure_carries_its_status_and_message():
    model = ScriptedModel().fail(503, "overloaded")

    answer = model.answer("/v1/chat/completions", json.dumps({"messages": []}).encode())

    assert answer is not None
    assert (answer.status, answer.error, answer.completion) == (503, "overloaded", None)


# -- scripted failures ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (400, openai.BadRequestError),
        (429, openai.RateLimitError),
        (500, openai.InternalServerError),
        (503, openai.InternalServerError),
    ],
)
async def test_fail_raises_the_openai_status_error_without_retrying(
    fake, openai_client, status, error
):
    fake.fail(status, "model overloaded").reply("never served")

    with pytest.raises(error, match="model overloaded") as raised:
        await _ask_openai(openai_client)

    assert raised.value.status_code == status
    assert (len(fake.calls), len(fake.remaining)) == (1, 1)


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (429, anthropic.RateLimitError),
        (500, anthropic.InternalServerError),
        (529, anthropic.OverloadedError),
    ],
)
async def test_fail_raises_the_anthropic_status_error_without_retrying(
    fake, anthropic_client, status, error
):
    fake.fail(status, "model overloaded").reply("never served")

    with pytest.raises(error, match="model overloaded") as raised:
        await _ask_anthropic(anthropic_client)

    assert raised.value.status_code == status
    assert (len(fake.calls), len(fake.remaining)) == (1, 1)


@pytest.mark.parametrize("status", [200, 302, 399, 600])
def test_fail_needs_an_http_error_status(status):
    with pytest.raises(
        FakeLLMError, match=rf"fail\(status={status}\) needs an HTTP error status from 400 to 599"
    ):
        FakeLLM().fail(status)


# -- unscripted and unused -----------------------------------------------------------


async def test_an_unscripted_call_gets_a_400_that_says_so(fake, openai_client):
    fake.reply("Sunny.")
    await _ask_openai(openai_client)

    with pytest.raises(
        openai.BadRequestError, match=r"model call #2 was not scripted \(only 1 replies were\)"
    ):
        await _ask_openai(openai_client, "And tomorrow?")


async def test_verify_after_an_unscripted_call_says_where_it_went(fake, openai_client):
    fake.reply("Sunny.")
    await _ask_openai(openai_client)
    with pytest.raises(openai.BadRequestError):
        await _ask_openai(openai_client, "And tomorrow?")

    with pytest.raises(
        UnexpectedModelCall,
        match=r"the agent made 2 model calls but only 1 replies were scripted\. The first "
        r"unscripted call went to /v1/chat/completions with 1 messages, the last: "
        r"user 'And tomorrow\?'\. Script another reply with fake_llm\.reply",
    ):
        fake.verify()


async def test_verify_lists_the_scripted_replies_never_used(fake, anthropic_client):
    fake.reply("Sunny.").reply_tool_call("get_weather", city="Lyon").fail(503, "down")
    await _ask_anthropic(anthropic_client)

    with pytest.raises(
        UnusedScriptedReplies,
        match=r"2 of 3 scripted replies were never used \(#2: tool call "
        r"get_weather\(\{\"city\": \"Lyon\"\}\); #3: error 503: 'down'\)\. "
        r"The agent stopped earlier",
    ):
        fake.verify()


async def test_verify_passes_when_every_reply_was_used_once(fake, openai_client):
    fake.reply("Sunny.")
    await _ask_openai(openai_client)

    fake.verify()

    assert (fake.remaining, fake.unexpected) == ([], [])


# -- what the fake records -----------------------------------------------------------


async def test_requests_are_decoded_into_neutral_form(fake, openai_client):
    fake.reply("Sunny.")

    await openai_client.chat.completions.create(
        model=OPENAI_MODEL,
        messages=[{"role": "system", "content": "Be brief."}, *QUESTION],
        tools=[WEATHER_TOOL],
    )

    assert fake.requests == [
        DecodedRequest(
            model=OPENAI_MODEL,
            messages=[
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Weather in Paris?"},
            ],
            tools=[
                {
                    "name": "get_weather",
                    "description": "Current weather for a city.",
                    "parameters": WEATHER_TOOL["function"]["parameters"],  # type: ignore[index]
                }
            ],
            stream=False,
        )
    ]


async def test_calls_record_path_format_body_reply_and_response(fake, anthropic_client):
    fake.reply("Sunny.", usage={"input_tokens": 10, "output_tokens": 2})

    await _ask_anthropic(anthropic_client)

    assert fake.calls == [
        FakeModelCall(
            path="/v1/messages",
            wire_format="anthropic_messages",
            body={"max_tokens": 1024, "messages": QUESTION, "model": ANTHROPIC_MODEL},
            request=DecodedRequest(model=ANTHROPIC_MODEL, messages=QUESTION),
            reply=ScriptedReply(content="Sunny.", usage=Usage(10, 2)),
            response={
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": ANTHROPIC_MODEL,
                "content": [{"type": "text", "text": "Sunny."}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": 10, "output_tokens": 2},
            },
        )
    ]


async def test_remaining_shrinks_as_replies_are_served(fake, openai_client):
    fake.reply("one").reply("two")

    await _ask_openai(openai_client)

    assert fake.remaining == [ScriptedReply(content="two")]


async def test_repr_counts_scripted_and_served_replies(fake, openai_client):
    fake.reply("one").reply("two")
    await _ask_openai(openai_client)

    assert repr(fake) == "FakeLLM(2 scripted, 1 served)"


# -- requests the fake does not answer -----------------------------------------------


@pytest.mark.parametrize(
    ("method", "url"),
    [
        ("GET", "https://api.openai.com/v1/models"),
        ("POST", "https://api.openai.com/v1/embeddings"),
        ("POST", "https://api.openai.com/v1/responses/resp_123/cancel"),
        ("POST", "https://api.openai.com/v1/threads/thread_abc/messages"),
        ("POST", "https://api.anthropic.com/v1/messages/count_tokens"),
        ("GET", "https://api.openai.com/v1/chat/completions"),
    ],
)
def test_handle_lets_other_endpoints_pass(method, url):
    fake = FakeLLM().reply("Sunny.")

    assert fake.handle(httpx2.Request(method, url, json={"messages": []})) is None
    assert len(fake.remaining) == 1


async def test_a_non_llm_request_reaches_the_real_server_while_the_fake_is_active(
    fake, loopback_url
):
    fake.reply("Sunny.")

    async with httpx2.AsyncClient(trust_env=False, verify=_TLS) as client:
        response = await client.post(f"{loopback_url}/v1/embeddings", json={"input": "hi"})

    assert response.text == "from the server"
    assert fake.calls == []


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"not json", r"Expecting value"),
        (b'{"model": "gpt-4o-mini"}', r"the JSON has no 'messages' field"),
    ],
)
def test_an_unreadable_model_request_gets_a_400_saying_why(content, reason):
    fake = FakeLLM().reply("Sunny.")

    response = fake.handle(
        httpx2.Request("POST", "https://api.openai.com/v1/chat/completions", content=content)
    )

    assert response is not None
    assert response.status_code == 400
    assert re.match(
        rf"pytest-agentctx fake_llm could not read the request: .*{reason}",
        response.json()["error"]["message"],
    )


def test_stop_gives_the_transport_back():
    original = httpx2.AsyncHTTPTransport.handle_async_request

    with FakeLLM():
        patched = httpx2.AsyncHTTPTransport.handle_async_request

    assert patched is not original
    assert httpx2.AsyncHTTPTransport.handle_async_request is original


# -- scripting errors ----------------------------------------------------------------


def test_reply_without_content_or_tool_calls_is_an_error():
    with pytest.raises(
        FakeLLMError, match=r"fake_llm\.reply\(\) needs content, tool_calls or both"
    ):
        FakeLLM().reply()


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param("get_weather", id="bare-name"),
        pytest.param(("get_weather",), id="one-tuple"),
        pytest.param({"arguments": {"city": "Paris"}}, id="mapping-without-name"),
        pytest.param((1, {"city": "Paris"}), id="pair-with-non-str-name"),
    ],
)
def test_reply_with_an_unreadable_tool_call_says_which_forms_work(spec):
    with pytest.raises(
        FakeLLMError,
        match=r"cannot read .* as a tool call\. Give a ToolCall, a \('name', \{arguments\}\) pair",
    ):
        FakeLLM().reply(tool_calls=[spec])


def test_reply_returns_the_fake_to_chain_calls():
    fake = FakeLLM()

    assert fake.reply("one").reply_tool_call("get_weather", city="Paris").fail(500) is fake


# -- estimate_tokens -----------------------------------------------------------------


@pytest.mark.parametrize(("text", "tokens"), [("", 1), ("abc", 1), ("abcd", 1), ("abcde", 2)])
def test_estimate_tokens_is_one_per_four_characters_and_at_least_one(text, tokens):
    assert estimate_tokens(text) == tokens


# -- FakeTools -----------------------------------------------------------------------


def test_replace_with_a_result_answers_with_it():
    answer = FakeTools().replace("get_weather", "sunny").override_for("get_weather")

    assert answer is not None
    assert answer(city="Paris") == "sunny"


def test_replace_with_none_answers_with_none():
    answer = FakeTools().replace("notify", None).override_for("notify")

    assert answer is not None
    assert answer(message="hi") is None


def test_replace_with_raises_raises_that_exception():
    error = TimeoutError("weather service down")
    answer = FakeTools().replace("get_weather", raises=error).override_for("get_weather")

    assert answer is not None
    with pytest.raises(TimeoutError, match="weather service down") as raised:
        answer(city="Paris")
    assert raised.value is error


def test_replace_with_fn_calls_it_with_the_arguments():
    answer = (
        FakeTools()
        .replace("get_weather", fn=lambda city, unit="celsius": f"18 {unit} in {city}")
        .override_for("get_weather")
    )

    assert answer is not None
    assert answer(city="Paris", unit="fahrenheit") == "18 fahrenheit in Paris"


def test_replace_again_replaces_the_previous_replacement():
    tools = FakeTools().replace("get_weather", "sunny").replace("get_weather", "rainy")
    answer = tools.override_for("get_weather")

    assert answer is not None
    assert answer(city="Paris") == "rainy"


def test_override_for_a_tool_not_replaced_is_none():
    assert FakeTools().replace("get_weather", "sunny").override_for("book_flight") is None


def test_replaced_lists_the_replaced_tool_names():
    tools = FakeTools().replace("get_weather", "sunny").replace("book", raises=OSError("down"))

    assert tools.replaced == {"get_weather", "book"}


@pytest.mark.parametrize(
    ("kwargs", "given"),
    [
        pytest.param({}, "none", id="nothing"),
        pytest.param(
            {"result": "sunny", "raises": TimeoutError("down")},
            r"\['result', 'raises'\]",
            id="result-and-raises",
        ),
        pytest.param(
            {"raises": TimeoutError("down"), "fn": lambda: "x"},
            r"\['raises', 'fn'\]",
            id="raises-and-fn",
        ),
        pytest.param(
            {"result": None, "fn": lambda: "x"}, r"\['result', 'fn'\]", id="none-result-and-fn"
        ),
    ],
)
def test_replace_needs_exactly_one_of_result_raises_fn(kwargs, given):
    with pytest.raises(
        FakeToolsError,
        match=rf"fake_tools\.replace\('get_weather', \.\.\.\) needs exactly one of result=, "
        rf"raises= or fn=; got {given}\.",
    ):
        FakeTools().replace("get_weather", **kwargs)


@pytest.mark.parametrize("raises", [TimeoutError, "service down"])
def test_replace_raises_needs_an_exception_instance(raises):
    with pytest.raises(
        FakeToolsError,
        match=r"fake_tools\.replace\('get_weather', raises=\.\.\.\) needs an exception instance",
    ):
        FakeTools().replace("get_weather", raises=raises)


def test_record_adds_ledger_entries_marking_replaced_tools():
    tools = FakeTools().replace("get_weather", "sunny")

    tools.record(ToolCall(id="call_1", name="get_weather", arguments={"city": "Paris"}), 1)
    tools.record(ToolCall(id="call_2", name="get_time", arguments={"city": "Paris"}), 2)

    assert tools.calls == [
        FakeToolCall("get_weather", {"city": "Paris"}, 1, "call_1", True),
        FakeToolCall("get_time", {"city": "Paris"}, 2, "call_2", False),
    ]


def _ledger(*names: str) -> FakeTools:
    tools = FakeTools()
    for number, name in enumerate(names, start=1):
        tools.record(ToolCall(id=f"call_{number}", name=name, arguments={}), number)
    return tools


def test_calls_to_gives_the_ledger_entries_of_one_tool():
    tools = _ledger("get_weather", "get_time", "get_weather")

    assert [call.tool_call_id for call in tools.calls_to("get_weather")] == ["call_1", "call_3"]


def test_names_gives_the_tools_called_in_order():
    tools = _ledger("get_weather", "get_time", "get_weather")

    assert tools.names() == ["get_weather", "get_time", "get_weather"]


# -- the exchange log (what budgets and reports measure) -------------------------------


async def test_the_fake_logs_each_answered_call_as_an_exchange(fake, openai_client):
    fake.reply("Sunny.")

    await _ask_openai(openai_client)

    [exchange] = fake.exchanges
    assert (exchange.method, exchange.path, exchange.status) == (
        "POST",
        "/v1/chat/completions",
        200,
    )
    assert exchange.request_json()["messages"] == QUESTION
    assert exchange.response_json()["choices"][0]["message"]["content"] == "Sunny."


async def test_the_fake_logs_a_streamed_reply_as_its_json_completion(fake, openai_client):
    fake.reply("Sunny.")

    stream = await openai_client.chat.completions.create(
        model=OPENAI_MODEL, messages=QUESTION, stream=True
    )
    async for _ in stream:
        pass

    [exchange] = fake.exchanges
    assert exchange.request_json()["stream"] is True
    assert exchange.response_json()["choices"][0]["message"]["content"] == "Sunny."


async def test_the_fake_logs_a_scripted_failure_with_its_status(fake, anthropic_client):
    fake.fail(503, "overloaded")

    with pytest.raises(anthropic.APIStatusError):
        await _ask_anthropic(anthropic_client)

    [exchange] = fake.exchanges
    assert exchange.status == 503
    assert exchange.response_json()["error"]["message"] == "overloaded"


async def test_the_fake_logs_no_exchange_for_other_endpoints(fake, loopback_url):
    async with httpx2.AsyncClient() as client:
        await client.get(f"{loopback_url}/health")

    assert fake.exchanges == []


# -- standalone use: placeholder provider keys -----------------------------------------

KEY_NAMES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")


@pytest.fixture
def no_provider_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in KEY_NAMES:
        monkeypatch.delenv(name, raising=False)


async def test_a_standalone_fake_answers_an_openai_client_built_without_a_key(no_provider_keys):
    with FakeLLM() as fake:
        fake.reply("Sunny.")
        async with openai.AsyncOpenAI(http_client=_http_client()) as client:
            reply = await _ask_openai(client)

    assert reply.choices[0].message.content == "Sunny."


async def test_a_standalone_fake_answers_an_anthropic_client_built_without_a_key(
    no_provider_keys,
):
    with FakeLLM() as fake:
        fake.reply("Sunny.")
        async with anthropic.AsyncAnthropic(http_client=_http_client()) as client:
            reply = await _ask_anthropic(client)

    assert reply.content[0].text == "Sunny."


def test_stop_takes_the_placeholder_keys_out_of_the_environment(no_provider_keys):
    with FakeLLM():
        during = {name: bool(os.environ.get(name)) for name in KEY_NAMES}

    assert (during, [os.environ.get(name) for name in KEY_NAMES]) == (
        dict.fromkeys(KEY_NAMES, True),
        [None, None],
    )


def test_an_empty_key_gets_a_placeholder_and_comes_back_empty(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "")

    with FakeLLM():
        during = os.environ["OPENAI_API_KEY"]

    assert (during, os.environ["OPENAI_API_KEY"]) == (PLACEHOLDER_KEYS["OPENAI_API_KEY"], "")


def test_a_key_whose_sdk_reads_another_variable_gets_no_placeholder(monkeypatch):
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.setenv("GOOGLE_API_KEY", "users-google-key")

    with FakeLLM():
        during = os.environ.get("GEMINI_API_KEY")

    assert during is None


def test_missing_keys_leaves_out_each_key_whose_other_variable_is_set():
    environ = {
        "GOOGLE_API_KEY": "g",
        "ANTHROPIC_AUTH_TOKEN": "t",
        "AWS_PROFILE": "dev",
        "OPENAI_API_KEY": "",
    }

    assert missing_keys(environ) == {"OPENAI_API_KEY": PLACEHOLDER_KEYS["OPENAI_API_KEY"]}


def test_a_key_the_user_set_is_left_as_it_is(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-users-own")

    with FakeLLM():
        during = os.environ["OPENAI_API_KEY"]

    assert (during, os.environ["OPENAI_API_KEY"]) == ("sk-users-own", "sk-users-own")


def test_the_placeholders_stay_until_the_last_of_two_fakes_stops(no_provider_keys):
    first, second = FakeLLM(), FakeLLM()
    first.start()
    second.start()
    first.stop()
    still = os.environ.get("OPENAI_API_KEY")
    second.stop()

    assert (still, os.environ.get("OPENAI_API_KEY")) == (PLACEHOLDER_KEYS["OPENAI_API_KEY"], None)


@pytest.mark.parametrize(
    ("url", "headers"),
    [
        pytest.param(
            "https://api.openai.com/v1/models",
            {"authorization": "Bearer sk-agentctx-fake"},
            id="openai-header",
        ),
        pytest.param(
            "https://api.anthropic.com/v1/models",
            {"x-api-key": "sk-ant-agentctx-fake"},
            id="anthropic-header",
        ),
        pytest.param("https://models.example/v1/list?key=sk-agentctx-fake", {}, id="in-the-url"),
    ],
)
def test_a_request_it_does_not_answer_with_a_placeholder_key_is_refused(url, headers):
    response = FakeLLM().handle(httpx2.Request("GET", url, headers=headers))

    assert response is not None
    assert response.status_code == 401
    assert re.match(
        r"pytest-agentctx fake_llm answers model calls only .*GET /v1/\w+ to [\w.]+ carries "
        r"the placeholder \w+_API_KEY the fake set, so it was not sent\. Answer it in the test",
        response.json()["error"]["message"],
    )


def test_a_request_it_does_not_answer_with_a_real_key_goes_its_way():
    request = httpx2.Request(
        "GET", "https://api.openai.com/v1/models", headers={"authorization": "Bearer sk-real"}
    )

    assert FakeLLM().handle(request) is None


def test_a_placeholder_key_to_a_loopback_server_goes_its_way():
    request = httpx2.Request(
        "GET", "http://127.0.0.1:8080/v1/models", headers={"x-api-key": "sk-ant-agentctx-fake"}
    )

    assert FakeLLM().handle(request) is None


async def test_a_placeholder_key_never_reaches_what_lies_behind_the_fake(no_provider_keys):
    reached: list[WireRequest] = []

    def behind(request: WireRequest) -> Any:
        reached.append(request)
        return httpx2.Response(200, json={"object": "list", "data": []})

    with Interceptor(behind), FakeLLM():  # the newest handler is asked first
        async with openai.AsyncOpenAI(http_client=_http_client(), max_retries=0) as client:
            with pytest.raises(openai.AuthenticationError, match="placeholder OPENAI_API_KEY"):
                await client.models.list()

    assert reached == []
