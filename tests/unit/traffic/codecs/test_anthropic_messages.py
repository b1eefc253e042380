"""Unit tests of pytest_agentctx.traffic.codecs.anthropic_messages (POST /v1/messages).

The response bodies are copied from real recordings in the compatibility corpus
(pydantic-ai ``test_anthropic_tool_output``, crewAI parallel tool use and function calling)
so the decoder is proved on what Anthropic really sends. What every codec does alike (round
trips, malformed JSON, streams) is checked in ``test_codec_contract.py``.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from anthropic.types import Message as AnthropicMessage

from pytest_agentctx.context.model import ToolCall
from pytest_agentctx.context.tools import ToolSpec
from pytest_agentctx.traffic.codecs import anthropic_messages
from pytest_agentctx.traffic.codecs.base import Completion, DecodedRequest, Usage

WEATHER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string", "description": "The city's name."}},
    "required": ["city"],
    "additionalProperties": False,
}
WEATHER_SPEC = ToolSpec("get_weather", "Current weather for a city.", WEATHER_SCHEMA)

# pydantic-ai: a tool call without text, with the cache fields of the usage.
TOOL_USE_RESPONSE: dict[str, Any] = {
    "content": [
        {
            "id": "toolu_01X9wcHKKAZD9tBC711xipPa",
            "input": {},
            "name": "get_user_country",
            "type": "tool_use",
        }
    ],
    "id": "msg_012TXW181edhmR5JCsQRsBKx",
    "model": "claude-sonnet-4-5-20250929",
    "role": "assistant",
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "type": "message",
    "usage": {
        "cache_creation": {"ephemeral_1h_input_tokens": 0, "ephemeral_5m_input_tokens": 0},
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "input_tokens": 445,
        "output_tokens": 23,
        "service_tier": "standard",
    },
}

# crewAI: text, then three parallel tool calls.
PARALLEL_RESPONSE: dict[str, Any] = {
    "model": "claude-sonnet-4-6",
    "id": "msg_01XeN1XTXZgmPyLMMGjivabb",
    "type": "message",
    "role": "assistant",
    "content": [
        {"type": "text", "text": "I'll execute all 3 parallel searches simultaneously right now!"},
        {
            "type": "tool_use",
            "id": "toolu_01NwzvrxEz6tvT3A8ydvMtHu",
            "name": "parallel_local_search_one",
            "input": {"query": "latest OpenAI model release notes"},
            "caller": {"type": "direct"},
        },
        {
            "type": "tool_use",
            "id": "toolu_01YCxzSB1suk9uPVC1uwfHz9",
            "name": "parallel_local_search_two",
            "input": {"query": "latest Anthropic model release notes"},
            "caller": {"type": "direct"},
        },
        {
            "type": "tool_use",
            "id": "toolu_01Mauvxzv58eDY7pUt9HMKGy",
            "name": "parallel_local_search_three",
            "input": {"query": "latest Gemini model release notes"},
            "caller": {"type": "direct"},
        },
    ],
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "usage": {
        "input_tokens": 914,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
        "output_tokens": 169,
        "service_tier": "standard",
        "inference_geo": "global",
    },
}

# crewAI: the final text answer.
TEXT_RESPONSE: dict[str, Any] = {
    "model": "claude-sonnet-4-5-20250929",
    "id": "msg_014zmtEjjH4Qx8ntiJdbk36e",
    "type": "message",
    "role": "assistant",
    "content": [
        {
            "type": "text",
            "text": "The weather in Tokyo is currently sunny and 72°F (approximately 22°C).",
        }
    ],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {
        "input_tokens": 701,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
        "output_tokens": 22,
        "service_tier": "standard",
    },
}


def _encode(messages: Sequence[Mapping[str, Any]], **options: Any) -> dict[str, Any]:
    return anthropic_messages.encode_request(model="claude-haiku-4-5", messages=messages, **options)


# -- encode_request ------------------------------------------------------------------


def test_encode_request_puts_the_system_prompt_at_the_top_level():
    body = _encode([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}])

    assert body == {
        "model": "claude-haiku-4-5",
        "max_tokens": 1024,
        "system": "Be brief.",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}],
    }


def test_encode_request_joins_several_system_messages_with_a_blank_line():
    body = _encode(
        [
            {"role": "system", "content": "Be brief."},
            {"role": "system", "content": "Answer in French."},
            {"role": "user", "content": "Hi"},
        ]
    )

    assert body["system"] == "Be brief.\n\nAnswer in French."


def test_encode_request_without_system_messages_has_no_system_field():
    assert "system" not in _encode([{"role": "user", "content": "Hi"}])


@pytest.mark.parametrize(
    ("message", "turn"),
    [
        pytest.param(
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]},
            id="user",
        ),
        pytest.param(
            {"role": "assistant", "content": "Sunny."},
            {"role": "assistant", "content": [{"type": "text", "text": "Sunny."}]},
            id="assistant-text",
        ),
        pytest.param(
            {
                "role": "assistant",
                "content": "Looking it up.",
                "tool_calls": [
                    {"id": "toolu_1", "name": "get_weather", "arguments": {"city": "Paris"}}
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Looking it up."},
                    {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": "get_weather",
                        "input": {"city": "Paris"},
                    },
                ],
            },
            id="assistant-text-and-tool-calls",
        ),
        pytest.param(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "toolu_1", "name": "get_user_country", "arguments": {}}],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "toolu_1", "name": "get_user_country", "input": {}}
                ],
            },
            id="assistant-tool-calls-only",
        ),
        pytest.param(
            {
                "role": "tool",
                "content": "18 degrees celsius",
                "tool_call_id": "toolu_1",
                "name": "get_weather",
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_1",
                        "content": "18 degrees celsius",
                    }
                ],
            },
            id="tool-result",
        ),
        pytest.param(
            {
                "role": "tool",
                "content": "Tool get_weather failed: TimeoutError: down",
                "tool_call_id": "toolu_1",
                "name": "get_weather",
                "is_error": True,
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_1",
                        "content": "Tool get_weather failed: TimeoutError: down",
                        "is_error": True,
                    }
                ],
            },
            id="tool-error-result",
        ),
    ],
)
def test_encode_request_writes_each_role_as_a_turn_of_content_blocks(message, turn):
    assert _encode([message])["messages"] == [turn]


def test_encode_request_merges_consecutive_tool_results_into_one_user_turn():
    body = _encode(
        [
            {"role": "user", "content": "Weather in Paris and Lyon?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "toolu_1", "name": "get_weather", "arguments": {"city": "Paris"}},
                    {"id": "toolu_2", "name": "get_weather", "arguments": {"city": "Lyon"}},
                ],
            },
            {"role": "tool", "content": "18 degrees", "tool_call_id": "toolu_1"},
            {"role": "tool", "content": "12 degrees", "tool_call_id": "toolu_2"},
        ]
    )

    assert [turn["role"] for turn in body["messages"]] == ["user", "assistant", "user"]
    assert body["messages"][2]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "18 degrees"},
        {"type": "tool_result", "tool_use_id": "toolu_2", "content": "12 degrees"},
    ]


def test_encode_request_merges_consecutive_user_messages_into_one_turn():
    body = _encode([{"role": "user", "content": "Hi."}, {"role": "user", "content": "Weather?"}])

    assert body["messages"] == [
        {
            "role": "user",
            "content": [{"type": "text", "text": "Hi."}, {"type": "text", "text": "Weather?"}],
        }
    ]


def test_encode_request_merges_a_user_message_after_tool_results_into_their_turn():
    body = _encode(
        [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "toolu_1", "name": "get_weather", "arguments": {}}],
            },
            {"role": "tool", "content": "18 degrees", "tool_call_id": "toolu_1"},
            {"role": "user", "content": "And tomorrow?"},
        ]
    )

    assert body["messages"][1:] == [
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "18 degrees"},
                {"type": "text", "text": "And tomorrow?"},
            ],
        }
    ]


def test_encode_request_sends_tool_specs_with_an_input_schema():
    body = _encode([{"role": "user", "content": "Hi"}], tools=[WEATHER_SPEC])

    assert body["tools"] == [
        {
            "name": "get_weather",
            "description": "Current weather for a city.",
            "input_schema": WEATHER_SCHEMA,
        }
    ]


def test_encode_request_sends_the_default_max_tokens_when_none_is_set():
    assert _encode([{"role": "user", "content": "Hi"}])["max_tokens"] == 1024


def test_encode_request_sends_max_tokens_and_temperature():
    body = _encode([{"role": "user", "content": "Hi"}], max_tokens=256, temperature=0.0)

    assert (body["max_tokens"], body["temperature"]) == (256, 0.0)


def test_encode_request_leaves_out_unset_tools_and_temperature():
    assert sorted(_encode([{"role": "user", "content": "Hi"}])) == [
        "max_tokens",
        "messages",
        "model",
    ]


# -- decode_request ------------------------------------------------------------------


def test_decode_request_reads_a_real_recorded_request():
    # crewAI, second request: string user content, three tool_use blocks, three
    # tool_result blocks in one user turn, a top-level system prompt.
    body = {
        "max_tokens": 4096,
        "messages": [
            {"role": "user", "content": "\nCurrent Task: emit exactly 3 tool calls."},
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_01NwzvrxEz6tvT3A8ydvMtHu",
                        "name": "parallel_local_search_one",
                        "input": {"query": "latest OpenAI model release notes"},
                    },
                    {
                        "type": "tool_use",
                        "id": "toolu_01YCxzSB1suk9uPVC1uwfHz9",
                        "name": "parallel_local_search_two",
                        "input": {"query": "latest Anthropic model release notes"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_01NwzvrxEz6tvT3A8ydvMtHu",
                        "content": "[one] latest OpenAI model release notes",
                    },
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_01YCxzSB1suk9uPVC1uwfHz9",
                        "content": "[two] latest Anthropic model release notes",
                    },
                ],
            },
        ],
        "model": "claude-sonnet-4-6",
        "stop_sequences": ["\nObservation:"],
        "stream": False,
        "system": "You are Parallel Tool Agent. You follow tool instructions precisely.",
        "tools": [
            {
                "name": "parallel_local_search_one",
                "description": "Local search tool #1 for concurrency testing.",
                "input_schema": {
                    "properties": {"query": {"description": "Search query", "type": "string"}},
                    "required": ["query"],
                    "type": "object",
                },
            }
        ],
    }

    assert anthropic_messages.decode_request(body) == DecodedRequest(
        model="claude-sonnet-4-6",
        messages=[
            {
                "role": "system",
                "content": "You are Parallel Tool Agent. You follow tool instructions precisely.",
            },
            {"role": "user", "content": "\nCurrent Task: emit exactly 3 tool calls."},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "toolu_01NwzvrxEz6tvT3A8ydvMtHu",
                        "name": "parallel_local_search_one",
                        "arguments": {"query": "latest OpenAI model release notes"},
                    },
                    {
                        "id": "toolu_01YCxzSB1suk9uPVC1uwfHz9",
                        "name": "parallel_local_search_two",
                        "arguments": {"query": "latest Anthropic model release notes"},
                    },
                ],
            },
            {
                "role": "tool",
                "content": "[one] latest OpenAI model release notes",
                "tool_call_id": "toolu_01NwzvrxEz6tvT3A8ydvMtHu",
            },
            {
                "role": "tool",
                "content": "[two] latest Anthropic model release notes",
                "tool_call_id": "toolu_01YCxzSB1suk9uPVC1uwfHz9",
            },
        ],
        tools=[
            {
                "name": "parallel_local_search_one",
                "description": "Local search tool #1 for concurrency testing.",
                "parameters": {
                    "properties": {"query": {"description": "Search query", "type": "string"}},
                    "required": ["query"],
                    "type": "object",
                },
            }
        ],
        stream=False,
    )


def test_decode_request_reads_each_system_text_block_as_a_system_message():
    decoded = anthropic_messages.decode_request(
        {
            "model": "claude-haiku-4-5",
            "max_tokens": 1024,
            "system": [
                {"type": "text", "text": "Be brief. "},
                {
                    "type": "text",
                    "text": "Answer in French.",
                    "cache_control": {"type": "ephemeral"},
                },
            ],
            "messages": [{"role": "user", "content": "Hi"}],
        }
    )

    assert decoded.messages == [
        {"role": "system", "content": "Be brief. "},
        {"role": "system", "content": "Answer in French."},
        {"role": "user", "content": "Hi"},
    ]


def test_decode_request_keeps_the_text_blocks_of_a_user_turn_apart():
    decoded = anthropic_messages.decode_request(
        {
            "model": "claude-haiku-4-5",
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "Reserve Dune."},
                        {"type": "text", "text": "Now Emma."},
                    ],
                }
            ],
        }
    )

    assert decoded.messages == [
        {"role": "user", "content": "Reserve Dune."},
        {"role": "user", "content": "Now Emma."},
    ]


def test_a_user_turn_of_several_text_blocks_survives_decode_then_encode():
    turn = {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "Booked."},
            {"type": "text", "text": "Reserve Dune."},
            {"type": "text", "text": "Now Emma."},
        ],
    }
    decoded = anthropic_messages.decode_request({"model": "claude-haiku-4-5", "messages": [turn]})

    encoded = _encode(decoded.messages)

    assert encoded["messages"] == [turn]


def test_decode_request_reads_tool_result_content_given_as_blocks():
    decoded = anthropic_messages.decode_request(
        {
            "model": "claude-haiku-4-5",
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": "toolu_1",
                            "content": [{"type": "text", "text": "18 degrees"}],
                        }
                    ],
                }
            ],
        }
    )

    assert decoded.messages == [
        {"role": "tool", "content": "18 degrees", "tool_call_id": "toolu_1"}
    ]


# -- decode_response -----------------------------------------------------------------


def test_decode_response_reads_a_real_tool_use_reply():
    assert anthropic_messages.decode_response(TOOL_USE_RESPONSE) == Completion(
        content=None,
        tool_calls=(
            ToolCall(id="toolu_01X9wcHKKAZD9tBC711xipPa", name="get_user_country", arguments={}),
        ),
        model="claude-sonnet-4-5-20250929",
        usage=Usage(input_tokens=445, output_tokens=23),
        stop_reason="tool_use",
        response_id="msg_012TXW181edhmR5JCsQRsBKx",
    )


def test_decode_response_reads_a_real_text_reply():
    assert anthropic_messages.decode_response(TEXT_RESPONSE) == Completion(
        content="The weather in Tokyo is currently sunny and 72°F (approximately 22°C).",
        tool_calls=(),
        model="claude-sonnet-4-5-20250929",
        usage=Usage(input_tokens=701, output_tokens=22),
        stop_reason="end_turn",
        response_id="msg_014zmtEjjH4Qx8ntiJdbk36e",
    )


def test_decode_response_reads_text_and_parallel_tool_calls_in_order():
    completion = anthropic_messages.decode_response(PARALLEL_RESPONSE)

    match completion:
        case Completion(
            content="I'll execute all 3 parallel searches simultaneously right now!",
            tool_calls=(
                ToolCall(
                    "parallel_local_search_one",
                    {"query": "latest OpenAI model release notes"},
                    "toolu_01NwzvrxEz6tvT3A8ydvMtHu",
                ),
                ToolCall(
                    "parallel_local_search_two", {"query": "latest Anthropic model release notes"}
                ),
                ToolCall(
                    "parallel_local_search_three", {"query": "latest Gemini model release notes"}
                ),
            ),
            stop_reason="tool_use",
        ):
            pass
        case _:
            pytest.fail(f"unexpected completion: {completion!r}")


def test_decode_response_counts_cache_read_and_cache_creation_tokens_as_input():
    body = copy.deepcopy(TEXT_RESPONSE)
    body["usage"].update(
        input_tokens=12, cache_read_input_tokens=2048, cache_creation_input_tokens=300
    )

    assert anthropic_messages.decode_response(body).usage == Usage(
        input_tokens=12 + 2048 + 300,
        output_tokens=22,
        cache_read_tokens=2048,
        cache_write_tokens=300,
    )


def test_decode_response_reads_null_cache_token_counts_as_zero():
    body = copy.deepcopy(TEXT_RESPONSE)
    body["usage"].update(cache_read_input_tokens=None, cache_creation_input_tokens=None)

    assert anthropic_messages.decode_response(body).usage == Usage(701, 22)


def test_decode_response_skips_thinking_blocks():
    body = copy.deepcopy(TEXT_RESPONSE)
    body["content"].insert(
        0, {"type": "thinking", "thinking": "The user wants Tokyo.", "signature": "EqQB..."}
    )

    assert anthropic_messages.decode_response(body).content == TEXT_RESPONSE["content"][0]["text"]


def test_decode_response_joins_several_text_blocks():
    body = copy.deepcopy(TEXT_RESPONSE)
    body["content"] = [{"type": "text", "text": "Sunny "}, {"type": "text", "text": "today."}]

    assert anthropic_messages.decode_response(body).content == "Sunny today."


def test_decode_response_with_no_content_blocks_has_no_content():
    body = copy.deepcopy(TEXT_RESPONSE)
    body["content"] = []

    assert anthropic_messages.decode_response(body).content is None


# -- encode_response -----------------------------------------------------------------


def test_encode_response_of_a_text_reply_is_accepted_by_the_anthropic_sdk():
    body = anthropic_messages.encode_response(
        Completion(content="Sunny.", model="claude-haiku-4-5", usage=Usage(12, 3)),
        response_id="msg_1",
    )

    parsed = AnthropicMessage.model_validate(body)

    assert parsed.id == "msg_1"
    assert parsed.model == "claude-haiku-4-5"
    assert parsed.stop_reason == "end_turn"
    assert [block.model_dump(exclude_none=True) for block in parsed.content] == [
        {"type": "text", "text": "Sunny."}
    ]
    assert (parsed.usage.input_tokens, parsed.usage.output_tokens) == (12, 3)


def test_encode_response_of_text_and_tool_calls_is_accepted_by_the_anthropic_sdk():
    body = anthropic_messages.encode_response(
        Completion(
            content="Looking it up.",
            tool_calls=(
                ToolCall(id="toolu_1", name="get_weather", arguments={"city": "Paris"}),
                ToolCall(id="toolu_2", name="get_weather", arguments={"city": "Lyon"}),
            ),
            model="claude-haiku-4-5",
        ),
        response_id="msg_1",
    )

    parsed = AnthropicMessage.model_validate(body)

    assert parsed.stop_reason == "tool_use"
    assert [block.model_dump(exclude_none=True) for block in parsed.content] == [
        {"type": "text", "text": "Looking it up."},
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
        {"type": "tool_use", "id": "toolu_2", "name": "get_weather", "input": {"city": "Lyon"}},
    ]


def test_encode_response_fills_unknown_model_and_zero_usage():
    body = anthropic_messages.encode_response(Completion(content="hi"), response_id="msg_1")

    assert body == {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "unknown",
        "content": [{"type": "text", "text": "hi"}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 0, "output_tokens": 0},
    }


# -- extended thinking -----------------------------------------------------------------

THINKING = {"type": "thinking", "thinking": "The user wants Paris.", "signature": "sig-1"}


def test_decode_response_keeps_thinking_blocks_as_reasoning():
    body = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-haiku-4-5",
        "content": [THINKING, {"type": "text", "text": "Sunny."}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 3, "output_tokens": 2},
    }

    completion = anthropic_messages.decode_response(body)

    assert (completion.content, completion.reasoning) == ("Sunny.", (THINKING,))


def test_encode_request_sends_thinking_back_before_the_reply():
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "Weather?"},
        {
            "role": "assistant",
            "content": None,
            "reasoning": [THINKING],
            "tool_calls": [{"id": "toolu_1", "name": "get_weather", "arguments": {}}],
        },
        {"role": "tool", "content": "sunny", "tool_call_id": "toolu_1"},
    ]

    body: dict[str, Any] = anthropic_messages.encode_request(
        model="claude-haiku-4-5", messages=messages
    )

    match body["messages"][1]["content"]:
        case [{"type": "thinking", "signature": "sig-1"}, {"type": "tool_use", "id": "toolu_1"}]:
            pass
        case other:
            pytest.fail(f"thinking was not sent back first: {other}")


def test_decode_stream_joins_thinking_and_signature_deltas():
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"id": "msg_1", "model": "m", "usage": {}}},
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "thinking", "thinking": "", "signature": ""},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "thinking_delta", "thinking": "Par"},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "thinking_delta", "thinking": "is."},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "signature_delta", "signature": "sig"},
        },
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Hi"}},
        {"type": "message_stop"},
    ]
    raw = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)

    completion = anthropic_messages.decode_stream(raw)

    assert completion.content == "Hi"
    assert completion.reasoning == ({"type": "thinking", "thinking": "Paris.", "signature": "sig"},)


# -- text around server tools: paragraphs, not one run-on text --------------------------

SEARCHED: list[dict[str, Any]] = [
    {"type": "text", "text": "Let me search."},
    {
        "type": "server_tool_use",
        "id": "srvtoolu_1",
        "name": "web_search",
        "input": {"query": "Paris weather"},
    },
    {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
    {"type": "text", "text": "Paris is "},
    {"type": "text", "text": "sunny", "citations": [{"type": "web_search_result_location"}]},
    {"type": "text", "text": "."},
]


def test_decode_response_keeps_texts_that_a_server_tool_stands_between_apart():
    body = copy.deepcopy(TEXT_RESPONSE)
    body["content"] = SEARCHED

    assert anthropic_messages.decode_response(body).content == "Let me search.\n\nParis is sunny."


def test_decode_request_reads_an_assistant_turn_around_a_server_tool_the_same_way():
    decoded = anthropic_messages.decode_request(
        {"model": "m", "messages": [{"role": "assistant", "content": SEARCHED}]}
    )

    assert decoded.messages == [
        {"role": "assistant", "content": "Let me search.\n\nParis is sunny."}
    ]


def test_decode_stream_keeps_texts_that_a_server_tool_stands_between_apart():
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"id": "msg_1", "model": "m", "usage": {}}}
    ]
    for index, block in enumerate(SEARCHED):
        start = {**block, "text": ""} if block["type"] == "text" else block
        events.append({"type": "content_block_start", "index": index, "content_block": start})
        if block["type"] == "text":
            delta = {"type": "text_delta", "text": block["text"]}
            events.append({"type": "content_block_delta", "index": index, "delta": delta})
        events.append({"type": "content_block_stop", "index": index})
    events.append({"type": "message_stop"})
    raw = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)

    assert anthropic_messages.decode_stream(raw).content == "Let me search.\n\nParis is sunny."


def test_decode_response_keeps_the_server_tools_the_model_ran():
    body = copy.deepcopy(TEXT_RESPONSE)
    body["content"] = SEARCHED

    completion = anthropic_messages.decode_response(body)

    assert completion.server_tools == (
        {"id": "srvtoolu_1", "name": "web_search", "input": {"query": "Paris weather"}},
    )
    assert completion.tool_calls == ()
