"""Unit tests of the loopback provider serving the Gemini wire format to ``google-genai``.

The SDK talks to the server over HTTP on 127.0.0.1 (``HttpOptions(base_url=...)``), its own
``httpx2`` clients sync and async; no interceptor is active.
"""

from __future__ import annotations

import json

import httpx2
import pytest
from google import genai
from google.genai import errors, types

from pytest_agentctx.doubles.loopback import LoopbackProvider
from pytest_agentctx.traffic.codecs import gemini

MODEL = "gemini-2.5-flash"


def client_of(provider: LoopbackProvider, api_version: str = "v1beta") -> genai.Client:
    options = types.HttpOptions(base_url=provider.gemini_base_url, api_version=api_version)
    return genai.Client(api_key="test-key", http_options=options)


def test_the_sdk_gets_a_function_call_and_then_text(provider):
    provider.reply_tool_call("get_weather", city="Paris").reply("Sunny in Paris.")
    client = client_of(provider)

    first = client.models.generate_content(model=MODEL, contents="Weather?")
    second = client.models.generate_content(model=MODEL, contents="Weather?")

    assert [(c.name, c.args) for c in first.function_calls or []] == [
        ("get_weather", {"city": "Paris"})
    ]
    assert second.text == "Sunny in Paris."
    provider.verify()


def test_each_call_is_logged_with_its_gemini_path(provider):
    provider.reply("Hi.").reply("Hi.")
    beta, stable = client_of(provider), client_of(provider, "v1")

    beta.models.generate_content(model=MODEL, contents="Hi")
    stable.models.generate_content(model=MODEL, contents="Hi")

    assert [(e.method, e.path, e.status) for e in provider.exchanges] == [
        ("POST", f"/v1beta/models/{MODEL}:generateContent", 200),
        ("POST", f"/v1/models/{MODEL}:generateContent", 200),
    ]
    assert [call.request.model for call in provider.calls] == [MODEL, MODEL]


async def test_a_stream_is_served_as_events_to_the_async_client(provider):
    provider.reply("Sunny in Paris, 21 degrees.")
    client = client_of(provider)

    chunks = [
        chunk
        async for chunk in await client.aio.models.generate_content_stream(
            model=MODEL, contents="Weather?"
        )
    ]

    assert len(chunks) > 1
    assert "".join(chunk.text or "" for chunk in chunks) == "Sunny in Paris, 21 degrees."
    (exchange,) = provider.exchanges
    assert (exchange.path, exchange.streamed) == (
        f"/v1beta/models/{MODEL}:streamGenerateContent?alt=sse",
        True,
    )


def test_gzip_responses_reach_the_sdk(provider):
    provider.gzip = True
    provider.reply("Sunny.").reply("Sunny again.")
    client = client_of(provider)

    assert client.models.generate_content(model=MODEL, contents="Hi").text == "Sunny."
    streamed = client.models.generate_content_stream(model=MODEL, contents="Hi")
    assert "".join(chunk.text or "" for chunk in streamed) == "Sunny again."
    assert [exchange.gzipped for exchange in provider.exchanges] == [True, True]


def test_a_scripted_failure_is_a_google_error(provider):
    provider.fail(503, "overloaded")
    client = client_of(provider)

    with pytest.raises(errors.ServerError) as caught:
        client.models.generate_content(model=MODEL, contents="Hi")

    assert (caught.value.code, caught.value.status, caught.value.message) == (
        503,
        "UNAVAILABLE",
        "overloaded",
    )


def test_a_gemini_endpoint_takes_post_only(provider):
    with httpx2.Client(base_url=provider.base_url) as http:
        response = http.get(f"/v1beta/models/{MODEL}:generateContent")

    assert response.status_code == 405
    assert response.json()["error"]["message"] == (
        f"pytest-agentctx loopback: /v1beta/models/{MODEL}:generateContent takes POST, not GET."
    )


def test_an_unknown_path_names_the_gemini_endpoints(provider):
    with httpx2.Client(base_url=provider.base_url) as http:
        response = http.post(f"/v1beta/models/{MODEL}:countTokens", json={})

    assert response.status_code == 404
    assert ":generateContent" in response.json()["error"]["message"]


def test_the_request_is_served_to_the_codec_as_sent(provider):
    provider.reply("Hi.")
    client = client_of(provider)

    client.models.generate_content(
        model=MODEL,
        contents="Hi",
        config=types.GenerateContentConfig(system_instruction="Be brief.", temperature=0),
    )

    sent = json.loads(provider.exchanges[0].body)
    assert sent["generationConfig"] == {"temperature": 0}
    assert gemini.decode_request(sent).messages == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
    ]


def test_a_stream_asked_without_alt_sse_is_one_json_array_flushed_chunk_by_chunk(provider):
    provider.reply("Sunny in Paris, 21 degrees.")
    url = f"{provider.base_url}/v1beta/models/{MODEL}:streamGenerateContent"
    body = {"contents": [{"role": "user", "parts": [{"text": "Weather in Paris?"}]}]}

    with httpx2.stream("POST", url, json=body) as response:
        pieces = list(response.iter_raw())

    assert response.headers["content-type"].startswith("application/json")
    assert len(pieces) > 1
    raw = b"".join(pieces)
    assert raw.startswith(b"[{")
    assert raw.endswith(b"]")
    assert gemini.decode_stream(raw).content == "Sunny in Paris, 21 degrees."
    assert [exchange.streamed for exchange in provider.exchanges] == [True]
