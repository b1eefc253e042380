"""``pytest-agentctx cassettes show`` on the recordings of the Cohere and Ollama wire
formats: each request and reply decoded, streams included (Ollama's NDJSON stream is
stored as text)."""

from __future__ import annotations

from pathlib import Path

from pytest_agentctx.cli.show import show_cassette

CORPUS = Path(__file__).resolve().parents[2] / "integration" / "corpus"


def test_an_ollama_ndjson_stream_is_shown_decoded():
    lines = show_cassette(CORPUS / "openllmetry__ollama_api_chat_ndjson_stream.yaml")

    assert lines[1].endswith("[ollama_chat]")
    assert lines[-1].startswith("  reply (stream): 'Why did the OpenTelemetry agent go to therapy?")
    assert lines[-1].endswith("; tokens 17 in, 50 out")


def test_a_cohere_stream_is_shown_with_its_tool_call():
    lines = show_cassette(CORPUS / "langchain-cohere__cohere_v2_chat_stream_tool_call.yaml")

    assert lines[1].endswith("[cohere_chat]")
    assert 'tool call Person({"name": "Erick", "age": 27})' in lines[-1]
