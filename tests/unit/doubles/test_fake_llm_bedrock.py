"""Unit tests of FakeLLM answering Amazon Bedrock's API to ``boto3`` at the transport.

The ``bedrock-runtime`` client sends through ``urllib3``, whose requests the fake answers
in the process: Converse (JSON), ConverseStream (AWS event-stream messages), InvokeModel
and InvokeModelWithResponseStream with an Anthropic Messages body, and errors in Bedrock's
shape, which botocore raises as its ``ClientError``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from pytest_agentctx.doubles.fake_llm import PLACEHOLDER_KEYS, FakeLLM, missing_keys

MODEL = "us.anthropic.claude-3-5-haiku-20241022-v1:0"
QUESTION = [{"role": "user", "content": [{"text": "Weather in Paris?"}]}]
AWS_KEYS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE", "AWS_SESSION_TOKEN")


@pytest.fixture
def no_aws_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in AWS_KEYS:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def fake(no_aws_keys: None) -> Iterator[FakeLLM]:
    with FakeLLM() as started:
        yield started


def bedrock() -> Any:
    """A client built as agents build it: credentials from the environment (the fake's
    placeholders), no retries so a scripted failure is seen once."""
    return boto3.client(
        "bedrock-runtime", region_name="us-east-1", config=Config(retries={"total_max_attempts": 1})
    )


def test_converse_is_answered_with_a_tool_use_then_text(fake):
    fake.reply_tool_call("get_weather", city="Paris").reply("Sunny in Paris.")
    client = bedrock()

    first = client.converse(modelId=MODEL, messages=QUESTION)
    second = client.converse(modelId=MODEL, messages=QUESTION)

    (block,) = first["output"]["message"]["content"]
    assert (block["toolUse"]["name"], block["toolUse"]["input"]) == (
        "get_weather",
        {"city": "Paris"},
    )
    assert (second["output"]["message"]["content"], second["stopReason"]) == (
        [{"text": "Sunny in Paris."}],
        "end_turn",
    )
    assert [call.request.model for call in fake.calls] == [MODEL, MODEL]
    fake.verify()


def test_converse_stream_is_answered_with_event_stream_messages(fake):
    fake.reply("Sunny in Paris.", usage={"input_tokens": 9, "output_tokens": 4})

    events = list(bedrock().converse_stream(modelId=MODEL, messages=QUESTION)["stream"])

    text = "".join(
        e["contentBlockDelta"]["delta"].get("text", "") for e in events if "contentBlockDelta" in e
    )
    usage = [e["metadata"]["usage"] for e in events if "metadata" in e]
    assert (text, [(u["inputTokens"], u["outputTokens"]) for u in usage]) == (
        "Sunny in Paris.",
        [(9, 4)],
    )


def test_invoke_model_is_answered_in_the_anthropic_messages_format(fake):
    fake.reply("Sunny in Paris.")
    body = {
        "anthropic_version": "bedrock-2023-05-31",
        "max_tokens": 100,
        "messages": [{"role": "user", "content": "Weather in Paris?"}],
    }

    response = bedrock().invoke_model(modelId=MODEL, body=json.dumps(body))
    reply = json.loads(response["body"].read())

    assert (reply["content"], reply["stop_reason"]) == (
        [{"type": "text", "text": "Sunny in Paris."}],
        "end_turn",
    )
    assert fake.calls[0].wire_format == "bedrock"


def test_invoke_model_with_response_stream_is_answered_with_anthropic_chunks(fake):
    fake.reply_tool_call("get_weather", city="Paris")
    body = {
        "anthropic_version": "bedrock-2023-05-31",
        "max_tokens": 100,
        "messages": [{"role": "user", "content": "Weather in Paris?"}],
    }

    response = bedrock().invoke_model_with_response_stream(modelId=MODEL, body=json.dumps(body))
    events = [json.loads(item["chunk"]["bytes"]) for item in response["body"]]

    starts = [e["content_block"] for e in events if e["type"] == "content_block_start"]
    assert [(block["type"], block["name"]) for block in starts] == [("tool_use", "get_weather")]
    assert events[-1]["type"] == "message_stop"


def test_a_scripted_failure_is_a_client_error_with_bedrocks_code(fake):
    fake.fail(429, "slow down")

    with pytest.raises(ClientError) as raised:
        bedrock().converse(modelId=MODEL, messages=QUESTION)

    assert (raised.value.response["Error"]["Code"], raised.value.response["Error"]["Message"]) == (
        "ThrottlingException",
        "slow down",
    )


def test_a_call_beyond_the_script_is_a_validation_error(fake):
    with pytest.raises(ClientError) as raised:
        bedrock().converse(modelId=MODEL, messages=QUESTION)

    assert raised.value.response["Error"]["Code"] == "ValidationException"
    assert "was not scripted" in raised.value.response["Error"]["Message"]


def test_the_fake_gives_boto3_placeholder_credentials_and_takes_them_out(no_aws_keys):
    with FakeLLM():
        during = [os.environ.get("AWS_ACCESS_KEY_ID"), os.environ.get("AWS_SECRET_ACCESS_KEY")]

    assert during == [
        PLACEHOLDER_KEYS["AWS_ACCESS_KEY_ID"],
        PLACEHOLDER_KEYS["AWS_SECRET_ACCESS_KEY"],
    ]
    assert os.environ.get("AWS_ACCESS_KEY_ID") is None


@pytest.mark.parametrize("present", ["AWS_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"])
def test_no_aws_placeholder_beside_a_profile_or_half_a_pair(present):
    assert not {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} & set(missing_keys({present: "x"}))
