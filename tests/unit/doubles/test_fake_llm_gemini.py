"""Unit tests of the fake model (:class:`FakeLLM`) answering the ``google-genai`` SDK.

The SDK's own clients (its default ``httpx2`` ones, sync and async) call
``generativelanguage.googleapis.com``; the fake answers at the transport, in the Gemini wire
format: nothing leaves the process.
"""

from __future__ import annotations

from typing import Any

import httpx2
import pytest
from google import genai
from google.genai import errors, types

from pytest_agentctx import build_contexts
from pytest_agentctx.doubles.errors import UnexpectedModelCall
from pytest_agentctx.traffic.codecs import gemini

MODEL = "gemini-2.5-flash"
WEATHER = types.Tool(
    function_declarations=[
        types.FunctionDeclaration(
            name="get_weather",
            description="The weather in a city.",
            parameters_json_schema={"type": "object", "properties": {"city": {"type": "string"}}},
        )
    ]
)
CONFIG = types.GenerateContentConfig(system_instruction="Be brief.", tools=[WEATHER])


@pytest.fixture
def client(monkeypatch: pytest.MonkeyPatch) -> genai.Client:
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.setenv("GEMINI_API_KEY", "test-key")
    return genai.Client()


def weather_agent(client: genai.Client, question: str = "Weather in Paris?") -> str | None:
    """A tool loop on the SDK: run the function calls, send their responses, until text."""
    contents: list[Any] = [types.Content(role="user", parts=[types.Part(text=question)])]
    while True:
        response = client.models.generate_content(model=MODEL, contents=contents, config=CONFIG)
        assert response.candidates
        assert response.candidates[0].content
        contents.append(response.candidates[0].content)
        if not response.function_calls:
            return response.text
        contents.append(
            types.Content(
                role="user",
                parts=[
                    types.Part.from_function_response(
                        name=call.name or "", response={"result": f"Sunny in {call.args}"}
                    )
                    for call in response.function_calls
                ],
            )
        )


def test_the_fake_answers_the_sdks_tool_loop_in_the_gemini_format(fake, client):
    fake.reply_tool_call("get_weather", city="Paris").reply("Sunny in Paris.")

    assert weather_agent(client) == "Sunny in Paris."

    fake.verify()
    assert [(call.path, call.wire_format) for call in fake.calls] == [
        (f"/v1/models/{MODEL}:generateContent", "gemini"),
        (f"/v1/models/{MODEL}:generateContent", "gemini"),
    ]


def test_the_fake_reads_the_model_from_the_url(fake, client):
    fake.reply("Hello.")

    client.models.generate_content(model="gemini-2.0-flash", contents="Hi")

    assert fake.requests[0].model == "gemini-2.0-flash"


def test_the_second_request_answers_the_call_of_the_first_reply(fake, client):
    fake.reply_tool_call("get_weather", city="Paris").reply("Sunny in Paris.")

    weather_agent(client)

    call_id = gemini.synthetic_call_id("get_weather", {"city": "Paris"}, 0)
    assert fake.requests[1].messages == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": call_id, "name": "get_weather", "arguments": {"city": "Paris"}}],
        },
        {
            "role": "tool",
            "content": "Sunny in {'city': 'Paris'}",
            "tool_call_id": call_id,
            "name": "get_weather",
        },
    ]


def test_function_calls_come_without_an_id_as_the_api_sends_them(fake, client):
    fake.reply(tool_calls=[("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Lyon"})])

    response = client.models.generate_content(model=MODEL, contents="Weather?", config=CONFIG)

    assert [(c.id, c.args) for c in response.function_calls or []] == [
        (None, {"city": "Paris"}),
        (None, {"city": "Lyon"}),
    ]


def test_a_scripted_call_id_is_sent(fake, client):
    fake.reply(tool_calls=[{"id": "fc_1", "name": "get_weather", "arguments": {"city": "Paris"}}])

    response = client.models.generate_content(model=MODEL, contents="Weather?", config=CONFIG)

    assert [c.id for c in response.function_calls or []] == ["fc_1"]


async def test_the_async_client_is_answered(fake, client):
    fake.reply("Sunny in Paris.")

    response = await client.aio.models.generate_content(model=MODEL, contents="Weather?")

    assert response.text == "Sunny in Paris."
    assert fake.calls[0].wire_format == "gemini"


def test_a_streamed_call_is_answered_with_server_sent_events(fake, client):
    fake.reply("Sunny in Paris, 21 degrees.")

    chunks = list(client.models.generate_content_stream(model=MODEL, contents="Weather?"))

    assert len(chunks) > 1
    assert "".join(chunk.text or "" for chunk in chunks) == "Sunny in Paris, 21 degrees."
    assert fake.requests[0].stream is True


async def test_an_async_stream_carries_the_function_call_whole(fake, client):
    fake.reply("Checking.", tool_calls=[("get_weather", {"city": "Paris"})])

    chunks = [
        chunk
        async for chunk in await client.aio.models.generate_content_stream(
            model=MODEL, contents="Weather?", config=CONFIG
        )
    ]

    calls = [call for chunk in chunks for call in chunk.function_calls or []]
    assert [(call.name, call.args) for call in calls] == [("get_weather", {"city": "Paris"})]


def test_usage_is_counted_from_the_contents_and_the_system_instruction(fake, client):
    fake.reply("Hi.").reply("Hi.")

    short = client.models.generate_content(model=MODEL, contents="Hi")
    long = client.models.generate_content(
        model=MODEL,
        contents="Hi",
        config=types.GenerateContentConfig(system_instruction="You are a helpful assistant. " * 8),
    )

    assert short.usage_metadata is not None
    assert long.usage_metadata is not None
    assert (long.usage_metadata.prompt_token_count or 0) > (
        short.usage_metadata.prompt_token_count or 0
    ) + 40


def test_a_scripted_failure_is_a_google_error(fake, client):
    fake.fail(429, "quota exceeded")

    with pytest.raises(errors.ClientError) as caught:
        client.models.generate_content(model=MODEL, contents="Weather?")

    assert (caught.value.code, caught.value.status, caught.value.message) == (
        429,
        "RESOURCE_EXHAUSTED",
        "quota exceeded",
    )


def test_an_unscripted_call_fails_the_sdk_and_verify(fake, client):
    with pytest.raises(errors.ClientError, match="was not scripted"):
        client.models.generate_content(model=MODEL, contents="Weather?")

    with pytest.raises(UnexpectedModelCall, match=r"went to /v1/models/gemini-2\.5-flash"):
        fake.verify()


def test_other_gemini_endpoints_are_not_answered(fake):
    assert fake.answer(f"/v1beta/models/{MODEL}:countTokens", b"{}") is None


def test_the_exchanges_rebuild_the_context(fake, client):
    fake.reply_tool_call("get_weather", city="Paris").reply("Sunny in Paris.")

    weather_agent(client)

    (context,) = build_contexts(fake.exchanges)
    assert [len(iteration.messages) for iteration in context.iterations] == [4, 1]
    assert context.iterations[0].metadata["provider"] == "google"
    assert context.iterations[0].metadata["model"] == MODEL
    assert context.final_output == "Sunny in Paris."


FAKE_LLM_TEST = """
from google import genai


def test_a_gemini_client_needs_no_key_under_fake_llm(fake_llm):
    fake_llm.reply("Sunny in Paris.")

    client = genai.Client()

    assert client.models.generate_content(
        model="gemini-2.5-flash", contents="Weather?"
    ).text == "Sunny in Paris."
"""


def test_the_fake_llm_fixture_gives_the_sdk_a_placeholder_key(
    agent_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    agent_pytester.makepyfile(test_gemini_fake=FAKE_LLM_TEST)

    result = agent_pytester.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(passed=1)


def test_a_stream_asked_without_alt_sse_is_answered_with_one_json_array(fake):
    fake.reply_tool_call("get_weather", city="Paris")
    url = f"https://generativelanguage.googleapis.com/v1beta/models/{MODEL}:streamGenerateContent"
    body = {"contents": [{"role": "user", "parts": [{"text": "Weather in Paris?"}]}]}

    response = httpx2.post(url, json=body, headers={"x-goog-api-key": "test-key"})

    assert response.headers["content-type"].startswith("application/json")
    assert response.content.startswith(b"[{")
    call = gemini.decode_stream(response.json()).tool_calls[0]
    assert (call.name, call.arguments) == ("get_weather", {"city": "Paris"})
