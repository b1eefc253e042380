"""Unit tests of pytest_agentctx.doubles.loopback: a scripted provider on a real 127.0.0.1 socket.

The real ``openai`` and ``anthropic`` SDKs talk to the server over HTTP; nothing leaves
127.0.0.1, and no interceptor (fake model, cassette) is active.
"""

from __future__ import annotations

import asyncio
import json
import socket
import struct
import threading
import time
from collections.abc import AsyncIterator
from typing import Any

import anthropic
import httpcore2
import httpx2
import openai
import pytest

from pytest_agentctx.doubles.errors import LoopbackError, UnexpectedModelCall, UnusedScriptedReplies
from pytest_agentctx.doubles.loopback import LoopbackExchange, LoopbackProvider
from pytest_agentctx.traffic.codecs.base import DecodedRequest

MESSAGES: list[Any] = [{"role": "user", "content": "Weather in Paris?"}]
GPT = "gpt-4o-mini"
CLAUDE = "claude-haiku-4-5"


@pytest.fixture
async def openai_client(provider: LoopbackProvider) -> AsyncIterator[openai.AsyncOpenAI]:
    async with openai.AsyncOpenAI(
        base_url=provider.base_url, api_key="sk-test", max_retries=0
    ) as client:
        yield client


@pytest.fixture
async def anthropic_client(provider: LoopbackProvider) -> AsyncIterator[anthropic.AsyncAnthropic]:
    async with anthropic.AsyncAnthropic(
        base_url=provider.base_url, api_key="sk-test", max_retries=0
    ) as client:
        yield client


@pytest.fixture
async def http(provider: LoopbackProvider) -> AsyncIterator[httpx2.AsyncClient]:
    async with httpx2.AsyncClient(base_url=provider.base_url) as client:
        yield client


def server_threads() -> list[str]:
    return [
        t.name
        for t in threading.enumerate()
        if t.name.startswith("loopback-") or "process_request_thread" in t.name
    ]


def tool_calls(message: Any) -> list[tuple[str, str, Any]]:
    return [
        (call.id, call.function.name, json.loads(call.function.arguments))
        for call in message.tool_calls or []
    ]


async def openai_stream(client: openai.AsyncOpenAI, **options: Any) -> list[Any]:
    stream = await client.chat.completions.create(
        model=GPT, messages=MESSAGES, stream=True, **options
    )
    return [chunk async for chunk in stream]


def streamed_text(chunks: list[Any]) -> str:
    return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)


# -- addresses -----------------------------------------------------------------------


def test_the_server_binds_127_0_0_1_on_a_free_port(provider):
    host, port = provider.address

    assert (host, port > 0, port) == ("127.0.0.1", True, provider.port)


def test_base_url_is_the_server_root(provider):
    assert provider.base_url == f"http://127.0.0.1:{provider.port}"


def test_openai_base_url_ends_in_v1_and_anthropic_base_url_is_the_root(provider):
    assert (provider.openai_base_url, provider.anthropic_base_url) == (
        f"http://127.0.0.1:{provider.port}/v1",
        f"http://127.0.0.1:{provider.port}",
    )


def test_the_provider_takes_no_host_to_bind():
    with pytest.raises(TypeError, match="host"):
        LoopbackProvider(host="0.0.0.0")  # type: ignore[call-arg]


def test_the_address_of_a_stopped_provider_is_an_error_saying_to_start_it():
    with pytest.raises(LoopbackError, match=r"not running.*provider\.start\(\)"):
        LoopbackProvider().base_url  # noqa: B018


# -- OpenAI chat completions ---------------------------------------------------------


async def test_openai_sdk_gets_a_scripted_text_reply(provider, openai_client):
    provider.reply("Sunny in Paris.")

    completion = await openai_client.chat.completions.create(model=GPT, messages=MESSAGES)

    match completion:
        case openai.types.chat.ChatCompletion(
            id="chatcmpl_1",
            model="gpt-4o-mini",
            choices=[
                openai.types.chat.chat_completion.Choice(
                    finish_reason="stop",
                    message=openai.types.chat.ChatCompletionMessage(
                        content="Sunny in Paris.", tool_calls=None
                    ),
                )
            ],
        ):
            pass
        case _:
            pytest.fail(f"unexpected completion: {completion}")


async def test_openai_sdk_gets_a_scripted_tool_call(provider, openai_client):
    provider.reply_tool_call("get_weather", city="Paris")

    completion = await openai_client.chat.completions.create(model=GPT, messages=MESSAGES)

    assert (completion.choices[0].finish_reason, tool_calls(completion.choices[0].message)) == (
        "tool_calls",
        [("call_1", "get_weather", {"city": "Paris"})],
    )


async def test_openai_sdk_at_openai_base_url_posts_to_v1_chat_completions(provider):
    provider.reply("Hi.")

    async with openai.AsyncOpenAI(
        base_url=provider.openai_base_url, api_key="sk-test", max_retries=0
    ) as client:
        await client.chat.completions.create(model=GPT, messages=MESSAGES)

    assert [exchange.path for exchange in provider.exchanges] == ["/v1/chat/completions"]


async def test_openai_stream_reassembles_the_reply_the_whole_response_gives(
    provider, openai_client
):
    reply = {
        "content": "Let me check, 21 °C ☀.",
        "tool_calls": [("get_weather", {"city": "Paris"})],
    }
    provider.reply(**reply).reply(**reply)

    whole = await openai_client.chat.completions.create(model=GPT, messages=MESSAGES)
    chunks = await openai_stream(openai_client)

    calls: dict[int, list[str]] = {}
    for chunk in chunks:
        for call in chunk.choices[0].delta.tool_calls or []:
            slot = calls.setdefault(call.index, ["", "", ""])
            slot[0] += call.id or ""
            slot[1] += call.function.name or ""
            slot[2] += call.function.arguments or ""
    streamed_calls = [(i, n, json.loads(a)) for i, n, a in calls.values()]
    whole_calls = [
        (call_id.replace("call_1", "call_2"), name, args)
        for call_id, name, args in tool_calls(whole.choices[0].message)
    ]
    assert (streamed_text(chunks), streamed_calls) == (
        whole.choices[0].message.content,
        whole_calls,
    )


async def test_openai_stream_helper_gives_the_final_completion(provider, openai_client):
    provider.reply("Sunny in Paris.", tool_calls=[("get_weather", {"city": "Paris"})])

    async with openai_client.chat.completions.stream(model=GPT, messages=MESSAGES) as stream:
        final = await stream.get_final_completion()

    assert (final.choices[0].message.content, tool_calls(final.choices[0].message)) == (
        "Sunny in Paris.",
        [("call_1", "get_weather", {"city": "Paris"})],
    )


async def test_openai_stream_sends_usage_last_when_the_request_asks(provider, openai_client):
    provider.reply("Hi.", usage={"input_tokens": 12, "output_tokens": 3})

    chunks = await openai_stream(openai_client, stream_options={"include_usage": True})

    match chunks[-1]:
        case openai.types.chat.ChatCompletionChunk(
            choices=[], usage=openai.types.CompletionUsage(prompt_tokens=12, completion_tokens=3)
        ):
            pass
        case last:
            pytest.fail(f"the last chunk carries no usage: {last}")


async def test_openai_stream_without_include_usage_has_no_usage_chunk(provider, openai_client):
    provider.reply("Hi.")

    chunks = await openai_stream(openai_client)

    assert [chunk.usage for chunk in chunks] == [None] * len(chunks)


def test_a_sync_openai_client_streams_too(provider):
    provider.reply("Sunny in Paris.")

    with openai.OpenAI(base_url=provider.base_url, api_key="sk-test", max_retries=0) as client:
        chunks = list(client.chat.completions.create(model=GPT, messages=MESSAGES, stream=True))

    assert streamed_text(chunks) == "Sunny in Paris."


# -- OpenAI Responses ----------------------------------------------------------------


async def test_openai_sdk_gets_a_scripted_tool_call_from_the_responses_api(provider, openai_client):
    provider.reply_tool_call("get_weather", city="Paris")

    response = await openai_client.responses.create(model=GPT, input="Weather in Paris?")

    match response.output:
        case [
            openai.types.responses.ResponseFunctionToolCall(
                call_id="call_1", name="get_weather", arguments='{"city":"Paris"}'
            )
        ]:
            pass
        case output:
            pytest.fail(f"unexpected output: {output}")


async def test_openai_responses_stream_helper_gives_the_final_response(provider, openai_client):
    provider.reply("Sunny in Paris.")

    async with openai_client.responses.stream(model=GPT, input="Weather in Paris?") as stream:
        final = await stream.get_final_response()

    assert (final.output_text, provider.exchanges[0].streamed) == ("Sunny in Paris.", True)


# -- Anthropic Messages --------------------------------------------------------------


async def test_anthropic_sdk_gets_a_scripted_reply(provider, anthropic_client):
    provider.reply("On it.", tool_calls=[("get_weather", {"city": "Paris"})])

    message = await anthropic_client.messages.create(
        model=CLAUDE, max_tokens=100, messages=MESSAGES
    )

    assert (message.id, [block.model_dump(exclude_none=True) for block in message.content]) == (
        "msg_1",
        [
            {"type": "text", "text": "On it."},
            {
                "type": "tool_use",
                "id": "toolu_1",
                "name": "get_weather",
                "input": {"city": "Paris"},
            },
        ],
    )


async def test_anthropic_stream_helper_builds_the_message_the_whole_response_gives(
    provider, anthropic_client
):
    reply = {
        "content": "Let me check, 21 °C ☀.",
        "tool_calls": [("get_weather", {"city": "Paris"})],
    }
    provider.reply(**reply).reply(**reply)

    whole = await anthropic_client.messages.create(model=CLAUDE, max_tokens=100, messages=MESSAGES)
    async with anthropic_client.messages.stream(
        model=CLAUDE, max_tokens=100, messages=MESSAGES
    ) as stream:
        final = await stream.get_final_message()

    def essentials(message: Any) -> Any:
        blocks = [block.model_dump(exclude_none=True, exclude={"id"}) for block in message.content]
        return blocks, message.stop_reason, message.usage.output_tokens

    assert essentials(final) == essentials(whole)


async def test_anthropic_raw_stream_has_the_message_events_in_order(provider, anthropic_client):
    provider.reply_tool_call("get_time")

    stream = await anthropic_client.messages.create(
        model=CLAUDE, max_tokens=100, messages=MESSAGES, stream=True
    )
    kinds = [event.type async for event in stream]

    assert kinds == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]


def test_a_sync_anthropic_client_streams_too(provider):
    provider.reply("Sunny in Paris.")

    with (
        anthropic.Anthropic(base_url=provider.base_url, api_key="sk-test", max_retries=0) as client,
        client.messages.stream(model=CLAUDE, max_tokens=100, messages=MESSAGES) as stream,
    ):
        text = stream.get_final_text()

    assert text == "Sunny in Paris."


# -- the script ----------------------------------------------------------------------


async def test_each_model_call_gets_the_next_scripted_reply_whatever_the_sdk(
    provider, openai_client, anthropic_client
):
    provider.reply("first").reply("second")

    first = await openai_client.chat.completions.create(model=GPT, messages=MESSAGES)
    second = await anthropic_client.messages.create(model=CLAUDE, max_tokens=9, messages=MESSAGES)

    assert (first.choices[0].message.content, second.content[0].text) == ("first", "second")


async def test_a_scripted_model_name_is_served(provider, openai_client):
    provider.reply("Hi.", model="gpt-4o-2024-08-06")

    completion = await openai_client.chat.completions.create(model=GPT, messages=MESSAGES)

    assert completion.model == "gpt-4o-2024-08-06"


async def test_concurrent_calls_each_get_one_scripted_reply(provider, openai_client):
    provider.reply("a").reply("b").reply("c")

    completions = await asyncio.gather(
        *(openai_client.chat.completions.create(model=GPT, messages=MESSAGES) for _ in range(3))
    )

    assert sorted(c.choices[0].message.content or "" for c in completions) == ["a", "b", "c"]


async def test_requests_logs_each_model_call_decoded(provider, openai_client):
    provider.reply("Hi.")

    await openai_stream(openai_client)

    assert provider.requests == [
        DecodedRequest(
            model=GPT, messages=[{"role": "user", "content": "Weather in Paris?"}], stream=True
        )
    ]


async def test_exchanges_log_the_raw_http_requests(provider, anthropic_client):
    provider.reply("Hi.")

    await anthropic_client.messages.create(model=CLAUDE, max_tokens=9, messages=MESSAGES)

    match provider.exchanges:
        case [
            LoopbackExchange(
                method="POST",
                path="/v1/messages",
                headers={"content-type": "application/json"},
                body=body,
                status=200,
                streamed=False,
                gzipped=False,
            )
        ]:
            assert json.loads(body)["messages"] == MESSAGES
        case exchanges:
            pytest.fail(f"unexpected exchanges: {exchanges}")


def test_ids_are_the_same_on_every_run_of_a_script(anthropic_client):
    def run() -> list[Any]:
        with (
            LoopbackProvider() as fresh,
            anthropic.Anthropic(
                base_url=fresh.base_url, api_key="sk-test", max_retries=0
            ) as client,
        ):
            fresh.reply_tool_call("get_weather", city="Paris")
            raw = client.messages.with_raw_response.create(
                model=CLAUDE, max_tokens=9, messages=MESSAGES
            )
            message = raw.parse()
            return [raw.headers["x-request-id"], message.id, message.content[0].id]  # type: ignore[union-attr]

    assert run() == run() == ["req_1", "msg_1", "toolu_1"]


# -- errors --------------------------------------------------------------------------


async def test_a_scripted_failure_is_an_openai_error_status(provider, openai_client):
    provider.fail(429, "slow down")

    with pytest.raises(openai.RateLimitError) as caught:
        await openai_client.chat.completions.create(model=GPT, messages=MESSAGES)

    assert caught.value.body == {
        "message": "slow down",
        "type": "invalid_request_error",
        "param": None,
        "code": None,
    }


async def test_a_scripted_failure_is_an_anthropic_error_with_its_error_type(
    provider, anthropic_client
):
    provider.fail(429, "slow down")

    with pytest.raises(anthropic.RateLimitError) as caught:
        await anthropic_client.messages.create(model=CLAUDE, max_tokens=9, messages=MESSAGES)

    assert caught.value.body == {
        "type": "error",
        "error": {"type": "rate_limit_error", "message": "slow down"},
    }


async def test_a_streamed_request_that_fails_gets_a_json_error(provider, openai_client):
    provider.fail(500, "down")

    with pytest.raises(openai.InternalServerError, match="down"):
        await openai_stream(openai_client)


async def test_an_unscripted_call_is_a_400_and_verify_names_it(provider, openai_client):
    provider.reply("Hi.")
    await openai_client.chat.completions.create(model=GPT, messages=MESSAGES)

    with pytest.raises(openai.BadRequestError, match=r"model call #2 was not scripted"):
        await openai_client.chat.completions.create(model=GPT, messages=MESSAGES)
    with pytest.raises(UnexpectedModelCall, match=r"Script another reply with loopback\.reply"):
        provider.verify()


def test_verify_reports_replies_the_agent_never_asked_for(provider):
    provider.reply("never served")

    with pytest.raises(UnusedScriptedReplies, match=r"1 of 1 scripted replies were never used"):
        provider.verify()


async def test_verify_passes_when_every_reply_was_served(provider, openai_client):
    provider.reply("Hi.")
    await openai_client.chat.completions.create(model=GPT, messages=MESSAGES)

    provider.verify()


def test_scripting_mistakes_name_the_loopback_provider(provider):
    with pytest.raises(Exception, match=r"^loopback\.reply\(\) needs content"):
        provider.reply()


async def test_a_server_failure_is_a_500_and_verify_reports_it(
    provider, openai_client, monkeypatch
):
    def broken(path: str, content: bytes) -> None:
        raise RuntimeError("encoder exploded")

    monkeypatch.setattr(provider, "answer", broken)

    with pytest.raises(openai.InternalServerError, match="encoder exploded"):
        await openai_client.chat.completions.create(model=GPT, messages=MESSAGES)
    with pytest.raises(LoopbackError, match=r"failed 1 request.*RuntimeError: encoder exploded"):
        provider.verify()


async def test_an_unknown_endpoint_is_a_404_that_lists_the_served_ones(provider, http):
    response = await http.post("/v1/embeddings", json={"input": "x"})

    assert (response.status_code, response.json()["error"]["message"]) == (
        404,
        "pytest-agentctx loopback has no endpoint POST /v1/embeddings; it serves POST "
        "/v1/chat/completions, /v1/responses (also without /v1), /v1/messages, "
        "/<version>/models/<model>:generateContent (or :streamGenerateContent) and Bedrock's "
        "/model/<model id>/converse (or /converse-stream, /invoke, /invoke-with-response-stream).",
    )


async def test_a_get_on_a_model_endpoint_is_a_405(provider, http):
    response = await http.get("/v1/messages")

    assert (response.status_code, response.json()["error"]["type"]) == (
        405,
        "invalid_request_error",
    )


async def test_a_body_that_is_not_json_is_a_400(provider, http):
    provider.reply("unused")

    response = await http.post("/v1/chat/completions", content=b"{not json")

    assert (response.status_code, provider.remaining[0].content) == (400, "unused")


def test_a_request_with_a_bad_content_length_is_a_400_not_a_server_failure(provider):
    with socket.create_connection(provider.address, timeout=5) as connection:
        connection.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: ten\r\n\r\n")
        status_line = connection.makefile("rb").readline()

    assert (status_line, provider.errors) == (b"HTTP/1.1 400 Bad Request\r\n", [])


def test_a_client_that_resets_its_connection_prints_nothing(capsys):
    with LoopbackProvider() as running:
        connection = socket.create_connection(running.address, timeout=5)
        connection.sendall(b"POST /v1/messages HTTP/1.1\r\n")  # half a request, then a reset
        connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        connection.close()
    # leaving the block joined the connection's thread: whatever it printed is here

    assert capsys.readouterr().err == ""


async def test_a_chunked_request_body_is_read(provider, http):
    provider.reply("Hi.")

    async def body() -> AsyncIterator[bytes]:
        yield b'{"model": "gpt-4o-mini", '
        yield b'"messages": [{"role": "user", "content": "Hi?"}]}'

    response = await http.post("/v1/chat/completions", content=body())

    assert (response.status_code, provider.exchanges[0].headers["transfer-encoding"]) == (
        200,
        "chunked",
    )


# -- headers and gzip ----------------------------------------------------------------


async def test_a_json_response_has_a_content_type_and_a_request_id(provider, http):
    provider.reply("Hi.")

    response = await http.post("/v1/chat/completions", json={"model": GPT, "messages": MESSAGES})

    assert (response.headers["content-type"], response.headers["x-request-id"]) == (
        "application/json",
        "req_1",
    )


async def test_an_anthropic_response_also_has_anthropics_request_id_header(provider, http):
    provider.reply("Hi.")

    response = await http.post(
        "/v1/messages", json={"model": CLAUDE, "max_tokens": 9, "messages": MESSAGES}
    )

    assert response.headers["request-id"] == response.headers["x-request-id"] == "req_1"


async def test_a_stream_is_an_event_stream_in_chunked_encoding(provider, http):
    provider.reply("Hi.")

    response = await http.post(
        "/v1/chat/completions", json={"model": GPT, "messages": MESSAGES, "stream": True}
    )

    assert (
        response.headers["content-type"],
        response.headers["transfer-encoding"],
        response.text.endswith("data: [DONE]\n\n"),
    ) == ("text/event-stream; charset=utf-8", "chunked", True)


async def test_responses_are_not_compressed_by_default(provider, http):
    provider.reply("Hi.")

    response = await http.post(
        "/v1/chat/completions",
        json={"model": GPT, "messages": MESSAGES},
        headers={"accept-encoding": "gzip"},
    )

    assert "content-encoding" not in response.headers


async def test_with_gzip_a_client_accepting_gzip_gets_a_gzip_body():
    with LoopbackProvider(gzip=True) as provider:
        provider.reply("Hi.")
        async with (
            httpx2.AsyncClient(base_url=provider.base_url) as http,
            http.stream(
                "POST",
                "/v1/chat/completions",
                json={"model": GPT, "messages": MESSAGES},
                headers={"accept-encoding": "gzip"},
            ) as response,
        ):
            raw = b"".join([part async for part in response.aiter_raw()])

    assert (response.headers["content-encoding"], raw[:2]) == ("gzip", b"\x1f\x8b")


async def test_with_gzip_a_client_not_accepting_gzip_gets_a_plain_body():
    with LoopbackProvider(gzip=True) as provider:
        provider.reply("Hi.")
        async with httpx2.AsyncClient(base_url=provider.base_url) as http:
            response = await http.post(
                "/v1/chat/completions",
                json={"model": GPT, "messages": MESSAGES},
                headers={"accept-encoding": "identity"},
            )

    assert ("content-encoding" in response.headers, provider.exchanges[0].gzipped) == (
        False,
        False,
    )


async def test_with_gzip_the_sdks_read_gzip_json_and_gzip_streams():
    with LoopbackProvider(gzip=True) as provider:
        provider.reply("Sunny in Paris.").reply("Sunny in Lyon.")
        async with anthropic.AsyncAnthropic(
            base_url=provider.base_url, api_key="sk-test", max_retries=0
        ) as client:
            whole = await client.messages.create(model=CLAUDE, max_tokens=9, messages=MESSAGES)
            async with client.messages.stream(
                model=CLAUDE, max_tokens=9, messages=MESSAGES
            ) as stream:
                streamed = await stream.get_final_text()

    assert (
        whole.content[0].text,  # type: ignore[union-attr]
        streamed,
        [(e.streamed, e.gzipped) for e in provider.exchanges],
    ) == ("Sunny in Paris.", "Sunny in Lyon.", [(False, True), (True, True)])


# -- streaming pace ------------------------------------------------------------------


async def test_the_first_event_comes_after_event_delay():
    with LoopbackProvider(event_delay=0.05) as provider:
        provider.reply("Hi.")
        async with openai.AsyncOpenAI(
            base_url=provider.base_url, api_key="sk-test", max_retries=0
        ) as client:
            started = time.monotonic()
            stream = await client.chat.completions.create(model=GPT, messages=MESSAGES, stream=True)
            first = await anext(aiter(stream))
            waited = time.monotonic() - started
            await stream.close()

    assert (first.choices[0].delta.role, waited >= 0.05) == ("assistant", True)


async def test_events_are_flushed_one_by_one():
    with LoopbackProvider(event_delay=0.02) as provider:
        provider.reply("one two three four five six seven eight nine ten")
        async with openai.AsyncOpenAI(
            base_url=provider.base_url, api_key="sk-test", max_retries=0
        ) as client:
            stream = await client.chat.completions.create(model=GPT, messages=MESSAGES, stream=True)
            started = time.monotonic()
            arrivals = [time.monotonic() - started async for _ in stream]

    # 13 events 20 ms apart: were they buffered, the first would arrive with the last.
    assert (len(arrivals), arrivals[0] < arrivals[-1] / 2) == (12, True)


@pytest.mark.parametrize("delay", [-1, float("nan"), float("inf"), "0.1", True])
def test_event_delay_must_be_a_finite_number_of_seconds(delay):
    with pytest.raises(LoopbackError, match=r"event_delay=.*expected a number of seconds"):
        LoopbackProvider(event_delay=delay)


@pytest.mark.parametrize("port", [-1, 65536, "8080", 1.5])
def test_port_must_be_a_tcp_port(port):
    with pytest.raises(LoopbackError, match=r"port=.*expected a TCP port from 0 to 65535"):
        LoopbackProvider(port=port)


# -- life cycle ----------------------------------------------------------------------


def test_a_port_in_use_is_an_error_saying_to_leave_port_at_0(provider):
    second = LoopbackProvider(port=provider.port)

    with pytest.raises(LoopbackError, match=rf"could not listen on 127\.0\.0\.1:{provider.port}"):
        second.start()


def test_stop_releases_the_port():
    with LoopbackProvider() as provider:
        port = provider.port

    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=5).close()


def test_stop_twice_is_harmless():
    provider = LoopbackProvider()
    provider.start()

    provider.stop()
    provider.stop()

    assert provider.running is False


async def test_stop_leaves_no_server_thread_even_with_a_connection_kept_alive():
    with LoopbackProvider() as provider:
        provider.reply("Hi.")
        client = openai.AsyncOpenAI(base_url=provider.base_url, api_key="sk-test", max_retries=0)
        await client.chat.completions.create(model=GPT, messages=MESSAGES)
        assert server_threads() != []
    try:
        assert server_threads() == []
    finally:
        await client.close()


async def test_stop_cuts_a_stream_waiting_between_events():
    provider = LoopbackProvider(event_delay=60)
    provider.start()
    provider.reply("Sunny in Paris.")
    async with openai.AsyncOpenAI(
        base_url=provider.base_url, api_key="sk-test", max_retries=0
    ) as client:
        stream = await client.chat.completions.create(model=GPT, messages=MESSAGES, stream=True)
        started = time.monotonic()
        provider.stop()
        stopped_in = time.monotonic() - started

        # The SDK maps a connection cut before its stream starts; one cut in the middle of
        # the chunked body comes up as the transport's protocol error, mapped or not.
        with pytest.raises(
            (openai.APIConnectionError, httpx2.RemoteProtocolError, httpcore2.RemoteProtocolError)
        ):
            [chunk async for chunk in stream]

    assert stopped_in < 10


async def test_a_stopped_provider_can_start_again():
    provider = LoopbackProvider()
    provider.start()
    provider.stop()
    provider.reply("again")

    with provider:
        async with openai.AsyncOpenAI(
            base_url=provider.base_url, api_key="sk-test", max_retries=0
        ) as client:
            completion = await client.chat.completions.create(model=GPT, messages=MESSAGES)

    assert completion.choices[0].message.content == "again"


def test_start_twice_keeps_the_same_server(provider):
    port = provider.port

    provider.start()

    assert provider.port == port


def test_repr_shows_the_url_and_the_script(provider):
    provider.reply("Hi.")

    assert (
        repr(provider)
        == f"LoopbackProvider(http://127.0.0.1:{provider.port}, 1 scripted, 0 served)"
    )


def test_repr_of_a_stopped_provider_says_so():
    assert repr(LoopbackProvider()) == "LoopbackProvider(stopped, 0 scripted, 0 served)"
