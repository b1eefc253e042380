"""Unit tests of the loopback provider serving Amazon Bedrock's API to ``boto3``.

The ``bedrock-runtime`` client talks to the server over HTTP on 127.0.0.1
(``endpoint_url=provider.bedrock_endpoint_url``), through ``urllib3``; no interceptor is
active. The server does not check SigV4: any credentials do.
"""

from __future__ import annotations

import json

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from pytest_agentctx.doubles.loopback import LoopbackProvider

MODEL = "us.anthropic.claude-3-5-haiku-20241022-v1:0"
QUESTION = [{"role": "user", "content": [{"text": "Weather in Paris?"}]}]
TOOLS = {
    "tools": [
        {
            "toolSpec": {
                "name": "get_weather",
                "description": "The weather in a city.",
                "inputSchema": {"json": {"type": "object", "properties": {"city": {}}}},
            }
        }
    ]
}


def client_of(provider: LoopbackProvider):
    return boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=provider.bedrock_endpoint_url,
        aws_access_key_id="AKIDLOOPBACK",
        aws_secret_access_key="loopback-secret",
        config=Config(retries={"total_max_attempts": 1}),
    )


def test_converse_gets_a_tool_use_and_then_text(provider):
    provider.reply_tool_call("get_weather", city="Paris").reply("Sunny in Paris.")
    bedrock = client_of(provider)

    first = bedrock.converse(modelId=MODEL, messages=QUESTION, toolConfig=TOOLS)
    second = bedrock.converse(modelId=MODEL, messages=QUESTION, toolConfig=TOOLS)

    (block,) = first["output"]["message"]["content"]
    assert (block["toolUse"]["name"], block["toolUse"]["input"], first["stopReason"]) == (
        "get_weather",
        {"city": "Paris"},
        "tool_use",
    )
    assert second["output"]["message"]["content"] == [{"text": "Sunny in Paris."}]
    assert second["stopReason"] == "end_turn"
    provider.verify()


def test_each_call_is_logged_with_its_path_and_model(provider):
    provider.reply("Hi.")

    client_of(provider).converse(modelId=MODEL, messages=QUESTION)

    (exchange,) = provider.exchanges
    assert (exchange.path, exchange.status, exchange.streamed) == (
        "/model/us.anthropic.claude-3-5-haiku-20241022-v1%3A0/converse",
        200,
        False,
    )
    assert provider.calls[0].request.model == MODEL


def test_converse_stream_is_served_as_event_stream_messages(provider):
    provider.reply("Sunny in Paris, 21 degrees.", usage={"input_tokens": 12, "output_tokens": 7})

    response = client_of(provider).converse_stream(modelId=MODEL, messages=QUESTION)
    events = list(response["stream"])

    text = "".join(
        e["contentBlockDelta"]["delta"].get("text", "") for e in events if "contentBlockDelta" in e
    )
    assert text == "Sunny in Paris, 21 degrees."
    assert [e["messageStop"]["stopReason"] for e in events if "messageStop" in e] == ["end_turn"]
    usage = [e["metadata"]["usage"] for e in events if "metadata" in e]
    assert [(u["inputTokens"], u["outputTokens"]) for u in usage] == [(12, 7)]
    assert provider.exchanges[0].streamed


def test_converse_stream_carries_a_tool_use(provider):
    provider.reply_tool_call("get_weather", city="Paris")

    events = list(
        client_of(provider).converse_stream(modelId=MODEL, messages=QUESTION, toolConfig=TOOLS)[
            "stream"
        ]
    )

    starts = [
        e["contentBlockStart"]["start"]["toolUse"] for e in events if "contentBlockStart" in e
    ]
    arguments = "".join(
        e["contentBlockDelta"]["delta"]["toolUse"]["input"]
        for e in events
        if "toolUse" in e.get("contentBlockDelta", {}).get("delta", {})
    )
    assert [start["name"] for start in starts] == ["get_weather"]
    assert json.loads(arguments) == {"city": "Paris"}


def anthropic_body(**extra: object) -> str:
    return json.dumps(
        {
            "anthropic_version": "bedrock-2023-05-31",
            "max_tokens": 100,
            "messages": [{"role": "user", "content": "Weather in Paris?"}],
            **extra,
        }
    )


def test_invoke_model_answers_in_the_anthropic_messages_format(provider):
    provider.reply_tool_call("get_weather", city="Paris")

    response = client_of(provider).invoke_model(modelId=MODEL, body=anthropic_body())
    reply = json.loads(response["body"].read())

    assert (reply["type"], reply["stop_reason"]) == ("message", "tool_use")
    (block,) = reply["content"]
    assert (block["type"], block["name"], block["input"]) == (
        "tool_use",
        "get_weather",
        {"city": "Paris"},
    )


def test_invoke_model_with_response_stream_sends_anthropic_events_in_chunks(provider):
    provider.reply("Sunny in Paris.")

    response = client_of(provider).invoke_model_with_response_stream(
        modelId=MODEL, body=anthropic_body()
    )
    events = [json.loads(item["chunk"]["bytes"]) for item in response["body"]]

    assert events[0]["type"] == "message_start"
    assert events[-1]["type"] == "message_stop"
    text = "".join(e["delta"].get("text", "") for e in events if e["type"] == "content_block_delta")
    assert text == "Sunny in Paris."


def test_invoke_model_with_another_models_body_is_a_validation_error(provider):
    provider.reply("unused")

    with pytest.raises(ClientError) as raised:
        client_of(provider).invoke_model(modelId="amazon.titan-text", body='{"inputText": "Hi"}')

    assert raised.value.response["Error"]["Code"] == "ValidationException"
    assert "anthropic_version" in raised.value.response["Error"]["Message"]


@pytest.mark.parametrize(
    ("status", "code"),
    [(400, "ValidationException"), (403, "AccessDeniedException"), (424, "ModelErrorException")],
)
def test_a_scripted_failure_is_raised_by_botocore_with_bedrocks_error_code(provider, status, code):
    provider.fail(status, "scripted failure")

    with pytest.raises(ClientError) as raised:
        client_of(provider).converse(modelId=MODEL, messages=QUESTION)

    error = raised.value.response
    assert (error["ResponseMetadata"]["HTTPStatusCode"], error["Error"]["Code"]) == (status, code)
    assert error["Error"]["Message"] == "scripted failure"
