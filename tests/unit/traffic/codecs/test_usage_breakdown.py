"""The cache and reasoning breakdown of :class:`Usage`: what ``metadata["usage"]`` holds, and
the round trip of every wire format, JSON and stream: decoding what a codec encodes for a
usage gives that usage back, for the figures the format has fields for."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from pytest_agentctx.traffic.codecs import (
    anthropic_messages,
    bedrock,
    cohere_chat,
    gemini,
    ollama_chat,
    openai_chat,
    openai_responses,
)
from pytest_agentctx.traffic.codecs.base import BREAKDOWN_KEYS, Completion, Usage
from pytest_agentctx.traffic.codecs.sse import format_sse

COUNTS = st.integers(min_value=0, max_value=200_000)


@st.composite
def usages(
    draw: st.DrawFn,
    *,
    read: bool = False,
    write: bool = False,
    write_1h: bool = False,
    reasoning: bool = False,
    tier: bool = False,
) -> Usage:
    """A usage whose figures add up, with only the figures a format carries."""
    cache_read = draw(COUNTS) if read else 0
    cache_write = draw(COUNTS) if write else 0
    output = draw(COUNTS)
    return Usage(
        input_tokens=draw(COUNTS) + cache_read + cache_write,
        output_tokens=output,
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
        cache_write_1h_tokens=draw(st.integers(0, cache_write)) if write_1h else 0,
        reasoning_tokens=draw(st.integers(0, output)) if reasoning else 0,
        service_tier=draw(st.sampled_from([None, "priority", "flex"])) if tier else None,
    )


OPENAI = {"read": True, "write": True, "reasoning": True, "tier": True}
ANTHROPIC = {"read": True, "write": True, "write_1h": True, "tier": True}
GEMINI = {"read": True, "reasoning": True, "tier": True}
BEDROCK = {"read": True, "write": True, "write_1h": True, "tier": True}


def _reply(usage: Usage) -> Completion:
    return Completion(content="Sunny.", model="m", usage=usage)


def _openai_chat_stream(usage: Usage) -> Usage | None:
    events = openai_chat.encode_stream(_reply(usage), response_id="r", include_usage=True)
    return openai_chat.decode_stream(format_sse(events)).usage


def _sse_stream(codec: Any) -> Callable[[Usage], Usage | None]:
    def round_trip(usage: Usage) -> Usage | None:
        events = codec.encode_stream(_reply(usage), response_id="r")
        completion: Completion = codec.decode_stream(format_sse(events))
        return completion.usage

    return round_trip


def _json(codec: Any) -> Callable[[Usage], Usage | None]:
    def round_trip(usage: Usage) -> Usage | None:
        completion: Completion = codec.decode_response(
            codec.encode_response(_reply(usage), response_id="r")
        )
        return completion.usage

    return round_trip


def _bedrock_stream(usage: Usage) -> Usage | None:
    return bedrock.decode_stream(bedrock.encode_stream(_reply(usage), response_id="r")).usage


ROUND_TRIPS = [
    pytest.param(_json(openai_chat), OPENAI, id="openai_chat-json"),
    pytest.param(_openai_chat_stream, OPENAI, id="openai_chat-stream"),
    pytest.param(_json(openai_responses), OPENAI, id="openai_responses-json"),
    pytest.param(_sse_stream(openai_responses), OPENAI, id="openai_responses-stream"),
    pytest.param(_json(anthropic_messages), ANTHROPIC, id="anthropic_messages-json"),
    pytest.param(_sse_stream(anthropic_messages), ANTHROPIC, id="anthropic_messages-stream"),
    pytest.param(_json(gemini), GEMINI, id="gemini-json"),
    pytest.param(_sse_stream(gemini), GEMINI, id="gemini-stream"),
    pytest.param(_json(bedrock), BEDROCK, id="bedrock-converse"),
    pytest.param(_bedrock_stream, BEDROCK, id="bedrock-converse-stream"),
]


@pytest.mark.parametrize(("round_trip", "carried"), ROUND_TRIPS)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_decoding_what_a_format_encodes_gives_the_usage_back(round_trip, carried, data):
    usage = data.draw(usages(**carried))

    assert round_trip(usage) == usage


@pytest.mark.parametrize(
    "round_trip",
    [
        pytest.param(_json(cohere_chat), id="cohere_chat-json"),
        pytest.param(_sse_stream(cohere_chat), id="cohere_chat-stream"),
        pytest.param(_json(ollama_chat), id="ollama_chat-json"),
    ],
)
def test_cohere_and_ollama_have_no_cache_or_reasoning_fields_so_their_breakdown_is_empty(
    round_trip,
):
    usage = Usage(
        input_tokens=1000,
        output_tokens=50,
        cache_read_tokens=900,
        reasoning_tokens=20,
        service_tier="priority",
    )

    decoded = round_trip(usage)

    assert decoded is not None
    assert (decoded.input_tokens, decoded.output_tokens, decoded.breakdown()) == (1000, 50, {})


def test_usage_without_cache_or_reasoning_is_recorded_with_the_three_keys_of_before():
    assert Usage(input_tokens=12, output_tokens=3).to_dict() == {
        "input_tokens": 12,
        "output_tokens": 3,
        "total_tokens": 15,
    }


def test_a_cache_figure_brings_the_uncached_input_tokens_with_it():
    usage = Usage(input_tokens=1000, output_tokens=10, cache_read_tokens=900)

    assert usage.to_dict() == {
        "input_tokens": 1000,
        "output_tokens": 10,
        "total_tokens": 1010,
        "uncached_input_tokens": 100,
        "cache_read_tokens": 900,
    }


def test_the_breakdown_keys_come_in_their_documented_order():
    usage = Usage(
        input_tokens=1000,
        output_tokens=300,
        cache_read_tokens=500,
        cache_write_tokens=200,
        cache_write_1h_tokens=50,
        reasoning_tokens=250,
        service_tier="priority",
    )

    assert tuple(usage.breakdown()) == BREAKDOWN_KEYS
    assert usage.breakdown()["uncached_input_tokens"] == 300


@given(usage=usages(read=True, write=True))
def test_total_input_tokens_is_uncached_plus_cache_read_plus_cache_write(usage):
    assert usage.total_input_tokens == usage.input_tokens
    assert usage.uncached_input_tokens + usage.cache_read_tokens + usage.cache_write_tokens == (
        usage.total_input_tokens
    )
