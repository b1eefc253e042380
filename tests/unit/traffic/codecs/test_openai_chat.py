"""Unit tests of pytest_agentctx.traffic.codecs.openai_chat (POST /v1/chat/completions).

The response bodies are copied from real recordings in the compatibility corpus
(simonw/llm ``test_tool_use_chain_of_two_calls``, crewAI parallel tool calls) so the
decoder is proved on what OpenAI really sends. What every codec does alike (round trips,
malformed JSON, streams) is checked in ``test_codec_contract.py``.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from openai.types.chat import ChatCompletion

from pytest_agentctx.context.model import INVALID_ARGUMENTS_KEY, ToolCall
from pytest_agentctx.context.tools import ToolSpec
from pytest_agentctx.traffic.codecs import openai_chat
from pytest_agentctx.traffic.codecs.base import Completion, DecodedRequest, Usage

WEATHER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string", "description": "The city's name."}},
    "required": ["city"],
    "additionalProperties": False,
}
WEATHER_SPEC = ToolSpec("get_weather", "Current weather for a city.", WEATHER_SCHEMA)

# simonw/llm, first reply: one tool call, no text.
TOOL_CALL_RESPONSE: dict[str, Any] = {
    "id": "chatcmpl-BWpGNGdPONTwxHkZVxbqctQSBDmTn",
    "object": "chat.completion",
    "created": 1747163251,
    "model": "gpt-4o-mini-2024-07-18",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_TTY8UFNo7rNCaOBUNtlRSvMG",
                        "type": "function",
                        "function": {
                            "name": "lookup_population",
                            "arguments": '{"country":"Crumpet"}',
                        },
                    }
                ],
                "refusal": None,
                "annotations": [],
            },
            "logprobs": None,
            "finish_reason": "tool_calls",
        }
    ],
    "usage": {
        "prompt_tokens": 92,
        "completion_tokens": 17,
        "total_tokens": 109,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    },
    "service_tier": "default",
    "system_fingerprint": "fp_0392822090",
}

# simonw/llm, last reply: the final text answer.
TEXT_RESPONSE: dict[str, Any] = {
    "id": "chatcmpl-BWpGTZY785VsZipCO0bAvF7Z7tjdA",
    "object": "chat.completion",
    "created": 1747163257,
    "model": "gpt-4o-mini-2024-07-18",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": "YES",
                "refusal": None,
                "annotations": [],
            },
            "logprobs": None,
            "finish_reason": "stop",
        }
    ],
    "usage": {
        "prompt_tokens": 146,
        "completion_tokens": 3,
        "total_tokens": 149,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    },
    "service_tier": "default",
    "system_fingerprint": "fp_0392822090",
}

# crewAI: three parallel tool calls in one reply.
PARALLEL_RESPONSE: dict[str, Any] = {
    "id": "chatcmpl-DAldZHfQGVcV3FNwAJAtNooU3PAU7",
    "object": "chat.completion",
    "created": 1771458769,
    "model": "gpt-4o-mini-2024-07-18",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_kz1qLLRsugXwWiQMeH9oFAep",
                        "type": "function",
                        "function": {
                            "name": "parallel_local_search_one",
                            "arguments": '{"query": "latest OpenAI model release notes"}',
                        },
                    },
                    {
                        "id": "call_yNouGq1Kv6P5W9fhTng6acZi",
                        "type": "function",
                        "function": {
                            "name": "parallel_local_search_two",
                            "arguments": '{"query": "latest Anthropic model release notes"}',
                        },
                    },
                    {
                        "id": "call_O7MqnuniDmyT6a0BS31GTunB",
                        "type": "function",
                        "function": {
                            "name": "parallel_local_search_three",
                            "arguments": '{"query": "latest Gemini model release notes"}',
                        },
                    },
                ],
                "refusal": None,
                "annotations": [],
            },
            "logprobs": None,
            "finish_reason": "tool_calls",
        }
    ],
    "usage": {"prompt_tokens": 259, "completion_tokens": 78, "total_tokens": 337},
    "service_tier": "default",
    "system_fingerprint": "fp_414ba99a04",
}


def _response_with_message(message: dict[str, Any], **extra: Any) -> dict[str, Any]:
    body = copy.deepcopy(TEXT_RESPONSE)
    body["choices"][0]["message"] = message
    body.update(extra)
    return body


# -- encode_request ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "wire"),
    [
        pytest.param(
            {"role": "system", "content": "Be brief."},
            {"role": "system", "content": "Be brief."},
            id="system",
        ),
        pytest.param(
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "user", "content": "Weather in Paris?"},
            id="user",
        ),
        pytest.param(
            {"role": "user", "content": None},
            {"role": "user", "content": ""},
            id="user-without-content",
        ),
        pytest.param(
            {"role": "assistant", "content": "Sunny."},
            {"role": "assistant", "content": "Sunny."},
            id="assistant-text",
        ),
        pytest.param(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"}}
                ],
            },
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                    }
                ],
            },
            id="assistant-tool-calls",
        ),
        pytest.param(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "name": "get_weather",
                        "arguments": {INVALID_ARGUMENTS_KEY: '{"city": "Par'},
                    }
                ],
            },
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Par'},
                    }
                ],
            },
            id="assistant-invalid-json-arguments-sent-back-as-the-model-wrote-them",
        ),
        pytest.param(
            {
                "role": "tool",
                "content": "18 degrees celsius",
                "tool_call_id": "call_1",
                "name": "get_weather",
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "18 degrees celsius"},
            id="tool-result",
        ),
        pytest.param(
            {
                "role": "tool",
                "content": "Tool get_weather failed: TimeoutError: down",
                "tool_call_id": "call_1",
                "name": "get_weather",
                "is_error": True,
            },
            {
                "role": "tool",
                "tool_call_id": "call_1",
                "content": "Tool get_weather failed: TimeoutError: down",
            },
            id="tool-error-result-has-no-is_error-field-on-this-wire",
        ),
    ],
)
def test_encode_request_writes_each_role_in_the_chat_completions_shape(message, wire):
    body = openai_chat.encode_request(model="gpt-4o-mini", messages=[message])

    assert body == {"model": "gpt-4o-mini", "messages": [wire]}


def test_encode_request_sends_tool_specs_as_functions():
    body = openai_chat.encode_request(
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": "Weather in Paris?"}],
        tools=[WEATHER_SPEC],
    )

    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Current weather for a city.",
                "parameters": WEATHER_SCHEMA,
            },
        }
    ]


def test_encode_request_sends_max_tokens_as_max_completion_tokens_and_temperature():
    body = openai_chat.encode_request(
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": "hi"}],
        max_tokens=256,
        temperature=0.0,
    )

    assert body == {
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": "hi"}],
        "max_completion_tokens": 256,
        "temperature": 0.0,
    }


def test_encode_request_leaves_out_unset_tools_max_tokens_and_temperature():
    body = openai_chat.encode_request(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}]
    )

    assert sorted(body) == ["messages", "model"]


# -- decode_request ------------------------------------------------------------------


def test_decode_request_reads_a_real_recorded_request():
    # simonw/llm, third request: history with a tool call and its result, no "content"
    # on the assistant message, arguments as the SDK re-serialised them.
    body = {
        "messages": [
            {
                "role": "user",
                "content": "Can the country of Crumpet have dragons? Answer with only YES or NO",
            },
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "type": "function",
                        "id": "call_TTY8UFNo7rNCaOBUNtlRSvMG",
                        "function": {
                            "name": "lookup_population",
                            "arguments": '{"country": "Crumpet"}',
                        },
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_TTY8UFNo7rNCaOBUNtlRSvMG", "content": "123124"},
        ],
        "model": "gpt-4o-mini",
        "stream": False,
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "lookup_population",
                    "description": "Returns the current population of the specified country",
                    "parameters": {
                        "properties": {"country": {"type": "string"}},
                        "required": ["country"],
                        "type": "object",
                    },
                },
            }
        ],
    }

    assert openai_chat.decode_request(body) == DecodedRequest(
        model="gpt-4o-mini",
        messages=[
            {
                "role": "user",
                "content": "Can the country of Crumpet have dragons? Answer with only YES or NO",
            },
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_TTY8UFNo7rNCaOBUNtlRSvMG",
                        "name": "lookup_population",
                        "arguments": {"country": "Crumpet"},
                    }
                ],
            },
            {"role": "tool", "content": "123124", "tool_call_id": "call_TTY8UFNo7rNCaOBUNtlRSvMG"},
        ],
        tools=[
            {
                "name": "lookup_population",
                "description": "Returns the current population of the specified country",
                "parameters": {
                    "properties": {"country": {"type": "string"}},
                    "required": ["country"],
                    "type": "object",
                },
            }
        ],
        stream=False,
    )


def test_decode_request_reads_developer_messages_as_system():
    decoded = openai_chat.decode_request(
        {"model": "o3-mini", "messages": [{"role": "developer", "content": "Be brief."}]}
    )

    assert decoded.messages == [{"role": "system", "content": "Be brief."}]


def test_decode_request_keeps_the_text_parts_of_a_content_array_apart():
    decoded = openai_chat.decode_request(
        {
            "model": "gpt-4o",
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "What is in "},
                        {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
                        {"type": "text", "text": "this picture?"},
                    ],
                }
            ],
        }
    )

    assert decoded.messages == [
        {"role": "user", "content": "What is in "},
        {"role": "user", "content": "this picture?"},
    ]


def test_decode_request_reads_a_content_array_of_one_text_part_as_its_text():
    decoded = openai_chat.decode_request(
        {
            "model": "gpt-4o",
            "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}],
        }
    )

    assert decoded.messages == [{"role": "user", "content": "Hi"}]


def test_decode_request_keeps_invalid_json_arguments_as_raw_text():
    decoded = openai_chat.decode_request(
        {
            "model": "gpt-4o-mini",
            "messages": [
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"city": "Par'},
                        }
                    ],
                }
            ],
        }
    )

    assert decoded.messages[0]["tool_calls"] == [
        {
            "id": "call_1",
            "name": "get_weather",
            "arguments": {INVALID_ARGUMENTS_KEY: '{"city": "Par'},
        }
    ]


# -- decode_response -----------------------------------------------------------------


def test_decode_response_reads_a_real_tool_call_reply():
    assert openai_chat.decode_response(TOOL_CALL_RESPONSE) == Completion(
        content=None,
        tool_calls=(
            ToolCall(
                id="call_TTY8UFNo7rNCaOBUNtlRSvMG",
                name="lookup_population",
                arguments={"country": "Crumpet"},
            ),
        ),
        model="gpt-4o-mini-2024-07-18",
        usage=Usage(input_tokens=92, output_tokens=17),
        stop_reason="tool_calls",
        response_id="chatcmpl-BWpGNGdPONTwxHkZVxbqctQSBDmTn",
    )


def test_decode_response_reads_a_real_text_reply():
    assert openai_chat.decode_response(TEXT_RESPONSE) == Completion(
        content="YES",
        tool_calls=(),
        model="gpt-4o-mini-2024-07-18",
        usage=Usage(input_tokens=146, output_tokens=3),
        stop_reason="stop",
        response_id="chatcmpl-BWpGTZY785VsZipCO0bAvF7Z7tjdA",
    )


def test_decode_response_keeps_parallel_tool_calls_in_order():
    completion = openai_chat.decode_response(PARALLEL_RESPONSE)

    match completion.tool_calls:
        case (
            ToolCall(
                "parallel_local_search_one",
                {"query": "latest OpenAI model release notes"},
                "call_kz1qLLRsugXwWiQMeH9oFAep",
            ),
            ToolCall(
                "parallel_local_search_two", {"query": "latest Anthropic model release notes"}
            ),
            ToolCall("parallel_local_search_three", {"query": "latest Gemini model release notes"}),
        ):
            pass
        case _:
            pytest.fail(f"unexpected tool calls: {completion.tool_calls}")


def test_decode_response_joins_a_content_array_into_text():
    body = _response_with_message(
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "Sunny "}, {"type": "text", "text": "today."}],
        }
    )

    assert openai_chat.decode_response(body).content == "Sunny today."


def test_decode_response_reads_null_token_counts_as_zero():
    body = _response_with_message(
        TEXT_RESPONSE["choices"][0]["message"],
        usage={"prompt_tokens": None, "completion_tokens": 5, "total_tokens": 5},
    )

    assert openai_chat.decode_response(body).usage == Usage(input_tokens=0, output_tokens=5)


# -- encode_response -----------------------------------------------------------------


def test_encode_response_of_a_text_reply_is_accepted_by_the_openai_sdk():
    body = openai_chat.encode_response(
        Completion(content="Sunny.", model="gpt-4o-mini", usage=Usage(12, 3)),
        response_id="chatcmpl_1",
        created=1747163257,
    )

    parsed = ChatCompletion.model_validate(body)

    assert parsed.id == "chatcmpl_1"
    assert parsed.created == 1747163257
    assert parsed.model == "gpt-4o-mini"
    assert parsed.choices[0].message.content == "Sunny."
    assert parsed.choices[0].message.tool_calls is None
    assert parsed.choices[0].finish_reason == "stop"
    assert parsed.usage is not None
    assert (
        parsed.usage.prompt_tokens,
        parsed.usage.completion_tokens,
        parsed.usage.total_tokens,
    ) == (12, 3, 15)


def test_encode_response_of_tool_calls_is_accepted_by_the_openai_sdk():
    body = openai_chat.encode_response(
        Completion(
            tool_calls=(
                ToolCall(id="call_1", name="get_weather", arguments={"city": "Paris"}),
                ToolCall(id="call_2", name="get_weather", arguments={"city": "Lyon"}),
            ),
            model="gpt-4o-mini",
        ),
        response_id="chatcmpl_1",
    )

    parsed = ChatCompletion.model_validate(body)

    assert parsed.choices[0].finish_reason == "tool_calls"
    assert parsed.choices[0].message.content is None
    assert [
        (call.id, call.function.name, call.function.arguments)  # type: ignore[union-attr]
        for call in parsed.choices[0].message.tool_calls or []
    ] == [
        ("call_1", "get_weather", '{"city":"Paris"}'),
        ("call_2", "get_weather", '{"city":"Lyon"}'),
    ]


def test_encode_response_fills_unknown_model_and_zero_usage():
    body = openai_chat.encode_response(Completion(content="hi"), response_id="chatcmpl_1")

    assert body == {
        "id": "chatcmpl_1",
        "object": "chat.completion",
        "created": 0,
        "model": "unknown",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "hi", "refusal": None},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    }


def test_decode_response_of_a_reply_stopped_by_a_content_filter_has_no_content():
    # Azure OpenAI, recorded by OpenLLMetry: the filtered choice has no message at all.
    body = {
        "id": "chatcmpl-9HpyGSWv1hoKdGaUaiFhfxzTEVlZo",
        "model": "gpt-35-turbo",
        "object": "chat.completion",
        "choices": [
            {
                "content_filter_results": {"hate": {"filtered": True, "severity": "high"}},
                "finish_reason": "content_filter",
                "index": 0,
                "logprobs": None,
            }
        ],
        "usage": {"completion_tokens": 19, "prompt_tokens": 15, "total_tokens": 34},
    }

    assert openai_chat.decode_response(body) == Completion(
        content=None,
        model="gpt-35-turbo",
        usage=Usage(15, 19),
        stop_reason="content_filter",
        response_id="chatcmpl-9HpyGSWv1hoKdGaUaiFhfxzTEVlZo",
    )


def test_decode_response_keeps_the_tools_a_compound_model_ran_as_server_tools():
    # Groq's compound models list the tools they ran in the message's executed_tools.
    body = _response_with_message(
        {
            "role": "assistant",
            "content": "Partly cloudy, 17°C.",
            "executed_tools": [
                {
                    "index": "0",
                    "type": "search",
                    "arguments": '{"query": "What is the weather in San Francisco today?"}',
                    "output": "Title: Weather in San Francisco ...",
                }
            ],
        }
    )

    assert openai_chat.decode_response(body).server_tools == (
        {"name": "search", "input": {"query": "What is the weather in San Francisco today?"}},
    )
