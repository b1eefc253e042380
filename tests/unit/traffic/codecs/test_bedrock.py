"""Unit tests of pytest_agentctx.traffic.codecs.bedrock (Converse, ConverseStream,
InvokeModel and InvokeModelWithResponseStream with Anthropic's Messages body).

The recorded bodies come from real calls: pydantic-ai's Bedrock test cassettes (MIT,
``tests/models/cassettes/test_bedrock/``: ``test_bedrock_model_structured_response``,
``test_bedrock_model_with_code_execution_tool``, ``test_bedrock_model_thinking_part_anthropic``
and ``test_bedrock_error``; long texts and signatures shortened). The round trips go through
the real ``boto3`` client, answered at its transport (botocore's ``before-send`` event): no
socket is opened. What every codec does alike is checked in ``test_codec_contract.py``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse

from pytest_agentctx import CodecError, Completion, ToolCall, ToolSpec, Usage
from pytest_agentctx.traffic.codecs import bedrock, codec_for_path
from pytest_agentctx.traffic.codecs.eventstream import (
    EventMessage,
    encode_message,
    encode_messages,
    event,
    exception,
)

MODEL = "us.anthropic.claude-sonnet-4-20250514-v1:0"
CONVERSE = "/model/us.anthropic.claude-sonnet-4-20250514-v1%3A0/converse"
WEATHER = ToolSpec(
    "get_weather",
    "Current weather for a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
PARIS = ToolCall(id="tooluse_1", name="get_weather", arguments={"city": "Paris"})

# pydantic-ai's structured response: text and a tool call (Amazon Nova Micro)
RECORDED_TOOL_USE: dict[str, Any] = {
    "metrics": {"latencyMs": 545},
    "output": {
        "message": {
            "content": [
                {"text": "<thinking> I need to use the temperature tool.</thinking>\n"},
                {
                    "toolUse": {
                        "input": {"city": "London", "date": "2022-01-01"},
                        "name": "temperature",
                        "toolUseId": "tooluse_xTYmv3jIR0yGxOYLOxSLJg",
                    }
                },
            ],
            "role": "assistant",
        }
    },
    "stopReason": "tool_use",
    "usage": {"inputTokens": 551, "outputTokens": 136, "totalTokens": 687},
}
# the request that answers it
RECORDED_FOLLOW_UP: dict[str, Any] = {
    "messages": [
        {"role": "user", "content": [{"text": "What was the temperature in London?"}]},
        {
            "role": "assistant",
            "content": [
                {"text": "<thinking> I need to use the temperature tool.</thinking>\n"},
                {
                    "toolUse": {
                        "toolUseId": "tooluse_xTYmv3jIR0yGxOYLOxSLJg",
                        "name": "temperature",
                        "input": {"date": "2022-01-01", "city": "London"},
                    }
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "toolResult": {
                        "toolUseId": "tooluse_xTYmv3jIR0yGxOYLOxSLJg",
                        "content": [{"text": "30°C"}],
                        "status": "success",
                    }
                }
            ],
        },
    ],
    "system": [{"text": "You are a helpful chatbot."}],
    "inferenceConfig": {},
    "toolConfig": {
        "tools": [
            {
                "toolSpec": {
                    "name": "temperature",
                    "description": "Get the temperature in a city on a specific date.",
                    "inputSchema": {"json": {"type": "object", "required": ["city", "date"]}},
                }
            }
        ]
    },
}
# Nova's code interpreter: a tool the provider runs itself, then the client's tool
RECORDED_SERVER_TOOL: dict[str, Any] = {
    "output": {
        "message": {
            "content": [
                {
                    "toolUse": {
                        "input": {"snippet": "1234 * 5678"},
                        "name": "nova_code_interpreter",
                        "toolUseId": "tooluse_dV5ehBNfl1hUE-UTM9cIww",
                        "type": "server_tool_use",
                    }
                },
                {
                    "toolResult": {
                        "content": [{"json": {"exitCode": 0, "stdOut": "7006652"}}],
                        "status": "success",
                        "toolUseId": "tooluse_dV5ehBNfl1hUE-UTM9cIww",
                        "type": "nova_code_interpreter_result",
                    }
                },
                {
                    "toolUse": {
                        "input": {"result": 7006652.0},
                        "name": "final_result",
                        "toolUseId": "tooluse_DaRsVjwcShCI_3pOsIsWqg",
                        "type": "tool_use",
                    }
                },
            ],
            "role": "assistant",
        }
    },
    "stopReason": "tool_use",
    "usage": {"inputTokens": 1002, "outputTokens": 59, "serverToolUsage": {}, "totalTokens": 1061},
}
# Claude's extended thinking through Converse, with prompt-cache counts
RECORDED_REASONING: dict[str, Any] = {
    "output": {
        "message": {
            "content": [
                {
                    "reasoningContent": {
                        "reasoningText": {
                            "signature": "Eu4CCkgIBxABGAIqQCc4A",
                            "text": "This is a straightforward question.",
                        }
                    }
                },
                {"text": "Here are the basic steps for crossing the street safely."},
            ],
            "role": "assistant",
        }
    },
    "stopReason": "end_turn",
    "usage": {
        "cacheReadInputTokens": 10,
        "cacheWriteInputTokens": 5,
        "inputTokens": 42,
        "outputTokens": 300,
        "totalTokens": 357,
    },
}


# -- boto3, answered at its transport ----------------------------------------------------


class _Raw:
    """The raw body botocore reads: its chunks, as urllib3 streams them."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    def stream(self, **_: object) -> Iterator[bytes]:
        yield from self.chunks


def _client(chunks: list[bytes], content_type: str, sent: list[Any], status: int = 200) -> Any:
    client = boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        aws_access_key_id="AKIDEXAMPLE",
        aws_secret_access_key="not-a-secret",
    )

    def send(request: Any, **_: object) -> AWSResponse:
        sent.append(request)
        headers = {"content-type": content_type}
        if status >= 400:
            headers["x-amzn-ErrorType"] = "ValidationException"
        return AWSResponse(request.url, status, headers, _Raw(chunks))

    client.meta.events.register("before-send.bedrock-runtime.*", send)
    return client


def _json_client(body: dict[str, Any], sent: list[Any], status: int = 200) -> Any:
    return _client([json.dumps(body).encode()], "application/json", sent, status)


def _stream_client(messages: list[EventMessage], sent: list[Any]) -> Any:
    chunks = [encode_message(message) for message in messages]
    return _client(chunks, "application/vnd.amazon.eventstream", sent)


CONVERSATION: list[dict[str, Any]] = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": "Checking.", "tool_calls": [PARIS.model_dump()]},
    {"role": "tool", "content": "18C", "tool_call_id": "tooluse_1"},
]


def test_boto3_sends_what_encode_request_writes_and_decode_request_reads_it():
    sent: list[Any] = []
    body = bedrock.encode_request(
        model=MODEL, messages=CONVERSATION, tools=[WEATHER], max_tokens=64, temperature=0.0
    )
    reply = bedrock.encode_response(Completion(content="18C."), response_id="r")

    _json_client(reply, sent).converse(**body)

    (request,) = sent
    assert request.url.endswith(CONVERSE)
    decoded = bedrock.decode_request_at(CONVERSE, json.loads(request.body))
    assert decoded.model == MODEL
    assert decoded.messages == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "Checking.", "tool_calls": [PARIS.model_dump()]},
        {"role": "tool", "content": "18C", "tool_call_id": "tooluse_1"},
    ]
    assert decoded.tools == [
        {
            "name": "get_weather",
            "description": WEATHER.description,
            "parameters": WEATHER.parameters,
        }
    ]


def test_boto3_reads_what_encode_response_writes():
    sent: list[Any] = []
    completion = Completion(content="Looking.", tool_calls=(PARIS,), usage=Usage(12, 7))

    reply = _json_client(bedrock.encode_response(completion, response_id="r"), sent).converse(
        modelId=MODEL, messages=[{"role": "user", "content": [{"text": "hi"}]}]
    )

    assert reply["stopReason"] == "tool_use"
    assert reply["usage"] == {"inputTokens": 12, "outputTokens": 7, "totalTokens": 19}
    assert reply["output"]["message"]["content"] == [
        {"text": "Looking."},
        {"toolUse": {"toolUseId": "tooluse_1", "name": "get_weather", "input": {"city": "Paris"}}},
    ]


def test_boto3_reads_the_stream_encode_stream_writes_and_decode_stream_reads_it_back():
    sent: list[Any] = []
    completion = Completion(
        content="Sunny in Paris.",
        tool_calls=(PARIS,),
        usage=Usage(20, 9),
        stop_reason="tool_use",
    )
    messages = bedrock.encode_stream(completion, response_id="r")

    reply = _stream_client(messages, sent).converse_stream(
        modelId=MODEL, messages=[{"role": "user", "content": [{"text": "hi"}]}]
    )
    events = list(reply["stream"])

    assert [next(iter(e)) for e in events][:2] == ["messageStart", "contentBlockDelta"]
    assert events[-2] == {"messageStop": {"stopReason": "tool_use"}}
    assert events[-1]["metadata"]["usage"] == {
        "inputTokens": 20,
        "outputTokens": 9,
        "totalTokens": 29,
    }
    assert bedrock.decode_stream(encode_messages(messages)) == completion


def test_an_invoke_model_stream_carries_anthropic_events_in_base64():
    sent: list[Any] = []
    completion = Completion(content="Hi.", model=MODEL, usage=Usage(3, 2), stop_reason="end_turn")
    messages = bedrock.encode_invoke_stream(completion, response_id="msg_1")
    body = {"anthropic_version": "bedrock-2023-05-31", "max_tokens": 10, "messages": []}

    reply = _stream_client(messages, sent).invoke_model_with_response_stream(
        modelId=MODEL, body=json.dumps(body)
    )
    chunks = [json.loads(item["chunk"]["bytes"]) for item in reply["body"]]

    assert chunks[0]["type"] == "message_start"
    assert sent[0].url.endswith("/invoke-with-response-stream")
    assert bedrock.decode_stream(messages) == Completion(
        content="Hi.", model=MODEL, usage=Usage(3, 2), stop_reason="end_turn", response_id="msg_1"
    )


def test_an_invoke_model_body_with_anthropic_messages_is_read_by_that_codec():
    body = {
        "anthropic_version": "bedrock-2023-05-31",
        "max_tokens": 100,
        "system": "Be brief.",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}],
    }

    decoded = bedrock.decode_request_at(f"/model/{MODEL.replace(':', '%3A')}/invoke", body)

    assert decoded.model == MODEL
    assert decoded.messages == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
    ]
    reply = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude",
        "content": [{"type": "text", "text": "Hello"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 5, "output_tokens": 1},
    }
    assert bedrock.decode_response(reply).content == "Hello"


@pytest.mark.parametrize(
    ("model", "body", "family"),
    [
        ("meta.llama3-70b-instruct-v1%3A0", {"prompt": "Hi", "max_gen_len": 10}, "meta.llama3"),
        (
            "us.amazon.nova-micro-v1%3A0",
            {"messages": [{"role": "user", "content": [{"text": "Hi"}]}]},
            "amazon.nova",
        ),
        ("amazon.titan-text-express-v1", {"inputText": "Hi"}, "amazon.titan"),
    ],
)
def test_an_invoke_model_body_of_another_family_names_that_family(model, body, family):
    with pytest.raises(CodecError, match=rf"\(family '{family}'\) is not read.*Converse"):
        bedrock.decode_request_at(f"/model/{model}/invoke", body)


def test_the_model_comes_percent_decoded_from_the_path_and_the_stream_from_the_operation():
    path = "/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123%3Ainference-profile%2Feu.meta.llama3"

    assert bedrock.model_of_path(f"{path}/converse-stream") == (
        "arn:aws:bedrock:us-east-1:123:inference-profile/eu.meta.llama3"
    )
    assert bedrock.is_stream_path(f"{path}/converse-stream")
    assert bedrock.is_stream_path(f"{path}/invoke-with-response-stream")
    assert not bedrock.is_stream_path(f"{path}/converse")
    assert bedrock.model_of_path("/v1/messages") is None
    assert bedrock.model_family(bedrock.model_of_path(f"{path}/invoke") or "") == "meta.llama3"
    assert codec_for_path(f"{path}/converse") is bedrock


# -- real recordings -------------------------------------------------------------------


def test_a_recorded_tool_use_reply_is_read():
    completion = bedrock.decode_response(RECORDED_TOOL_USE)

    assert completion.content == "<thinking> I need to use the temperature tool.</thinking>\n"
    assert completion.tool_calls == (
        ToolCall(
            id="tooluse_xTYmv3jIR0yGxOYLOxSLJg",
            name="temperature",
            arguments={"city": "London", "date": "2022-01-01"},
        ),
    )
    assert completion.stop_reason == "tool_use"
    assert completion.usage == Usage(551, 136)


def test_the_recorded_tool_result_is_a_tool_message_joined_by_its_tool_use_id():
    decoded = bedrock.decode_request(RECORDED_FOLLOW_UP)

    assert [m["role"] for m in decoded.messages] == ["system", "user", "assistant", "tool"]
    assert decoded.messages[-1] == {
        "role": "tool",
        "content": "30°C",
        "tool_call_id": "tooluse_xTYmv3jIR0yGxOYLOxSLJg",
    }
    assert decoded.messages[2]["tool_calls"][0]["id"] == "tooluse_xTYmv3jIR0yGxOYLOxSLJg"


def test_a_tool_the_provider_ran_is_a_server_tool_not_a_tool_call():
    completion = bedrock.decode_response(RECORDED_SERVER_TOOL)

    assert [call.name for call in completion.tool_calls] == ["final_result"]
    assert completion.server_tools == (
        {
            "id": "tooluse_dV5ehBNfl1hUE-UTM9cIww",
            "name": "nova_code_interpreter",
            "input": {"snippet": "1234 * 5678"},
        },
    )


def test_reasoning_is_kept_and_sent_back_first_and_cached_tokens_count_as_input():
    completion = bedrock.decode_response(RECORDED_REASONING)

    assert completion.usage == Usage(57, 300, cache_read_tokens=10, cache_write_tokens=5)
    (item,) = completion.reasoning
    assert item == {
        "type": "bedrock_reasoning",
        "reasoningText": {
            "signature": "Eu4CCkgIBxABGAIqQCc4A",
            "text": "This is a straightforward question.",
        },
    }
    assistant = {"role": "assistant", "content": completion.content, "reasoning": [item]}
    body: dict[str, Any] = bedrock.encode_request(model=MODEL, messages=[assistant])
    recorded = RECORDED_REASONING["output"]["message"]["content"][0]
    assert body["messages"][0]["content"][0] == recorded


def test_a_streamed_reasoning_block_is_joined_with_its_signature():
    messages = [
        event("messageStart", {"role": "assistant"}),
        event(
            "contentBlockDelta",
            {"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "Think"}}},
        ),
        event(
            "contentBlockDelta",
            {"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "ing."}}},
        ),
        event(
            "contentBlockDelta",
            {"contentBlockIndex": 0, "delta": {"reasoningContent": {"signature": "sig"}}},
        ),
        event("contentBlockStop", {"contentBlockIndex": 0}),
        event(
            "contentBlockDelta", {"contentBlockIndex": 1, "delta": {"text": "Done."}, "p": "abc"}
        ),
        event("messageStop", {"stopReason": "end_turn", "p": "abcdef"}),
    ]

    completion = bedrock.decode_stream(messages)

    assert completion.content == "Done."
    assert completion.reasoning == (
        {"type": "bedrock_reasoning", "reasoningText": {"text": "Thinking.", "signature": "sig"}},
    )
    assert completion.stop_reason == "end_turn"


def test_an_exception_in_the_stream_names_its_type_and_message():
    messages = [
        event("messageStart", {"role": "assistant"}),
        exception("throttlingException", "Too many requests, please wait."),
    ]

    with pytest.raises(
        CodecError, match="message #1 is an error: throttlingException: Too many requests"
    ):
        bedrock.decode_stream(messages)


def test_boto3_reads_a_recorded_error_body():
    sent: list[Any] = []
    client = _json_client({"message": "The provided model identifier is invalid."}, sent, 400)

    with pytest.raises(client.exceptions.ValidationException, match="model identifier"):
        client.converse(modelId="us.does-not-exist-model-v1:0", messages=[])


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({"messages": [{"role": "user", "content": "Hi"}]}, "'content' is not a list"),
        ({"system": []}, "no 'messages' field"),
    ],
)
def test_a_request_of_another_shape_is_a_codec_error(body, problem):
    with pytest.raises(CodecError, match=problem):
        bedrock.decode_request(body)


def test_a_response_without_output_message_is_a_codec_error():
    with pytest.raises(CodecError, match="output: the JSON has no 'message' field"):
        bedrock.decode_response({"output": {}, "stopReason": "end_turn"})


def test_a_recorded_reasoning_stream_keeps_the_thinking_with_its_signature():
    # pydantic-ai's test_bedrock_model_thinking_part_stream (streams/README.md)
    raw = (
        Path(__file__).parent / "streams" / "bedrock_converse_reasoning.eventstream"
    ).read_bytes()

    completion = bedrock.decode_stream(raw)

    assert completion.content == "Hello! It's nice to meet you. How can I help you today?"
    (item,) = completion.reasoning
    text = item["reasoningText"]
    assert isinstance(text, dict)
    assert text["text"].startswith('The user has greeted me with a simple "Hello".')
    assert text["signature"].startswith("Eu0CCkgIBxABGAIqQJDccbDQkr81n7QjZ0Fi43umSvw0")
    assert (completion.stop_reason, completion.usage) == ("end_turn", Usage(36, 73))
